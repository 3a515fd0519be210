"""Many of one principal's ACL entries removed with one DeleteAcls filter on the principal.

Kafka's controller compares every DeleteAcls filter with every ACL of the cluster
(`AclControlManager.deleteAclsForFilter` iterates `idToAcl` for each filter), so removing 10,000 entries with one
exact filter each, on a cluster holding 110,000 ACLs, is 1.1 billion comparisons: it got no answer within a minute.
One filter on the principal (resource, pattern type, host, operation and permission ANY, as `kafka-acls.sh --remove
--principal P` without a resource would send it) is one pass.

Sent only when it deletes nothing the plan does not remove: a DescribeAcls of the principal just before (the lock is
held) must show only entries the plan removes; otherwise the exact filters are sent. The DeleteAcls answer names
every ACL the filter deleted; one the plan did not remove (created by someone else between the two requests) is
created again at once, and reported; if that fails the apply fails naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from reconciler.kraft.admin import KraftAdmin, Refusal
from reconciler.kraft.operations import Operations, Step, Unit, kafka_acl, kafka_pattern
from reconciler.model import AclEntry, AclResource

AclKey = tuple[str, ...]  # (resource type, pattern type, name, principal, host, operation, permission)


def display(key: AclKey) -> str:
    rtype, pattern, name, principal, host, operation, permission = key
    return f"{rtype}:{pattern}:{name} {principal} {host} {operation} {permission}"


def coalesced(admin: KraftAdmin, ops: Operations) -> Operations:
    """`ops` with each principal's DeleteAcls steps (operations._acl_steps marks those of a principal losing many
    entries) replaced by one filter on the principal where the cluster shows it would match only those entries."""
    groups: dict[str, list[Step]] = {}
    for step in ops.steps:
        if step.request == "DeleteAcls" and step.principal is not None:
            groups.setdefault(step.principal, []).append(step)
    steps: list[Step] = []
    done: set[str] = set()
    for step in ops.steps:
        principal = step.principal
        if step.request != "DeleteAcls" or principal is None:
            steps.append(step)
            continue
        if principal in done:
            continue
        done.add(principal)
        group = groups[principal]
        units = [u for s in group for u in s.units]
        planned = {u.acl for u in units}
        live = {(rtype, pattern, name, *entry) for rtype, pattern, name, entries in admin.acl_bindings(principal)
                for entry in entries}
        if live <= planned:
            steps.append(Step("DeleteAcls", f"ACL entries of {principal} removed ({len(units)}, one filter on the "
                                            "principal)", units, [principal_filter(principal)], principal, broad=True))
        else:
            steps += group
    return replace(ops, steps=steps)


def principal_filter(principal: str) -> object:
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    return ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY,
                     ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))


@dataclass
class Outcome:
    """A principal filter's answer: the refusal for its units, entries it deleted that the plan did not remove and
    were created again (`restored`), or could not be (`lost`, each with the reason)."""

    refused: list[tuple[Refusal, Unit]] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def send(admin: KraftAdmin, step: Step) -> Outcome:
    refusal, deleted = admin.delete_acls_matching(step.payloads[0])
    if refusal is not None:
        return Outcome(refused=[(refusal, unit) for unit in step.units])
    planned = {u.acl for u in step.units}
    extra = [key for key in deleted if key not in planned]
    if not extra:
        return Outcome()
    try:
        refusals = admin.create_acls([_acl(key) for key in extra])
    except Exception as exc:  # the connection failed: every extra entry is gone, say which
        return Outcome(lost=[f"{display(key)} ({type(exc).__name__})" for key in extra])
    failed = {r.index: r for r in refusals}
    return Outcome(restored=[display(key) for i, key in enumerate(extra) if i not in failed],
                   lost=[f"{display(key)} ({failed[i].error}: {failed[i].message})"
                         for i, key in enumerate(extra) if i in failed])


def _acl(key: Sequence[str]) -> object:
    return kafka_acl(AclEntry(*key[3:]), kafka_pattern(AclResource(*key[:3])))
