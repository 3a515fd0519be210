"""Effective broker-side values before and after, resolved on the driver: Kafka's precedence below the topic
override, for the few thousand broker rows of a fleet (registered brokers, their dynamic configs, the static
files). Spark would spend tens of small jobs on tables this size; Python resolves them in milliseconds.

For every registered broker and every effective key that any layer of its cluster sets (before or after), the
value is the first found, layer-major then synonym-minor (ground truth §5: each overlay first removes the
synonyms of the keys it sets, so a dynamic `log.retention.ms` beats a static `log.retention.hours`):
  0 dynamic per-broker (/config/brokers/<id>)   1 dynamic cluster default (/config/brokers/<default>)
  2 static server.properties of the broker     3 static `<default>` file of the manifests    then Kafka's default
Read-only synonyms in a dynamic layer are ignored, as brokers do (`DynamicBrokerConfig.validateConfigs` refuses
them and `DynamicBrokerConfig.updateBrokerConfig` skips what it cannot apply). Keys no layer sets on either side
keep Kafka's default on both: they cannot change, so they are not materialised.

What apply leaves (after) follows the plan's ownership rules (`reconciler.diff`): a declared broker entity's config
becomes the declared one, except `policy.ignoreKeys` and the replication throttles (kept unless declared);
undeclared entities stay unless `policy.prune` removes them. Pure Python.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows, after_apply
from reconciler.model import DEFAULT_ENTITY, EntityRef
from reconciler.risk import assess, fired_rules

Row = tuple[Any, ...]
Values = tuple[str | None, str | None]  # (before, after)


def same(a: str | None, b: str | None, is_list: bool) -> bool:
    """Equality of two effective values; LIST values as sets (as `job._same` in Spark)."""
    if not is_list or a is None or b is None:
        return a == b
    return _norm(a) == _norm(b)


def _norm(value: str) -> str:
    return ",".join(sorted(i for i in (x.strip() for x in value.split(",")) if i)) if "," in value else value.strip()


@dataclass
class BrokerSide:
    """Per (cluster, broker, effective key): values before/after; and what shapes the topic side."""

    values: dict[tuple[str, int, str], Values] = field(default_factory=dict)
    # per (cluster, topic key) set in some layer: (uniform across brokers, changed anywhere, before, after)
    topic_keys: dict[tuple[str, str], tuple[bool, bool, str | None, str | None]] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)  # changed: (cluster, broker, key, topic_key, before, after,
    #                                                          rules, risk, reasons)

    def changed_pairs(self) -> list[tuple[str, str, bool, str | None, str | None]]:
        return [(c, k, u, vb, va) for (c, k), (u, ch, vb, va) in sorted(self.topic_keys.items()) if ch]

    def mixed_values(self) -> list[Row]:
        """Per-broker values of the (cluster, topic key) pairs that differ between brokers."""
        mixed = {ck for ck, (uniform, *_rest) in self.topic_keys.items() if not uniform}
        return [(c, b, k, vb, va) for (c, b, k), (vb, va) in sorted(self.values.items()) if (c, k) in mixed]

    def hits(self) -> set[tuple[str, str, int]]:
        """(cluster, effective key, broker) where the broker's own value changes."""
        return {(r[0], r[3] or r[2], r[1]) for r in self.rows}


def _layered(dynamic: list[Row], static: list[Row]) -> dict[str, list[tuple[str, int, str, str]]]:
    """cluster -> [(scope, prio, target, value)]: synonyms resolved, read-only dynamic keys dropped."""
    syn = {r[0]: r for r in K.synonym_rows()}  # broker_key -> (broker_key, target, rank, factor, dynamic, is_topic)
    out: dict[str, list[tuple[str, int, str, str]]] = defaultdict(list)
    for base, rows in ((0, dynamic), (2, static)):
        for c, scope, key, value in rows:
            _, target, rank, factor, dynamic_ok, _ = syn.get(key, (key, key, 0, 1, True, False))
            layer = base + (scope == DEFAULT_ENTITY)
            if not dynamic_ok and layer < 2:
                continue
            if factor > 1 and value is not None:
                value = _scaled(value, factor)
            out[c].append((scope, layer * 100 + rank, target, value))
    return out


def _scaled(value: str, factor: int) -> str:
    """`log.retention.hours=72` as milliseconds (a value that is no whole number stays as it is)."""
    try:
        return str(int(value.strip()) * factor)
    except ValueError:
        return value


def _resolve(rows: list[tuple[str, int, str, str]], broker: int) -> dict[str, str]:
    """target -> value in effect on `broker` (lowest prio wins), from the cluster's layered rows."""
    best: dict[str, tuple[int, str]] = {}
    own = str(broker)
    for scope, prio, target, value in rows:
        if scope != DEFAULT_ENTITY and scope != own:
            continue
        if target not in best or prio < best[target][0]:
            best[target] = (prio, value)
    return {t: v for t, (_, v) in best.items()}


@functools.cache
def _assess(key: str, before: str | None, after: str | None, min_rf: int | None) -> tuple[str, tuple[str, ...]]:
    """The plan's risk and reasons of a broker's effective value changing (its broker key, as a plan shows it;
    assess reads only the entity's type)."""
    return assess(key, "~", before, after, entity=EntityRef("brokers", DEFAULT_ENTITY), min_rf_in_cluster=min_rf)


def broker_side(brokers: list[tuple[str, int]], dynamic: list[Row], static: list[Row], after: AfterRows,
                min_rf: Mapping[str, int | None]) -> BrokerSide:
    """Resolve every registered broker's effective values before and after, rate the changed ones."""
    info = {r[0]: r for r in K.key_rows()}  # target -> (target, is_topic, type, default, broker_key)
    before_l = _layered(dynamic, static)
    after_dyn = [(*cek, v) for cek, v in after_apply(dynamic, after, "brokers", prunable=True).items()]
    after_l = _layered(after_dyn, [tuple(r) for r in after.static])
    regs: dict[str, list[int]] = defaultdict(list)
    for c, b in brokers:
        regs[c].append(b)
    out = BrokerSide()
    states: dict[tuple[str, str], set[Values]] = defaultdict(set)
    for c in sorted(regs):
        rows_b, rows_a = before_l.get(c, []), after_l.get(c, [])
        targets = {r[2] for r in rows_b} | {r[2] for r in rows_a}
        for b in sorted(regs[c]):
            vb_all, va_all = _resolve(rows_b, b), _resolve(rows_a, b)
            for t in sorted(targets):
                _, is_topic, typ, default, broker_key = info.get(t, (t, False, "STRING", None, t))
                vb, va = vb_all.get(t, default), va_all.get(t, default)
                out.values[(c, b, t)] = (vb, va)
                if is_topic:
                    states[(c, t)].add((vb, va))
                if not same(vb, va, typ == "LIST"):
                    rules = fired_rules(t, vb, va, topic=False, rf=min_rf.get(c))
                    risk, reasons = _assess(broker_key, vb, va, min_rf.get(c))
                    out.rows.append((c, b, broker_key, t if is_topic else None, vb, va, list(rules), risk,
                                     list(reasons)))
    for (c, t), seen in states.items():
        vb, va = next(iter(sorted(seen, key=repr)))
        changed = any(not same(x, y, t in K.list_keys()) for x, y in seen)
        out.topic_keys[(c, t)] = (len(seen) == 1, changed, vb, va)
    return out
