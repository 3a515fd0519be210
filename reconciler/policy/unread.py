"""`maxUnreadLoss`: at most N records a consumer group has not read may a change make eligible for deletion (PURE).

Judged where consumer offsets are known, over the impact's consumers at risk (`impact/consumers.py`, the arithmetic
of `reconciler.unread`): per (cluster, topic) selected by the policy, the group that would lose the most, by the
upper end of its count (a range where the new retention's offset was bracketed: the rule takes no chance). One
violation per topic and rule, at the manifest line of the value that lowers the retention (`where`), naming the
group, its count and how many others lose records; exceptions (`topics/NAME`) waive it as for every rule.
`plan` alone cannot judge it (no offsets): `policy.evaluate` leaves the check to this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import date
from typing import Any

from reconciler.model import SourceRef
from reconciler.policy.evaluate import Violation, _lapsed, _waiver, cluster_selected, entity_selected
from reconciler.policy.model import PolicySet, Rule

CHECK = "maxUnreadLoss"


def unread_rules(policies: PolicySet) -> list[Rule]:
    return [r for p in policies.policies for r in p.rules if r.check == CHECK]


def threshold(policies: PolicySet) -> int | None:
    """The lowest limit of any maxUnreadLoss rule (rows above it are the only ones that can break one)."""
    limits = [int(r.limit) for r in unread_rules(policies) if r.limit is not None]
    return min(limits) if limits else None


def unread_violations(policies: PolicySet, labels: Mapping[str, Mapping[str, str]], rows: Iterable[Mapping[str, Any]],
                      where: Callable[[str, str], SourceRef | None], today: date) -> list[Violation]:
    """`rows`: (cluster, topic, group, records: [fewest, most]) of the groups at risk."""
    by_topic: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        by_topic.setdefault((str(row["cluster"]), str(row["topic"])), []).append(row)
    found: list[Violation] = []
    for policy in policies.policies:
        rules = [r for r in policy.rules if r.check == CHECK and r.limit is not None]
        if not rules:
            continue
        for (cluster, topic), groups in sorted(by_topic.items()):
            if not (cluster_selected(policy.selector, policy, cluster, labels.get(cluster, {}))
                    and entity_selected(policy.selector, "topics", topic)):
                continue
            entity = f"topics/{topic}"
            worst = sorted(groups, key=lambda g: (-int(g["records"][1]), str(g["group"])))
            for rule in rules:
                limit = int(rule.limit or 0)
                over = [g for g in worst if int(g["records"][1]) > limit]
                if not over or _waiver(policy, rule, cluster, entity, today):
                    continue
                first = over[0]
                low, high = int(first["records"][0]), int(first["records"][1])
                count = f"{high:,}" if low == high else f"up to {high:,} ({low:,}–{high:,})"
                others = f" (and {len(over) - 1} more group(s) over it)" if len(over) > 1 else ""
                detail = (f"consumer group {first['group']!r} would lose {count} records it has not read{others}, "
                          f"more than {limit:,}")
                found.append(Violation(policy, rule, cluster, entity, detail, where(cluster, topic),
                                       lapsed=_lapsed(policy, rule, cluster, entity, today)))
    return found
