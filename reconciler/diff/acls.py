"""PURE: desired vs live ACLs -> AclPlans. A declared resource pattern gets exactly its declared entries;
an undeclared live one is reported as unmanaged, and removed only with `policy.pruneAcls`."""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.model import AclEntry, AclResource, DesiredAcls, LiveAcls
from reconciler.plan import AclPlan


def plan_acls(desired: Mapping[AclResource, DesiredAcls], live: Mapping[AclResource, LiveAcls] | None,
              prune: bool) -> tuple[list[AclPlan], list[str]]:
    """(changes, unmanaged resource displays). `live` None (not read): no ACL changes planned, and `build_plan`
    reports an error when the manifests declare ACLs (or prune them): never an empty plan by omission."""
    if live is None:
        return [], []
    plans: list[AclPlan] = []
    unmanaged: list[str] = []
    for resource in sorted(set(desired) | set(live)):
        want = desired.get(resource)
        have = live.get(resource)
        current = have.entries if have is not None else frozenset()
        if want is None:
            if not prune:
                unmanaged.append(resource.display)
                continue
            target: frozenset[AclEntry] = frozenset()
        else:
            target = want.entries
        add, remove = target - current, current - target
        if not add and not remove:
            continue
        plans.append(AclPlan(resource, have.version if have is not None else None, tuple(sorted(add)),
                             tuple(sorted(remove)), tuple(sorted(target)), pruned=want is None,
                             source=want.source if want is not None else None))
    return plans, unmanaged


__all__ = ["plan_acls"]
