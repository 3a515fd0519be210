"""ACLs in ZooKeeper exactly as Kafka 3.9's AclAuthorizer reads and writes them (core/.../kafka/zk/ZkData.scala):

* Resource znodes (`ZkAclStore.path`): LITERAL patterns under `/kafka-acl/<ResourceType>/<name>`
  (`LiteralAclStore`), PREFIXED under `/kafka-acl-extended/prefixed/<ResourceType>/<name>` (`ExtendedAclStore`:
  the pattern type's name in lower case), `<ResourceType>` being `SecurityUtils.resourceTypeName` (Topic, Group,
  Cluster, TransactionalId, DelegationToken, User).
* Their data (`ResourceZNode.encode` -> `AclEntry.toJsonCompatibleMap`): compact JSON whose key order is the one
  Kafka's Jackson writes for those HashMaps, checked byte for byte against AclCommand's output:
  `{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"}],"version":1}`.
  The entries are a Java HashSet (their order is not defined); we write them sorted. Read: `AclEntry.fromBytes`.
* Every change gets a sequential notification the brokers' listeners act on (`ZkAclChangeStore.createChangeNode`):
  literal: `/kafka-acl-changes/acl_changes_NNNNNNNNNN` holding `TOPIC:name` (`LiteralAclChangeStore.encode`,
  ResourceType's enum name); prefixed: `/kafka-acl-extended-changes/acl_changes_NNNNNNNNNN` holding
  `{"version":1,"resourceType":"TOPIC","name":"app-","patternType":"PREFIXED"}` (`ExtendedAclChangeStore`).
* An update is version-guarded (`KafkaZkClient.conditionalSetAclsForResource` / `createAclsForResourceIfNotExists`),
  and a resource left without entries is deleted (`AclAuthorizer.updateResourceAcls` -> `deleteResource`).
  Here the write and its notification are one multi-transaction per resource (zk/aclwrite.py, apply only).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reconciler.errors import LiveStateError
from reconciler.model import ACL_RESOURCE_TYPES, AclEntry, AclResource, LiveAcls, frozen_map
from reconciler.rules.acls import ENUM_NAMES

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended"
PREFIXED_ROOT = f"{EXTENDED_ROOT}/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes/acl_changes_"
EXTENDED_CHANGES = "/kafka-acl-extended-changes/acl_changes_"


def resource_path(r: AclResource) -> str:
    root = LITERAL_ROOT if r.pattern == "LITERAL" else PREFIXED_ROOT
    return f"{root}/{r.resource_type}/{r.name}"


# The string encoder `json.dumps(..., ensure_ascii=False)` uses: the text below is that call's output for
# ResourceZNode's object, assembled without building the object (apply encodes 10,000s of resource znodes)
_STR: Callable[[str], str] = json.encoder.encode_basestring
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _entry_order(e: AclEntry) -> tuple[str, str, str, str]:
    return e.principal, e.host, e.operation, e.permission  # AclEntry's own order (its fields), compared in C


def encode_acls(entries: Sequence[AclEntry]) -> bytes:
    """ResourceZNode.encode, byte for byte (key order as Kafka writes it; entries sorted): what
    `json.dumps({"acls": [{"principal", "permissionType", "host", "operation"}, ...], "version": 1},
    separators=(",", ":"), ensure_ascii=False)` writes (tests/unit/test_acls.py compares the two)."""
    text = ",".join(f'{{"principal":{_STR(e.principal)},"permissionType":{_STR(e.permission)},'
                    f'"host":{_STR(e.host)},"operation":{_STR(e.operation)}}}'
                    for e in sorted(entries, key=_entry_order))
    return f'{{"acls":[{text}],"version":1}}'.encode()


def decode_acls(data: bytes, where: str) -> frozenset[AclEntry]:
    """AclEntry.fromBytes: empty data is no entries; version must be 1."""
    if not data:
        return frozenset()
    try:
        obj = json.loads(data)
        if obj.get("version") != 1:
            raise ValueError("version is not 1")
        return frozenset(AclEntry(str(a["principal"]), str(a["host"]), str(a["operation"]), str(a["permissionType"]))
                         for a in obj["acls"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LiveStateError(f"{where}: not Kafka's ACL JSON ({type(exc).__name__})") from None


def encode_change(r: AclResource) -> tuple[str, bytes]:
    """(sequential path prefix, data) of the resource's change notification."""
    enum = ENUM_NAMES[r.resource_type]
    if r.pattern == "LITERAL":
        return LITERAL_CHANGES, f"{enum}:{r.name}".encode()
    body = {"version": 1, "resourceType": enum, "name": r.name, "patternType": r.pattern}
    return EXTENDED_CHANGES, _ENCODE(body).encode("utf-8")


def acl_type_paths() -> dict[str, tuple[str, str]]:
    """The znodes listing each resource type's resource znodes -> (resource type, pattern type); read with the
    rest of the live state (zk/read.py)."""
    return {f"{root}/{rtype}": (rtype, pattern) for pattern, root in (("LITERAL", LITERAL_ROOT),
                                                                       ("PREFIXED", PREFIXED_ROOT))
            for rtype in ACL_RESOURCE_TYPES}


def read_acls(client: KazooClient) -> Mapping[AclResource, LiveAcls]:
    """Every ACL resource znode (literal and prefixed) with its entries and version, one request at a time
    (tests and tools; `read_live_state` reads them pipelined with everything else)."""
    out: dict[AclResource, LiveAcls] = {}
    for pattern, root in (("LITERAL", LITERAL_ROOT), ("PREFIXED", PREFIXED_ROOT)):
        for rtype in ACL_RESOURCE_TYPES:
            try:
                names = client.get_children(f"{root}/{rtype}")
            except NoNodeError:
                continue
            for name in sorted(names):
                resource = AclResource(rtype, pattern, name)
                path = resource_path(resource)
                try:
                    data, stat = client.get(path)
                except NoNodeError:
                    continue
                out[resource] = LiveAcls(resource, decode_acls(data or b"", path), stat.version)
    return frozen_map(out)


__all__ = ["acl_type_paths", "decode_acls", "encode_acls", "encode_change", "read_acls", "resource_path"]
