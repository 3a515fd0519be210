"""A pull request that edits policies: which it changes, and what its versions would newly flag (PURE).

The PR is judged by the base revision's policies (gitops/prmode.py); its comment says which policies the head
changes and runs the head's versions over the fleet's manifests, listing the violations they would add. The
fleet-wide figure over live state is the impact report's (impact/policy_counts.py, in Spark).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from reconciler.model import SourceRef
from reconciler.policy.evaluate import Violation, violations
from reconciler.policy.model import PolicyDoc, PolicySet
from reconciler.policy.views import ClusterView

_NOWHERE = SourceRef("", 0)
SHOWN = 30  # newly flagged violations listed in the comment


def _shape(policy: PolicyDoc) -> PolicyDoc:
    """A policy without the positions of its parts: moving lines is no change."""
    return replace(
        policy, source=_NOWHERE, selector=replace(policy.selector, source=None),
        rules=tuple(replace(r, source=_NOWHERE) for r in policy.rules),
        exceptions=tuple(replace(e, source=_NOWHERE) for e in policy.exceptions))


@dataclass(frozen=True)
class PolicyChange:
    name: str
    what: str  # "added", "removed", "changed"
    source: SourceRef | None  # where the head has it (None: removed)


def changed_policies(base: PolicySet, head: PolicySet) -> list[PolicyChange]:
    old, new = base.by_name(), head.by_name()
    out: list[PolicyChange] = []
    for name in sorted(old.keys() | new.keys()):
        if name not in new:
            out.append(PolicyChange(name, "removed", None))
        elif name not in old:
            out.append(PolicyChange(name, "added", new[name].source))
        elif _shape(old[name]) != _shape(new[name]):
            out.append(PolicyChange(name, "changed", new[name].source))
    return out


def newly_flagged(base: PolicySet, head: PolicySet, views: Sequence[ClusterView], today: date) -> list[Violation]:
    """Violations the head's policies find in `views` that the base's do not (same cluster, entity, policy,
    rule), over the changed policies only."""
    return _difference(base, head, views, today)


def no_longer_flagged(base: PolicySet, head: PolicySet, views: Sequence[ClusterView], today: date
                      ) -> list[Violation]:
    """Violations the base's policies find that the head's would let pass (a loosened or removed rule)."""
    return _difference(head, base, views, today)


def _difference(old: PolicySet, new: PolicySet, views: Sequence[ClusterView], today: date) -> list[Violation]:
    changed = {c.name for c in changed_policies(old, new)}
    if not changed:
        return []
    news = PolicySet(tuple(p for p in new.policies if p.name in changed))
    olds = PolicySet(tuple(p for p in old.policies if p.name in changed))
    out: list[Violation] = []
    for view in views:
        before = {(v.entity, v.policy.name, v.rule.id) for v in violations(olds, view, today)}
        out += [v for v in violations(news, view, today) if (v.entity, v.policy.name, v.rule.id) not in before]
    return out


def summary_lines(changes: Sequence[PolicyChange], flagged: Sequence[Violation],
                  cleared: Sequence[Violation] = ()) -> list[str]:
    """Plain lines (the renderers escape them): the changed policies, what they would newly flag, and how many
    of today's violations they would let pass."""
    lines = [f"policy {c.name} {c.what}" + (f" ({c.source.file}:{c.source.line})" if c.source else "")
             for c in changes]
    if not changes:
        return lines
    per_cluster: dict[str, int] = {}
    for v in flagged:
        per_cluster[v.cluster] = per_cluster.get(v.cluster, 0) + 1
    lines.append(f"the head's versions would newly flag {len(flagged)} violation(s) in {len(per_cluster)} "
                 "cluster(s) of the fleet's manifests" + (": " + ", ".join(
                     f"{c} {n}" for c, n in sorted(per_cluster.items())) if per_cluster else ""))
    for v in flagged[:SHOWN]:
        lines.append(f"{v.severity}: {v.cluster} {v.entity}: {v.policy.name}/{v.rule.id}: {v.detail}")
    if len(flagged) > SHOWN:
        lines.append(f"… and {len(flagged) - SHOWN} more")
    if cleared:
        lines.append(f"and would no longer flag {len(cleared)} violation(s) the base's versions find: " + ", ".join(
            f"{v.cluster} {v.entity} ({v.policy.name}/{v.rule.id})" for v in cleared[:SHOWN])
            + (" …" if len(cleared) > SHOWN else ""))
    return lines
