"""Single-process pure-Python baseline of the impact job: the same Parquet inventory read with pyarrow into
Python lists, then dicts and loops. Same semantics and the same pruning as the Spark job (only keys whose
inputs change, replicas only where per-broker values differ, partitions read only for those clusters), so
the comparison is engine against engine, not algorithm against algorithm. Computes the blast-radius counts
(clusters, brokers, topics, partitions, bytes; per key topics/partitions), not risk attribution.
Reading is included in its time, as the Spark job's time includes Spark reading the same files.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows
from reconciler.model import DEFAULT_ENTITY, REPLICATION_THROTTLE_KEYS


def _read(directory: Path, table: str, clusters: list[str], columns: list[str]) -> list[list[Any]]:
    import pyarrow.parquet as pq

    path = directory / table
    if not path.exists():
        return [[] for _ in columns]
    t = pq.read_table(path, columns=columns, filters=[("cluster", "in", clusters)])
    return [t.column(c).to_pylist() for c in columns]


def _norm(key: str, v: str | None, lists: frozenset[str]) -> Any:
    if v is None or key not in lists:
        return v
    return ",".join(sorted(i for i in v.split(",") if i))


def _or(override: str | None, inherited: Any) -> Any:
    return inherited if override is None else override


def _after(before: dict[tuple[str, str], dict[str, str]], after: AfterRows, entity_type: str,
           prunable: bool) -> dict[tuple[str, str], dict[str, str]]:
    policy = {c: (prune, set(ignore)) for c, prune, ignore in after.policies}
    declared = {(c, e) for c, t, e in after.declared if t == entity_type}
    desired: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for c, t, e, k, v in after.configs:
        if t == entity_type:
            desired[(c, e)][k] = v
    out: dict[tuple[str, str], dict[str, str]] = {}
    for ent, config in before.items():
        prune, ignore = policy[ent[0]]
        if ent not in declared:
            if not (prune and prunable):
                out[ent] = dict(config)
            continue
        kept = {k: v for k, v in config.items()
                if k in ignore or (k in REPLICATION_THROTTLE_KEYS and k not in desired.get(ent, {}))}
        out[ent] = kept
    for ent in declared:
        out.setdefault(ent, {}).update(desired.get(ent, {}))
    return out


def _effective(dyn: dict[tuple[str, str], dict[str, str]], static: dict[tuple[str, str], dict[str, str]],
               brokers: dict[str, list[int]]) -> dict[tuple[str, int, str], str]:
    """(cluster, broker, target) -> value for every target some layer sets (layer-major, synonym-minor)."""
    syn = {r[0]: r for r in K.synonym_rows()}
    best: dict[tuple[str, int, str], tuple[int, str]] = {}
    for layers, base in ((dyn, 0), (static, 2)):
        for (cluster, scope), config in layers.items():
            targets = brokers.get(cluster, []) if scope == DEFAULT_ENTITY else [int(scope)]
            layer = base + (1 if scope == DEFAULT_ENTITY else 0)
            for key, value in config.items():
                _, target, rank, factor, dynamic, _ = syn.get(key, (key, key, 0, 1, True, False))
                if layer < 2 and not dynamic:
                    continue
                if factor > 1:
                    with contextlib.suppress(ValueError):
                        value = str(int(value.strip()) * factor)
                for b in targets:
                    if b not in brokers.get(cluster, []):
                        continue
                    slot = (cluster, b, target)
                    if slot not in best or (layer * 100 + rank) < best[slot][0]:
                        best[slot] = (layer * 100 + rank, value)
    return {slot: v for slot, (_, v) in best.items()}


def run(inventory: Path, after: AfterRows) -> dict[str, Any]:
    clusters = list(after.clusters)
    info = {r[0]: r for r in K.key_rows()}
    lists = frozenset(K.list_keys())
    c, b = _read(inventory, "brokers", clusters, ["cluster", "broker"])
    brokers: dict[str, list[int]] = defaultdict(list)
    for cluster, broker in zip(c, b, strict=True):
        brokers[cluster].append(broker)
    cols = _read(inventory, "configs", clusters, ["cluster", "entity_type", "entity", "key", "value"])
    dyn_b: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    ovr_b: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for cluster, etype, entity, key, value in zip(*cols, strict=True):
        if etype == "brokers":
            dyn_b[(cluster, entity)][key] = value
        elif etype == "topics":
            ovr_b[(cluster, entity)][key] = value
    static_b: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for cluster, broker, key, value in zip(*_read(inventory, "static", clusters, ["cluster", "broker", "key", "value"]),
                                           strict=True):
        static_b[(cluster, broker)][key] = value
    static_a: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for cluster, broker, key, value in after.static:
        static_a[(cluster, broker)][key] = value
    eff_b = _effective(dyn_b, static_b, brokers)
    eff_a = _effective(_after(dyn_b, after, "brokers", True), static_a, brokers)

    # broker side per (cluster, key): changed? uniform?
    slots = set(eff_b) | set(eff_a)
    per_ck: dict[tuple[str, str], dict[int, tuple[Any, Any]]] = defaultdict(dict)
    hits: set[tuple[str, int, str]] = set()
    for cluster, key in {(s[0], s[2]) for s in slots}:
        default = info.get(key, (key, False, None, None, key))[3]
        for broker in brokers[cluster]:
            vb, va = eff_b.get((cluster, broker, key), default), eff_a.get((cluster, broker, key), default)
            per_ck[(cluster, key)][broker] = (vb, va)
            if _norm(key, vb, lists) != _norm(key, va, lists):
                hits.add((cluster, broker, key))
    topic_keys = {r[0] for r in K.key_rows() if r[1]}
    changed_ck = {ck for ck, m in per_ck.items() if ck[1] in topic_keys and any(
        _norm(ck[1], vb, lists) != _norm(ck[1], va, lists) for vb, va in m.values())}
    mixed = {ck for ck in changed_ck if len(set(per_ck[ck].values())) > 1}

    declared = {(cl, e) for cl, t, e in after.declared if t == "topics"}
    ovr_a = _after({k: v for k, v in ovr_b.items() if k in declared}, after, "topics", False)
    by_cluster_keys: dict[str, set[str]] = defaultdict(set)
    for cluster, key in changed_ck:
        by_cluster_keys[cluster].add(key)
    tc, tt, tp = _read(inventory, "topics", clusters, ["cluster", "topic", "partitions"])
    need_parts = {cl for cl, _ in mixed} | {cl for cl, _ in declared}
    replicas: dict[tuple[str, str], list[tuple[int, list[int]]]] = defaultdict(list)
    pc, pt, pp, pr = _read(inventory, "partitions", sorted(need_parts), ["cluster", "topic", "partition", "replicas"])
    for cluster, topic, part, reps in zip(pc, pt, pp, pr, strict=True):
        replicas[(cluster, topic)].append((part, reps))

    affected: dict[tuple[str, str], set[int] | None] = {}  # None = every partition
    per_key: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    topic_parts: dict[tuple[str, str], int] = {}
    for cluster, topic, parts in zip(tc, tt, tp, strict=True):
        ent = (cluster, topic)
        keys = set(by_cluster_keys.get(cluster, ()))
        if ent in declared:
            before_o, after_o = ovr_b.get(ent, {}), ovr_a.get(ent, {})
            keys |= {k for k in before_o.keys() | after_o.keys()
                     if _norm(k, before_o.get(k), lists) != _norm(k, after_o.get(k), lists)}
        if not keys:
            continue
        topic_parts[ent] = parts
        ob_all, oa_all = ovr_b.get(ent, {}), (ovr_a.get(ent, {}) if ent in declared else ovr_b.get(ent, {}))
        for key in keys:
            ob, oa = ob_all.get(key), oa_all.get(key)
            brokers_v = per_ck.get((cluster, key))
            default = info.get(key, (key, False, None, None, key))[3]
            if (cluster, key) not in mixed:
                vb, va = next(iter(brokers_v.values())) if brokers_v else (default, default)
                if _norm(key, _or(ob, vb), lists) == _norm(key, _or(oa, va), lists):
                    continue
                hit: set[int] | None = None
                count = parts
                if ent in declared and (cluster, key) not in changed_ck:
                    for _, reps in replicas[ent]:
                        hits.update((cluster, r, key) for r in reps)
            else:
                hit = set()
                for part, reps in replicas[ent]:
                    for r in reps:
                        if brokers_v is None or r not in brokers_v:
                            continue  # a replica on an unregistered broker: no broker value to compare
                        vb, va = brokers_v[r]
                        if _norm(key, _or(ob, vb), lists) != _norm(key, _or(oa, va), lists):
                            hit.add(part)
                            hits.add((cluster, r, key))
                if not hit:
                    continue
                count = len(hit)
            per_key[key][0] += 1
            per_key[key][1] += count
            prev = affected.get(ent, set())
            affected[ent] = None if hit is None or prev is None else prev | hit
    sizes: dict[tuple[str, str, int], int] = {}
    if (inventory / "sizes").exists():
        sc, st, sp, sb = _read(inventory, "sizes", clusters, ["cluster", "topic", "partition", "size_bytes"])
        sizes = {(a, t, p): n for a, t, p, n in zip(sc, st, sp, sb, strict=True) if (a, t) in affected}
    total_parts = sum(topic_parts[e] if s is None else len(s) for e, s in affected.items())
    total_bytes = None
    if (inventory / "sizes").exists():
        total_bytes = sum(n for (a, t, p), n in sizes.items() if affected[(a, t)] is None or p in affected[(a, t)])
    clusters_hit = {e[0] for e in affected} | {h[0] for h in hits}
    return {
        "clustersAffected": len(clusters_hit),
        "brokersAffected": len({(h[0], h[1]) for h in hits}),
        "topicsAffected": len(affected),
        "partitionsAffected": total_parts,
        "bytesAffected": total_bytes,
        "byKey": {k: {"topics": v[0], "partitions": v[1]} for k, v in sorted(per_key.items())},
    }
