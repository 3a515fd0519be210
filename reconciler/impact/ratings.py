"""Risk of topic value changes, rated once per distinct (key, before, after, replication factor) on the driver
with the plan's own rules (`reconciler.risk.fired_rules`), then joined to the job's rows as a broadcast table.

A fleet has millions of changed (topic, key) rows but only a few hundred distinct value pairs: every effective
value before is a topic override, a broker-side value or Kafka's default, and after an override of a declared
topic, a broker-side value or the default. The driver knows all of those before the big query runs: the
broker-side values (`brokerside`), the manifests' overrides, and (one small collect) the distinct live
overrides of declared topics; undeclared topics keep their overrides, so theirs never change. The product of
those sets per (cluster, key) covers every pair a row can hold. Only keys rated against the replication
factor (`above_rf`) are expanded by the fleet's replication factors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows
from reconciler.impact.brokerside import BrokerSide, risk_of, same
from reconciler.impact.riskexpr import mask_of
from reconciler.risk import fired_rules, rules_for_key

RATED_SCHEMA = "key STRING, _bk STRING, _ak STRING, _rk INT, rules ARRAY<STRING>, mask BIGINT, risk STRING"
NULL = "\u0000"  # a null value in a join key (joins never match nulls)
NO_RF = -1
LIMIT = 200_000  # beyond this many pairs the job rates each row with Spark expressions instead


def rf_keys() -> list[str]:
    """Topic keys whose rating depends on the replication factor."""
    return [k for k in K.topic_keys() if any(r.kind == "above_rf" and r.keys for r in rules_for_key(k))]


def _value_sets(bs: BrokerSide, declared_live: Iterable[tuple[Any, ...]], after: AfterRows
                ) -> tuple[dict[tuple[str, str], set[str | None]], dict[tuple[str, str], set[str | None]]]:
    before: dict[tuple[str, str], set[str | None]] = defaultdict(set)
    after_v: dict[tuple[str, str], set[str | None]] = defaultdict(set)
    for (c, _b, k), (vb, va) in bs.values.items():
        before[(c, k)].add(vb)
        after_v[(c, k)].add(va)
    for c, _t, k, v in declared_live:
        before[(c, k)].add(v)
    for c, t, _e, k, v in after.configs:
        if t == "topics":
            after_v[(c, k)].add(v)
    return before, after_v


def rated_rows(bs: BrokerSide, declared_live: Iterable[tuple[Any, ...]], after: AfterRows,
               rfs: Iterable[int]) -> list[tuple[Any, ...]] | None:
    """Rows of RATED_SCHEMA for every changed value pair a topic row can hold; None if there are too many."""
    info = {r[0]: r for r in K.key_rows() if r[1]}
    before, after_v = _value_sets(bs, declared_live, after)
    pairs: set[tuple[str, str | None, str | None]] = set()
    for ck in set(before) | set(after_v):
        key = ck[1]
        if key not in info:
            continue
        default, is_list = info[key][3], info[key][2] == "LIST"
        for b in before.get(ck, set()) | {default}:
            for a in after_v.get(ck, set()) | {default}:
                if not same(b, a, is_list):
                    pairs.add((key, b, a))
    by_rf = set(rf_keys())
    with_rf: list[int | None] = [None, *sorted(set(rfs))]
    if sum(len(with_rf) if k in by_rf else 1 for k, _, _ in pairs) > LIMIT:
        return None
    out = []
    for key, b, a in sorted(pairs, key=repr):
        for rf in with_rf if key in by_rf else [None]:
            rules = fired_rules(key, b, a, topic=True, rf=rf)
            out.append((key, NULL if b is None else b, NULL if a is None else a, NO_RF if rf is None else rf,
                        list(rules), mask_of(rules), risk_of(rules)))
    return out
