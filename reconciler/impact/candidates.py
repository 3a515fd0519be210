"""The driver's half of the topic side: for every topic the job looks at, the keys whose effective value may
change, each already resolved down to what only the topic's own data can still decide. Pure Python.

Effective value of topic key k on broker b (KIP-226 precedence, `LogConfig` over the broker's `KafkaConfig`):
the topic's override of k if it has one, else the broker-side value of k on b (`brokerside`, Kafka's default
included). An undeclared topic keeps its overrides (apply never touches it), so an override shields it: its
value changes only where it has none and the broker side of k changes. A declared topic's overrides before
(the first query's `declared_live`) and after (the manifests, `overrides`) are known here. So every value a
topic row can hold, before and after, is known on the driver, and so is its risk (the plan's own rules,
`reconciler.risk.fired_rules`): Spark never compares or rates a value. What is left for Spark, per topic:
  - uniform keys (every broker of the cluster has the same value before and the same after): the change hits
    the whole topic unless an override shields it;
  - mixed keys: the partitions with a replica on a broker whose value changes (`hb`), shown on the lowest such
    broker, rated as the union of those brokers' rules.
Candidates for undeclared topics are per cluster (`by_cluster`), for declared topics per topic (`by_topic`,
complete: Spark uses them instead of the cluster's). Sizes stay bounded by what the driver holds anyway (the
broker side and the manifests), whatever the number of topics: there is no fleet-wide product of values.
A rating depends on the replication factor only for `above_rf` rules; those keys carry one rating per
replication factor found in the cluster (`rrf`, -1 for an unknown one), the others one rating under -1.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.brokerside import BrokerSide, risk_of, same
from reconciler.impact.overrides import DeclaredOverrides
from reconciler.impact.riskexpr import mask_of
from reconciler.model import RISK_ORDER
from reconciler.risk import fired_rules, rules_for_key

NO_RF = -1
_RATING = "ARRAY<STRUCT<mask: BIGINT, level: INT>>"
CAND_DDL = (f"STRUCT<key: STRING, idx: INT, src: STRING, uniform: BOOLEAN, changed: BOOLEAN, own: BOOLEAN, "
            f"vb: STRING, va: STRING, rrf: ARRAY<INT>, rv: {_RATING}, hb: ARRAY<INT>, "
            f"hv: ARRAY<STRUCT<vb: STRING, va: STRING, rrf: ARRAY<INT>, rv: {_RATING}>>>")
Cand = dict[str, Any]


@dataclass
class Candidates:
    by_cluster: dict[str, list[Cand]] = field(default_factory=dict)  # undeclared topics of the cluster
    by_topic: dict[tuple[str, str], list[Cand]] = field(default_factory=dict)  # every declared topic
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (cluster, key) of by_cluster: shields to read
    replica_clusters: list[str] = field(default_factory=list)  # a mixed key hits some broker: replicas needed
    replica_topics: list[tuple[str, str]] = field(default_factory=list)  # declared topics elsewhere needing them

    def __len__(self) -> int:
        return sum(map(len, self.by_cluster.values())) + sum(map(len, self.by_topic.values()))


@functools.cache
def rf_keys() -> frozenset[str]:
    """Topic keys whose rating depends on the replication factor."""
    return frozenset(k for k in K.topic_keys() if any(r.kind == "above_rf" and r.keys for r in rules_for_key(k)))


@functools.cache
def key_index() -> dict[str, int]:
    """Topic key -> its bit in a topic's shield mask (36 keys: a BIGINT holds them)."""
    return {k: i for i, k in enumerate(K.topic_keys())}


@functools.cache
def _rate(key: str, before: str | None, after: str | None, rf: int | None) -> dict[str, int]:
    rules = fired_rules(key, before, after, topic=True, rf=rf)
    return {"mask": mask_of(rules), "level": RISK_ORDER[risk_of(rules)]}


def _rating(key: str, before: str | None, after: str | None, rfs: Iterable[int]) -> dict[str, list[Any]]:
    """`rrf`/`rv`: the rating of the pair for each replication factor it depends on."""
    by_rf = [NO_RF, *sorted(set(rfs))] if key in rf_keys() else [NO_RF]
    return {"rrf": by_rf, "rv": [_rate(key, before, after, None if rf == NO_RF else rf) for rf in by_rf]}


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v is not None), None)


def _cand(key: str, src: str, uniform_values: tuple[str | None, str | None] | None,
          per_broker: Mapping[int, tuple[str | None, str | None]], rfs: Iterable[int], *, idx: int) -> Cand:
    """One candidate: uniform when `uniform_values` is given, else per broker (only brokers where it changes)."""
    is_list = key in K.list_keys()
    cand: Cand = {"key": key, "idx": idx, "src": src, "uniform": uniform_values is not None, "changed": False,
                  "own": False, "vb": None, "va": None, "rrf": [], "rv": [], "hb": [], "hv": []}
    if uniform_values is not None:
        vb, va = uniform_values
        cand |= {"vb": vb, "va": va, "changed": not same(vb, va, is_list)}
        if cand["changed"]:
            cand |= _rating(key, vb, va, rfs)
        return cand
    for b in sorted(per_broker):
        vb, va = per_broker[b]
        if not same(vb, va, is_list):
            cand["hb"].append(b)
            cand["hv"].append({"vb": vb, "va": va, **_rating(key, vb, va, rfs)})
    return cand


