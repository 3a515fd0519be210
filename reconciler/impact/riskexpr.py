"""Risk rules (`reconciler.risk.RISK_RULES`, the plan's table) as Spark column expressions.

Which rules may rate a key is asked of `risk.rules_for_key` for each distinct changed key (a handful), so
listener prefixes and synonyms resolve exactly as in the plan; each rule's comparison kind becomes a column
expression over the effective values before and after, with `reconciler.risk`'s semantics:
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
    from pyspark.sql import Column, DataFrame

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
    """A comma list as a sorted set, as `reconciler.risk`'s `_norm` (the lambda path only for values with a comma:
    higher-order functions are interpreted, and most values are single numbers)."""
    from pyspark.sql import functions as F

    single = F.coalesce(F.trim(c), F.lit(""))
    return F.when(F.coalesce(c.contains(","), F.lit(False)), F.array_join(F.array_sort(_items(c)), ",")).otherwise(
        single)


def _magnitude(c: Column, n: Column, rk: Column) -> Column:
    from pyspark.sql import functions as F

    inf = F.lit(float("inf"))
    unlimited = sorted(NEGATIVE_MEANS_UNLIMITED)
    return F.when(c.isNull(), inf).when((n < 0) & rk.isin(unlimited), inf).otherwise(n)


def _kind(rule: RiskRule) -> Column:
    """The rule's comparison over the helper columns `with_rules` adds (no expression is repeated: Spark
    inlines column expressions, and nested repeats grow plans exponentially)."""
    from pyspark.sql import functions as F

    col = F.col
    if rule.kind in _NUMERIC:
        odd = (col("_b").isNotNull() & col("_bn").isNull()) | (col("_a").isNotNull() & col("_an").isNull())
        moved = (col("_am") > col("_bm")) if rule.kind == "raised" else (col("_am") < col("_bm"))
        return F.when(odd, col("_differ")).otherwise(F.coalesce(moved, F.lit(False)))
    if rule.kind == "changed":
        return col("_differ")
    if rule.kind == "enabled":
        return (F.lower(col("_anorm")) == "true") & (F.lower(col("_bnorm")) != "true")
    if rule.kind == "removed":
        return F.size(F.array_except(_items(col("_b")), _items(col("_a")))) > 0
    if rule.kind == "above_rf":
        floor, rf = F.coalesce(col("_bn"), F.lit(0.0)), col("_rf")
        return F.coalesce(col("_an").isNotNull() & (floor <= rf) & (rf < col("_an")), F.lit(False))
    raise ValueError(f"unknown rule kind {rule.kind}")


def with_rules(df: DataFrame, key: str, before: str, after: str, rf: str | None,
               rules_by_key: Mapping[str, list[str]]) -> DataFrame:
    """`df` plus `rules` (ARRAY<STRING>: ids of the rules that fire, table order) and `risk`."""
    from pyspark.sql import functions as F

    used = sorted({rid for ids in rules_by_key.values() for rid in ids}, key=list(RULES).index)
    if not used:
        return df.withColumn("rules", F.array().cast("array<string>")).withColumn("risk", F.lit("safe"))
    keys_of = {rid: sorted(k for k, ids in rules_by_key.items() if rid in ids) for rid in used}
    rk_map = F.create_map(*[F.lit(x) for k in rules_by_key for x in (k, rule_key(k))])
    helpers = df.select(
        "*",
        F.col(before).alias("_b"), F.col(after).alias("_a"),
        (F.col(rf) if rf else F.lit(None)).cast("double").alias("_rf"),
        F.coalesce(rk_map[F.col(key)], F.col(key)).alias("_rk"),
        _num(F.col(before)).alias("_bn"), _num(F.col(after)).alias("_an"),
        norm(F.col(before)).alias("_bnorm"), norm(F.col(after)).alias("_anorm"),
    )
    helpers = helpers.select(
        "*",
        (F.col("_bnorm") != F.col("_anorm")).alias("_differ"),
        _magnitude(F.col("_b"), F.col("_bn"), F.col("_rk")).alias("_bm"),
        _magnitude(F.col("_a"), F.col("_an"), F.col("_rk")).alias("_am"),
    )
    hits = [F.when(F.col(key).isin(keys_of[rid]) & _kind(RULES[rid]), F.lit(rid)) for rid in used]
    out = helpers.withColumn("rules", F.filter(F.array(*hits), lambda x: x.isNotNull()))
    out = out.drop("_b", "_a", "_rf", "_rk", "_bn", "_an", "_bnorm", "_anorm", "_differ", "_bm", "_am")
    return with_risk(out)


def risk_of(rules: Column) -> Column:
    """The highest risk among fired rule ids; `safe` when none fired."""
    from pyspark.sql import functions as F

    expr = F.lit("safe")
    for level in sorted(set(RISK_ORDER) - {"safe"}, key=RISK_ORDER.__getitem__):
        ids = sorted(rid for rid, r in RULES.items() if r.risk == level)
        if ids:
            expr = F.when(F.arrays_overlap(rules, F.array(*[F.lit(i) for i in ids])), F.lit(level)).otherwise(expr)
    return expr


def with_risk(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return df.withColumn("risk", risk_of(F.col("rules")))


def severity(risk: Column) -> Column:
    """A risk name as its level (`RISK_ORDER`): safe 0, disruptive 1, destructive 2."""
    from pyspark.sql import functions as F

    expr = F.lit(0)
    for name, level in RISK_ORDER.items():
        expr = F.when(risk == name, F.lit(level)).otherwise(expr)
    return expr


def risk_name(level: Column) -> Column:
    """A level back to its risk name (`severity`'s inverse)."""
    from pyspark.sql import functions as F

    expr = F.lit("safe")
    for name, value in sorted(RISK_ORDER.items(), key=lambda kv: kv[1]):
        expr = F.when(level == value, F.lit(name)).otherwise(expr)
    return expr


def mask_of(rule_ids: Iterable[str]) -> int:
    """Rule ids as a bit set (bit i = the i-th rule of RULES): sets merge with `bit_or`, a plain hash aggregate,
    where arrays would need Spark's object aggregate (sort-based past 128 groups a task)."""
    order = list(RULES)
    return sum(1 << order.index(rid) for rid in set(rule_ids))


def rules_of(mask: int | None) -> list[str]:
    """The rule ids of a bit set, in table order (`mask_of`'s inverse, on the driver)."""
    return [rid for i, rid in enumerate(RULES) if (mask or 0) >> i & 1]


def rule_mask(rules: Column) -> Column:
    """`mask_of` as a column expression, for rows rated in Spark."""
    from pyspark.sql import functions as F

    mask = F.lit(0).cast("long")
    for i, rid in enumerate(RULES):
        mask = mask.bitwiseOR(F.when(F.array_contains(rules, rid), F.lit(1 << i)).otherwise(F.lit(0)).cast("long"))
    return mask


def rules_of_mask(mask: Column) -> Column:
    """The rule ids of a bit set, in table order (`mask_of`'s inverse)."""
    from pyspark.sql import functions as F

    hits = [F.when(mask.bitwiseAND(F.lit(1 << i)) != 0, F.lit(rid)) for i, rid in enumerate(RULES)]
    return F.filter(F.array(*hits), lambda x: x.isNotNull())
