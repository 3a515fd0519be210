"""Risk rules (`reconciler.risk.RISK_RULES`, the plan's table) as bit sets and the Spark expressions that read them.

The driver rates every candidate change with the plan's own rules (`candidates`); a set of fired rules travels
through Spark as a bit set (bit i = the i-th rule of RULES), which merges with `bit_or` in a plain hash
aggregate, where arrays would need Spark's object aggregate (sort-based past 128 groups a task). Risk travels as
its level (`RISK_ORDER`: safe 0, disruptive 1, destructive 2), which merges with `max`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from reconciler.model import RISK_ORDER
from reconciler.risk import RISK_RULES, RiskRule

if TYPE_CHECKING:
    from pyspark.sql import Column

RULES: Mapping[str, RiskRule] = {r.id: r for r in RISK_RULES if r.keys}


def risk_name(level: Column) -> Column:
    """A risk level back to its name (`RISK_ORDER`)."""
    from pyspark.sql import functions as F

    expr = F.lit("safe")
    for name, value in sorted(RISK_ORDER.items(), key=lambda kv: kv[1]):
        expr = F.when(level == value, F.lit(name)).otherwise(expr)
    return expr


def mask_of(rule_ids: Iterable[str]) -> int:
    """Rule ids as a bit set (bit i = the i-th rule of RULES)."""
    order = list(RULES)
    return sum(1 << order.index(rid) for rid in set(rule_ids))


def rules_of(mask: int | None) -> list[str]:
    """The rule ids of a bit set, in table order (`mask_of`'s inverse, on the driver)."""
    return [rid for i, rid in enumerate(RULES) if (mask or 0) >> i & 1]


def rules_of_mask(mask: Column) -> Column:
    """The rule ids of a bit set, in table order (`mask_of`'s inverse, in Spark)."""
    from pyspark.sql import functions as F

    hits = [F.when(mask.bitwiseAND(F.lit(1 << i)) != 0, F.lit(rid)) for i, rid in enumerate(RULES)]
    return F.filter(F.array(*hits), lambda x: x.isNotNull())