def _broker_facts(bs: BrokerSide, cluster: str, key: str, default: str | None
                  ) -> tuple[bool, bool, str | None, str | None]:
    """(uniform across brokers, changed anywhere, before, after) of a topic key's broker side; a key no layer
    sets is Kafka's default on every broker, before and after."""
    return bs.topic_keys.get((cluster, key), (True, False, default, default))


def _hits(cand: Cand) -> bool:
    return bool(cand["changed"] or cand["hb"])


def candidates(bs: BrokerSide, decl: DeclaredOverrides, clusters: Iterable[str], rfs: Mapping[str, set[int]],
               *, full: bool = False) -> Candidates:
    """Every cluster's candidates (the keys changed at its broker side, or with `full` every topic key) and
    every declared topic's (those keys plus its own override changes)."""
    defaults = {r[0]: r[3] for r in K.key_rows() if r[1]}
    per_broker: dict[tuple[str, str], dict[int, tuple[str | None, str | None]]] = {}
    for (c, b, k), values in bs.values.items():
        per_broker.setdefault((c, k), {})[b] = values
    changed_keys: dict[str, list[str]] = {}
    for c, k, *_ in bs.changed_pairs():
        changed_keys.setdefault(c, []).append(k)
    out = Candidates()
    covered: dict[str, list[str]] = {}
    for c in clusters:
        covered[c] = list(K.topic_keys()) if full else changed_keys.get(c, [])
        out.by_cluster[c] = []
        for k in covered[c]:
            uniform, broker_changed, vb, va = _broker_facts(bs, c, k, defaults[k])
            cand = _cand(k, "broker" if broker_changed else "override", (vb, va) if uniform else None,
                         per_broker.get((c, k), {}), rfs.get(c, set()), idx=key_index()[k])
            if full or _hits(cand):
                out.by_cluster[c].append(cand)
                out.pairs.append((c, k))
    out.by_topic = _declared(bs, decl, covered, per_broker, rfs, defaults, full)
    mixed = {c for c, cands in out.by_cluster.items() if any(cand["hb"] for cand in cands)}
    out.replica_clusters = sorted(mixed)
    out.replica_topics = sorted(ct for ct, cands in out.by_topic.items() if ct[0] not in mixed
                                and any(cand["hb"] or cand["own"] for cand in cands))
    return out


def _declared(bs: BrokerSide, decl: DeclaredOverrides, covered: Mapping[str, list[str]],
              per_broker: Mapping[tuple[str, str], Mapping[int, tuple[str | None, str | None]]],
              rfs: Mapping[str, set[int]], defaults: Mapping[str, str | None],
              full: bool) -> dict[tuple[str, str], list[Cand]]:
    """A declared topic's candidates: its overrides before and after applied to every broker-side value."""
    live: dict[tuple[str, str], dict[str, str | None]] = {t: {} for t in decl.topics}
    after: dict[tuple[str, str], dict[str, str | None]] = {t: {} for t in decl.topics}
    own: dict[tuple[str, str], set[str]] = {t: set() for t in decl.topics}  # keys whose override changes
    for c, t, k, ob, _oa in decl.changed:
        live.setdefault((c, t), {})[k] = ob
        own.setdefault((c, t), set()).add(k)
    for c, t, k, v in decl.after_values:
        after.setdefault((c, t), {})[k] = v
    out: dict[tuple[str, str], list[Cand]] = {}
    for (c, t), keys in own.items():
        cands = []
        for k in sorted(set(covered.get(c, [])) | keys):
            if k not in defaults:
                continue  # not a topic config Kafka knows: no effective value to change
            ob = live[(c, t)].get(k, after[(c, t)].get(k))  # unchanged overrides are the same after
            oa = after[(c, t)].get(k)
            uniform, broker_changed, vb, va = _broker_facts(bs, c, k, defaults[k])
            src = "broker" if broker_changed else "override"
            if uniform:
                cand = _cand(k, src, (_first(ob, vb), _first(oa, va)), {}, rfs.get(c, set()), idx=-1)
                cand["own"] = cand["changed"] and not broker_changed  # its hosts count as hit brokers
            else:
                brokers = {b: (_first(ob, x), _first(oa, y)) for b, (x, y) in per_broker.get((c, k), {}).items()}
                cand = _cand(k, src, None, brokers, rfs.get(c, set()), idx=-1)
            if full or _hits(cand):
                cands.append(cand)
        out[(c, t)] = cands
    return out
