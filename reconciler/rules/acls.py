"""Kafka's rules for ACL entries and resource patterns (ZooKeeper mode, Kafka 3.9), as data.

* Operations valid per resource type: `AclEntry.supportedOperations` (server/.../security/authorizer/
  AclEntry.java), plus `All`, which `AclCommand.validateOperation` accepts for every type.
* Names in paths and JSON: `SecurityUtils.resourceTypeName` / `operationName` / `permissionTypeName`.
* The Cluster resource's name is `kafka-cluster` (`ResourcePattern`/`Resource.CLUSTER_NAME`); the wildcard
  `*` is a LITERAL name only (`ResourcePattern.WILDCARD_RESOURCE`; AclCommand refuses `*` as a prefix).
* In ZooKeeper mode a resource's name is a znode name, written as it is (`ZkAclStore.path`: `<aclPath>/<Type>/<name>`,
  `ResourceZNode.path`, core/.../kafka/zk/ZkData.scala; no Sanitizer, unlike quota entities): ZooKeeper refuses
  `.`, `..` and some characters (`PathUtils.validatePath`), and a `/` makes a deeper znode that the authorizer
  reads back as another resource (its parent's child list names `a`, not `a/b`). KRaft stores names as data.
* A principal is `Type:name` (`SecurityUtils.parseKafkaPrincipal`); a host is `*` or an IP address (the
  authorizer compares it with the client's InetAddress.getHostAddress, so a host name never matches).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from reconciler.errors import Diagnostic
from reconciler.model import DesiredState

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"

SUPPORTED_OPERATIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "Topic": frozenset({"Read", "Write", "Create", "Describe", "Delete", "Alter", "DescribeConfigs",
                        "AlterConfigs"}),
    "Group": frozenset({"Read", "Describe", "Delete"}),
    "Cluster": frozenset({"Create", "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "Alter",
                          "Describe"}),
    "TransactionalId": frozenset({"Describe", "Write"}),
    "DelegationToken": frozenset({"Describe"}),
    "User": frozenset({"CreateTokens", "DescribeTokens"}),
})

# ResourceType.name(): the upper-case enum names Kafka's change notifications carry (LiteralAclChangeStore,
# ExtendedAclChangeStore)
ENUM_NAMES: Mapping[str, str] = MappingProxyType({
    "Topic": "TOPIC", "Group": "GROUP", "Cluster": "CLUSTER", "TransactionalId": "TRANSACTIONAL_ID",
    "DelegationToken": "DELEGATION_TOKEN", "User": "USER",
})


def operation_problem(resource_type: str, operation: str) -> str | None:
    allowed = SUPPORTED_OPERATIONS[resource_type]
    if operation == "All" or operation in allowed:
        return None
    return (f"operation {operation} is not valid for a {resource_type} (Kafka's AclEntry.supportedOperations: "
            f"{', '.join(sorted(allowed))}, or All)")


def resource_problem(resource_type: str, pattern: str, name: str) -> str | None:
    if resource_type == "Cluster" and name != CLUSTER_NAME:
        return f"the Cluster resource is named {CLUSTER_NAME!r}, not {name!r}"
    if resource_type == "Cluster" and pattern != "LITERAL":
        return "the Cluster resource is LITERAL only"
    if name == WILDCARD and pattern != "LITERAL":
        return "the wildcard '*' is a LITERAL name (a PREFIXED '*' matches only names starting with '*')"
    return None


def principal_problem(principal: str) -> str | None:
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        return f"principal {principal!r} must be Type:name, e.g. User:alice (Kafka's SecurityUtils.parseKafkaPrincipal)"
    return None


def host_problem(host: str) -> str | None:
    if host == WILDCARD:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"host {host!r} must be '*' or an IP address (Kafka compares the client's address, not its name)"
    return None


def _refused_char(c: str) -> bool:
    """ZooKeeper's PathUtils.validatePath refuses these UTF-16 chars (a supplementary character is a surrogate
    pair in Java, inside the refused \\ud800-\\uf8ff range)."""
    o = ord(c)
    return (o <= 0x1F or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xF8FF or 0xFFF0 <= o <= 0xFFFF
            or o > 0xFFFF)


def znode_name_problem(name: str) -> str | None:
    """Why ZooKeeper cannot hold an ACL resource named `name` at `<aclPath>/<Type>/<name>` (None if it can)."""
    if name in (".", ".."):
        return (f"ZooKeeper refuses the path component {name!r} (PathUtils.validatePath: relative paths not "
                "allowed): every apply of this cluster would fail")
    if "/" in name:
        return ("a '/' makes it a deeper znode that Kafka's authorizer reads back as another resource (named "
                f"{name.split('/', 1)[0]!r}): the plan would never settle")
    bad = next((c for c in name if _refused_char(c)), None)
    if bad is not None:
        return f"ZooKeeper refuses the character U+{ord(bad):04X} in a path (PathUtils.validatePath)"
    return None


# LiteralAclStore / ExtendedAclStore's aclPath (ZkData.scala; zk/acls.py writes them)
_ACL_ROOTS: Mapping[str, str] = MappingProxyType({"LITERAL": "/kafka-acl", "PREFIXED": "/kafka-acl-extended/prefixed"})


def check_acl_names(state: DesiredState) -> Iterator[Diagnostic]:
    """ZooKeeper mode: each declared resource's name as the znode Kafka's ZkAclStore names it."""
    if state.cluster.is_kraft:
        return
    for resource, declared in state.acls.items():
        problem = znode_name_problem(resource.name)
        if problem is not None:
            root = _ACL_ROOTS[resource.pattern]
            yield Diagnostic("error", f"ACL resource {resource.resource_type} {resource.name!r} cannot be stored in "
                             f"ZooKeeper: Kafka's ZkAclStore keeps it at {root}/{resource.resource_type}/"
                             f"{resource.name}, and {problem}", declared.source, "name")
