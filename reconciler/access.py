"""Who may do what on one resource, decided as Kafka 3.9's ZooKeeper-mode authorizer decides it.

`kafka.security.authorizer.AclAuthorizer.authorizeAction` (core/src/main/scala, tag 3.9):

* the ACLs that apply to a resource are its LITERAL pattern, the LITERAL wildcard `*` of its type, and every
  PREFIXED pattern its name starts with (`matchingAcls`);
* an entry applies to a request when its principal is the request's or `User:*` (`AclEntry.WILDCARD_PRINCIPAL`),
  its host the client's address or `*`, its operation the requested one or `All` (`matchingAclExists`);
* a Deny that applies refuses the request whatever allows it; otherwise an Allow must apply, where an Allow of
  Read, Write, Delete or Alter also allows Describe, and AlterConfigs also allows DescribeConfigs
  (`allowAclExists`);
* a resource no ACL applies to is refused unless the brokers set `allow.everyone.if.no.acl.found`; super users
  (`super.users`) are never asked. Neither is known from the manifests, so both are said, not decided.

The answer lists each (principal, host) that an entry names, with every operation it is allowed or denied and
the resource patterns that decide it. Pure: used by `describe` for the live ACLs and for the ACLs a plan leaves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reconciler.model import AclEntry, AclResource

WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
WILDCARD_RESOURCE = "*"
# AclAuthorizer.allowAclExists: an Allow of one of these also allows the key operation
IMPLIED_BY: Mapping[str, frozenset[str]] = {
    "Describe": frozenset({"Describe", "Read", "Write", "Delete", "Alter"}),
    "DescribeConfigs": frozenset({"DescribeConfigs", "AlterConfigs"}),
}


@dataclass(frozen=True, slots=True, order=True)
class Access:
    """One principal's verdict for one operation from one host: `allowed` or `denied`, and the resource
    patterns whose entries decide it (the Deny's when denied)."""

    principal: str
    host: str
    operation: str
    verdict: str
    because: tuple[str, ...]


def matching(acls: Mapping[AclResource, Iterable[AclEntry]], resource_type: str, name: str
             ) -> list[tuple[AclResource, AclEntry]]:
    """AclAuthorizer.matchingAcls: the entries of the literal pattern, the wildcard and every matching prefix."""
    found: list[tuple[AclResource, AclEntry]] = []
    for resource, entries in acls.items():
        if resource.resource_type != resource_type:
            continue
        if (resource.pattern == "LITERAL" and resource.name in (name, WILDCARD_RESOURCE)) or (
                resource.pattern == "PREFIXED" and name.startswith(resource.name)):
            found += [(resource, e) for e in entries]
    return sorted(found)


def _applies(entry: AclEntry, principal: str, host: str, operation: str) -> bool:
    return (entry.principal in (principal, WILDCARD_PRINCIPAL) and entry.host in (host, WILDCARD_HOST)
            and entry.operation in (operation, "All"))


def decide(found: list[tuple[AclResource, AclEntry]], principal: str, host: str, operation: str) -> Access | None:
    """The authorizer's answer for one request when an entry decides it; None when none applies (denied,
    unless allow.everyone.if.no.acl.found and no entry applies to the resource at all)."""
    denies = [r.display for r, e in found if e.permission == "Deny" and _applies(e, principal, host, operation)]
    if denies:
        return Access(principal, host, operation, "denied", tuple(sorted(set(denies))))
    ops = IMPLIED_BY.get(operation, frozenset({operation}))
    allows = [r.display for r, e in found
              if e.permission == "Allow" and any(_applies(e, principal, host, op) for op in ops)]
    return Access(principal, host, operation, "allowed", tuple(sorted(set(allows)))) if allows else None


def access_of(acls: Mapping[AclResource, Iterable[AclEntry]], resource_type: str, name: str,
              operations: Iterable[str]) -> list[Access]:
    """Every verdict an entry decides on the resource, for each (principal, host) the matching entries name
    and each of `operations` (Kafka's for the resource type: rules.acls.SUPPORTED_OPERATIONS)."""
    found = matching(acls, resource_type, name)
    who = sorted({(e.principal, e.host) for _, e in found})
    out = [decided for principal, host in who for op in sorted(operations)
           if (decided := decide(found, principal, host, op)) is not None]
    return sorted(out)


def planned_acls(live: Mapping[AclResource, Iterable[AclEntry]] | None,
                 after: Mapping[AclResource, Iterable[AclEntry]]) -> dict[AclResource, frozenset[AclEntry]]:
    """The ACLs once a plan is applied: each planned resource's complete entry set replaces the live one."""
    out = {r: frozenset(entries) for r, entries in (live or {}).items()}
    for resource, entries in after.items():
        out[resource] = frozenset(entries)
    return {r: e for r, e in out.items() if e}


__all__ = ["Access", "access_of", "decide", "matching", "planned_acls"]
