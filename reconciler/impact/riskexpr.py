"""Risk rules (`reconciler.risk.RISK_RULES`, the plan's table) as Spark column expressions.

Which rules may rate a key is asked of `risk.rules_for_key` for each distinct changed key (a handful), so
listener prefixes and synonyms resolve exactly as in the plan; each rule's comparison kind becomes a column
expression over the effective values before and after, with risk.py's semantics:
  lowered/reduced, raised  numbers compared by magnitude (absent = unlimited; negative retention = infinite);
                           a value that is no number makes the rule fire when the values differ
  changed                  comma lists compared as sets        enabled   becomes `true`
  removed                  an entry of the list disappears or changes
  above_rf                 min.insync.replicas pushed above the replication factor (topic's, or for a
                           broker value the lowest in the cluster)
The any-key fallback rules rate a plan operation (`-`), which has no counterpart in effective values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from reconciler.model import RISK_ORDER
from reconciler.risk import NEGATIVE_MEANS_UNLIMITED, RISK_RULES, RiskRule, rule_key, rules_for_key

if TYPE_CHECKING:
    from pyspark.sql import Column

RULES: Mapping[str, RiskRule] = {r.id: r for r in RISK_RULES if r.keys}
_NUMERIC = ("lowered", "reduced", "raised")


def applicable(keys: Iterable[str]) -> dict[str, list[str]]:
    """key -> ids of the rules that may rate it (table order), from the plan's own lookup."""
    return {k: [r.id for r in rules_for_key(k) if r.keys] for k in sorted(set(keys))}


def _num(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.trim(c).try_cast("double")


def _items(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.filter(F.transform(F.split(F.coalesce(c, F.lit("")), ","), F.trim), lambda x: x != "")


def norm(c: Column) -> Column:
    """A comma list as a sorted set, as risk.py's `_norm`."""
    from pyspark.sql import functions as F

    return F.array_join(F.array_sort(_items(c)), ",")


def _magnitude(c: Column, rk: Column) -> Column:
    from pyspark.sql import functions as F

    n = _num(c)
    inf = F.lit(float("inf"))
    unlimited = sorted(k for k in NEGATIVE_MEANS_UNLIMITED)
    return F.when(c.isNull(), inf).when((n < 0) & rk.isin(unlimited), inf).otherwise(n)


def _kind(rule: RiskRule, rk: Column, before: Column, after: Column, rf: Column) -> Column:
    from pyspark.sql import functions as F

    differ = norm(before) != norm(after)
    if rule.kind in _NUMERIC:
        odd = (before.isNotNull() & _num(before).isNull()) | (after.isNotNull() & _num(after).isNull())
        old, new = _magnitude(before, rk), _magnitude(after, rk)
        moved = (new > old) if rule.kind == "raised" else (new < old)
        return F.when(odd, differ).otherwise(F.coalesce(moved, F.lit(False)))
    if rule.kind == "changed":
        return differ
    if rule.kind == "enabled":
        return (F.lower(norm(after)) == "true") & (F.lower(norm(before)) != "true")
    if rule.kind == "removed":
        return F.size(F.array_except(_items(before), _items(after))) > 0
    if rule.kind == "above_rf":
        wanted, floor = _num(after), F.coalesce(_num(before), F.lit(0.0))
        return F.coalesce(wanted.isNotNull() & (floor <= rf) & (rf < wanted), F.lit(False))
    raise ValueError(f"unknown rule kind {rule.kind}")


def fired(key: Column, before: Column, after: Column, rf: Column, rules_by_key: Mapping[str, list[str]]) -> Column:
    """ARRAY<STRING> of the ids of the rules that fire for this change (table order)."""
    from pyspark.sql import functions as F

    used = sorted({rid for ids in rules_by_key.values() for rid in ids}, key=list(RULES).index)
    if not used:
        return F.array().cast("array<string>")
    keys_of = {rid: sorted(k for k, ids in rules_by_key.items() if rid in ids) for rid in used}
    rk = F.lit(None).cast("string")  # rule_key for the NEGATIVE_MEANS_UNLIMITED test, resolved in Python
    rk_map = {k: rule_key(k) for k in rules_by_key}
    if rk_map:
        rk = F.coalesce(F.create_map(*[F.lit(x) for kv in rk_map.items() for x in kv])[key], key)
    hits = [
        F.when(key.isin(keys_of[rid]) & _kind(RULES[rid], rk, before, after, rf), F.lit(rid)) for rid in used
    ]
    return F.filter(F.array(*hits), lambda x: x.isNotNull())


def risk_of(rules: Column) -> Column:
    """The highest risk among fired rule ids; `safe` when none fired."""
    from pyspark.sql import functions as F

    expr = F.lit("safe")
    for level in sorted(set(RISK_ORDER) - {"safe"}, key=RISK_ORDER.__getitem__):
        ids = sorted(rid for rid, r in RULES.items() if r.risk == level)
        if ids:
            expr = F.when(F.arrays_overlap(rules, F.array(*[F.lit(i) for i in ids])), F.lit(level)).otherwise(expr)
    return expr
