"""Risk of what an ACL change grants: broad grants, decided by a table of rules (PURE).

Taking access away is rated by the plan itself (`AclPlan.losing`: a removed Allow, an added Deny). Giving it is
rated here, entry by entry, for the added `Allow` entries only: a grant is broad by *who* (the wildcard principal
`User:*`, `AclEntry.WildcardPrincipalString`: every authenticated principal, and ANONYMOUS on a PLAINTEXT
listener), by *what* (`All`, `AclOperation.ALL`: every operation of the type, Delete and Alter included) and by
*where* (the wildcard resource `*`, `ResourcePattern.WILDCARD_RESOURCE`: every resource of the type, present and
future; the Cluster resource, whose operations are the brokers' own and the cluster's configuration; a PREFIXED
pattern of at most `SHORT_PREFIX` characters). AclAuthorizer (and KRaft's StandardAuthorizer) match exactly so:
`AuthorizerUtils`/`AclAuthorizer.matchingAcls` take the wildcard resource's and every matching prefix's entries
for any name.

Broad grants are rated `disruptive`: they lose no data by being applied (so `apply` needs no
`--allow-destructive`), but the PR comment lists them under "Before you approve" and the plan is not ✅ safe.

`ACL_RULES` is data, as `risk.RISK_RULES`: the impact job reads the same table (`grant_rules`) to rate the grants
of the fleet's ACL changes, so a PR comment and the impact report never disagree on what is broad.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from reconciler.model import RISK_ORDER, AclEntry, AclResource, Risk
from reconciler.plan import AclPlan

WILDCARD_PRINCIPAL = "User:*"
WILDCARD_RESOURCE = "*"
SHORT_PREFIX = 3  # characters: a PREFIXED pattern this short (`a`, `ap-`) matches a large share of any naming scheme
# Operations on the Cluster resource that act on the cluster itself: ClusterAction is what brokers do to each other
# (LeaderAndIsr, StopReplica, fetching as a follower), Alter/AlterConfigs change the brokers' configuration and
# partition reassignments, Create creates any topic.
CLUSTER_ADMIN = frozenset({"All", "ClusterAction", "Alter", "AlterConfigs", "Create"})


def _broad_resource(resource: AclResource) -> str | None:
    """How `resource` reaches beyond one name ("every topic"), or None."""
    kind = resource.resource_type.lower()
    if resource.resource_type == "Cluster":
        return "the Cluster resource"
    if resource.pattern == "LITERAL" and resource.name == WILDCARD_RESOURCE:
        return f"every {kind} ({resource.resource_type}:*, present and future)"
    if resource.pattern == "PREFIXED" and len(resource.name) <= SHORT_PREFIX:
        return f"every {kind} whose name starts with {resource.name!r} (a {len(resource.name)}-character prefix)"
    return None


@dataclass(frozen=True, slots=True)
class AclRule:
    """One row: fires for an added Allow `entry` on `resource` when `matches`; `reason` over {who}, {op}, {where}."""

    id: str
    risk: Risk
    matches: Callable[[AclResource, AclEntry], bool]
    reason: str


ACL_RULES: tuple[AclRule, ...] = (
    AclRule("acl-everyone-all-on-everything", "disruptive",
            lambda r, e: e.principal == WILDCARD_PRINCIPAL and e.operation == "All" and _broad_resource(r) is not None,
            "{who} granted All on {where}: any client, anonymous ones included on a PLAINTEXT listener, may delete "
            "or alter them"),
    AclRule("acl-everyone", "disruptive",
            lambda r, e: e.principal == WILDCARD_PRINCIPAL and (e.operation == "All" or _broad_resource(r) is not None),
            "{who} granted {op} on {where}: every principal, anonymous ones included on a PLAINTEXT listener"),
    AclRule("acl-all-on-everything", "disruptive",
            lambda r, e: e.operation == "All" and _broad_resource(r) is not None,
            "{who} granted All on {where}: every operation, Delete and Alter included"),
    AclRule("acl-cluster-admin", "disruptive",
            lambda r, e: r.resource_type == "Cluster" and e.operation in CLUSTER_ADMIN,
            "{who} granted {op} on {where}: it may act on the cluster itself (ClusterAction is what brokers do "
            "to each other; Alter and AlterConfigs change the brokers' configuration)"),
)


def grant_rules(resource: AclResource, entry: AclEntry) -> tuple[AclRule, ...]:
    """The rules an added entry fires, most severe first (table order within a risk); none for a Deny."""
    if entry.permission != "Allow":
        return ()
    fired = [rule for rule in ACL_RULES if rule.matches(resource, entry)]
    return tuple(sorted(fired, key=lambda r: -RISK_ORDER[r.risk]))


def rate_grants(resource: AclResource, added: tuple[AclEntry, ...]) -> tuple[Risk, tuple[str, ...]]:
    """The risk and reasons of the entries `added` to `resource`: one reason per entry, from its most severe rule."""
    risk: Risk = "safe"
    reasons: list[str] = []
    for entry in added:
        fired = grant_rules(resource, entry)
        if not fired:
            continue
        top = fired[0]
        where = _broad_resource(resource) or resource.display
        who = "everyone (User:*)" if entry.principal == WILDCARD_PRINCIPAL else entry.principal
        host = "" if entry.host == "*" else f" from {entry.host}"
        reasons.append(top.reason.format(who=who + host, op=entry.operation, where=where))
        risk = max(risk, top.risk, key=RISK_ORDER.__getitem__)
    return risk, tuple(dict.fromkeys(reasons))


def rate_acl_plan(acl: AclPlan) -> AclPlan:
    """`acl` with what its added entries grant rated (taking access away is the plan's own rating)."""
    risk, reasons = rate_grants(acl.resource, acl.add)
    if (risk, reasons) == (acl.grant_risk, acl.grant_reasons):
        return acl
    return replace(acl, grant_risk=risk, grant_reasons=reasons)
