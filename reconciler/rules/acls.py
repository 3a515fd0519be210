"""Kafka's rules for ACL entries and resource patterns (ZooKeeper mode, Kafka 3.9), as data.

* Operations valid per resource type: `AclEntry.supportedOperations` (server/.../security/authorizer/
  AclEntry.java), plus `All`, which `AclCommand.validateOperation` accepts for every type.
* Names in paths and JSON: `SecurityUtils.resourceTypeName` / `operationName` / `permissionTypeName`.
* The Cluster resource's name is `kafka-cluster` (`ResourcePattern`/`Resource.CLUSTER_NAME`); the wildcard
  `*` is a LITERAL name only (`ResourcePattern.WILDCARD_RESOURCE`; AclCommand refuses `*` as a prefix).
* A principal is `Type:name` (`SecurityUtils.parseKafkaPrincipal`); a host is `*` or an IP address (the
  authorizer compares it with the client's InetAddress.getHostAddress, so a host name never matches).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from types import MappingProxyType

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
        return f"principal {principal!r} must be Type:name, e.g. User:alice"
    return None


def host_problem(host: str) -> str | None:
    if host == WILDCARD:
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"host {host!r} must be '*' or an IP address (Kafka compares the client's address, not its name)"
    return None
