"""Kafka's ZooKeeper layout: znode paths and the JSON payload codecs, byte-compatible with `ZkData.scala`.

Pure (json only, no kazoo): every decoder names the znode it was given in its `LiveStateError`, so a corrupt
node in a 10,000-topic cluster can be found. Paths are relative to the cluster's chroot.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from itertools import chain
from types import MappingProxyType
from typing import Any, NamedTuple

from reconciler.errors import LiveStateError
from reconciler.model import BrokerRegistration, ControllerInfo, EntityRef, LiveTopic, frozen_map

CONFIG_ROOT = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
NOTIFICATION_PREFIX = "/config/changes/config_change_"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
CONTROLLER_PATH = "/controller"
DELETE_TOPICS_PATH = "/admin/delete_topics"
CONSUMERS_PATH = "/consumers"
# ZkData.SensitiveRootPaths: creator-only ACLs (no world READ) when secure
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
# SecurityProtocol values: the listener map a v2/v3 registration implies when it has none
DEFAULT_PROTOCOL_MAP: Mapping[str, str] = MappingProxyType(
    {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
)
_INT_ONLY = frozenset({int})  # type(True) is bool, so booleans are rejected too
_LIST_ONLY = frozenset({list})
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")  # EndPoint.uriParseExp


# Jackson's default ObjectMapper: compact, UTF-8, non-ASCII written raw. The encoder json.dumps would build
# for these options, built once (apply encodes two znodes per entity: 10,000s of them)
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_ENCODE_STRING = json.encoder.encode_basestring  # what _ENCODE does with a str, without its dispatch


def _dumps(obj: object) -> bytes:
    return _ENCODE(obj).encode("utf-8")


_decode_json = json.JSONDecoder().decode  # what json.loads uses without keyword arguments


# A lone UTF-16 surrogate, escaped (`\ud800`) or as raw bytes (which json's "surrogatepass" lets through)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")


def _loads(data: bytes | None, znode: str) -> Any:
    if not data:
        raise LiveStateError(f"znode {znode}: empty data where Kafka writes JSON")
    utf8 = data[0] == 0x7B and len(data) > 1 and data[1]  # "{" then not NUL: json.loads would pick UTF-8
    try:  # (the UTF-8 path skips json's encoding detection)
        obj = _decode_json(data.decode("utf-8", "surrogatepass")) if utf8 else json.loads(data)
        if not utf8 or ((b"\\u" in data or b"\xed" in data) and _SURROGATE.search(data)):  # rare: check it
            json.dumps(obj, ensure_ascii=False).encode("utf-8")  # a pair is fine, a lone surrogate raises
    except UnicodeEncodeError:  # not text, and it could not be written back
        raise LiveStateError(f"znode {znode}: corrupt JSON (a lone UTF-16 surrogate is not Unicode text)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise LiveStateError(f"znode {znode}: corrupt JSON ({exc})") from exc
    except RecursionError:  # json's decoder recurses: 1 MB of `[` in a znode must not crash the tool
        raise LiveStateError(f"znode {znode}: corrupt JSON (nested too deeply)") from None
    return obj


def _object(value: Any, znode: str, what: str = "data") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LiveStateError(f"znode {znode}: {what} is {_kind(value)}, expected a JSON object")
    return value


def _int(obj: Mapping[str, Any], key: str, znode: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise LiveStateError(f"znode {znode}: {key!r} is {_kind(value)}, expected an integer")
    return value


def _kind(value: Any) -> str:
    return "missing or null" if value is None else f"{type(value).__name__} {json.dumps(value)[:60]}"


# --- paths ---------------------------------------------------------------------------------------------


def entity_path(ref: EntityRef) -> str:
    """`/config/users/User%3Aalice/clients/<default>`: names sanitised like Kafka's `Sanitizer`."""
    return f"{CONFIG_ROOT}/{ref.path}"


def entity_type_path(entity_type: str) -> str:
    return f"{CONFIG_ROOT}/{entity_type}"


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


# --- entity configs and notifications ------------------------------------------------------------------


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """`{"version":1,"config":{...}}`; keys sorted for deterministic bytes; every value must be a string."""
    for key, value in config.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"entity config {key!r} must map to a string, got {type(value).__name__}")
    return _dumps({"version": 1, "config": dict(sorted(config.items()))})


def decode_entity_config(data: bytes | None, znode: str, has_children: bool = False) -> dict[str, str]:
    """The `config` object of an entity znode, as Kafka's `ConfigEntityZNode` writes it (`version` 1).

    Empty data is what Kafka's createRecursive leaves in a parent (`/config/users/<u>` of a user/client
    quota): no config, but only for a znode that has children; an empty leaf is corrupt. Stricter than
    Kafka's reader, which turns unparsable JSON into an empty config: a writer must not overwrite what it
    cannot read.
    """
    if not data and has_children:
        return {}
    if not data:
        raise LiveStateError(f"znode {znode}: empty data where Kafka writes a config ({{\"version\":1,…}})")
    obj = _object(_loads(data, znode), znode)
    version = obj.get("version")
    if version != 1 or isinstance(version, bool):
        raise LiveStateError(f"znode {znode}: config version is {_kind(version)}, expected 1 (what Kafka's "
                             "ConfigEntityZNode writes)")
    config = _object(obj.get("config"), znode, "'config'")
    for key, value in config.items():
        if not isinstance(value, str):  # Kafka's DecodeString
            raise LiveStateError(
                f"znode {znode}: config {key[:200]!r}: Expected `String` value, received {json.dumps(value)[:60]}"
            )
    return config


def encode_notification(ref: EntityRef) -> bytes:
    """`{"version":2,"entity_path":"<type>/<name>"}`: the bytes `_dumps` gives that object, assembled
    around the one encoded string (apply writes one per entity)."""
    return b'{"version":2,"entity_path":' + _ENCODE(ref.path).encode("utf-8") + b"}"


_CONFIG_PREFIX = len(CONFIG_ROOT) + 1


def notification_for(path: str) -> bytes:
    """`encode_notification` of the entity whose znode is `path` (`entity_path(ref)`, which apply has already)."""
    return b'{"version":2,"entity_path":' + _ENCODE_STRING(path[_CONFIG_PREFIX:]).encode("utf-8") + b"}"


def decode_notification(data: bytes | None, znode: str) -> EntityRef:
    """Version 2 (`entity_path`) and the legacy version 1 (`entity_type` + `entity_name`)."""
    obj = _object(_loads(data, znode), znode)
    version = _int(obj, "version", znode)
    try:
        if version == 2 and isinstance(obj.get("entity_path"), str):
            return EntityRef.from_path(obj["entity_path"])
        if version == 1 and obj.get("entity_type") in ("topics", "clients"):
            return EntityRef(obj["entity_type"], str(obj.get("entity_name")))
    except ValueError as exc:
        raise LiveStateError(f"znode {znode}: {exc}") from exc
    raise LiveStateError(f"znode {znode}: unsupported config change notification {data!r}")


# --- broker registrations ------------------------------------------------------------------------------


def _format_endpoint(listener: str, host: str, port: int) -> str:
    # EndPoint.connectionString: IPv6 in brackets, empty host as "NAME://:port"
    return f"{listener}://[{host}]:{port}" if ":" in host else f"{listener}://{host}:{port}"


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """`NAME://host:port` -> (upper-cased listener name, host ("" when empty), port); ValueError otherwise."""
    match = _ENDPOINT.fullmatch(endpoint)
    if match is None:
        raise ValueError(f"unable to parse {endpoint!r} to a broker endpoint")
    return match.group(1).upper(), match.group(2), int(match.group(3))


def decode_broker_registration(broker_id: int, data: bytes, znode: str) -> BrokerRegistration:
    """`BrokerIdZNode.decode` for versions 1..5 (v1: one PLAINTEXT endpoint from host/port)."""
    obj = _object(_loads(data, znode), znode)
    version = _int(obj, "version", znode)
    if version < 1:
        raise LiveStateError(f"znode {znode}: unsupported broker registration version {version}")
    if version == 1:
        host = obj.get("host")
        if not isinstance(host, str):
            raise LiveStateError(f"znode {znode}: 'host' is {_kind(host)}, expected a string")
        endpoints: tuple[str, ...] = (_format_endpoint("PLAINTEXT", host, _int(obj, "port", znode)),)
        protocol_map: dict[str, str] = {"PLAINTEXT": "PLAINTEXT"}
    else:
        raw_map = obj.get("listener_security_protocol_map")
        if raw_map is None:
            protocol_map = dict(DEFAULT_PROTOCOL_MAP)
        else:
            raw_map = _object(raw_map, znode, "'listener_security_protocol_map'")
            if not all(isinstance(v, str) for v in raw_map.values()):
                raise LiveStateError(f"znode {znode}: security protocols must be strings")
            protocol_map = {k.upper(): v.upper() for k, v in raw_map.items()}
        bad = [p for p in protocol_map.values() if p not in DEFAULT_PROTOCOL_MAP]
        if bad:
            raise LiveStateError(f"znode {znode}: unknown security protocol {bad[0]!r}")
        raw_endpoints = obj.get("endpoints")
        if not isinstance(raw_endpoints, list) or not all(isinstance(e, str) for e in raw_endpoints):
            raise LiveStateError(f"znode {znode}: 'endpoints' is {_kind(raw_endpoints)}, expected strings")
        parsed = []
        for endpoint in raw_endpoints:
            try:
                listener, host, port = parse_endpoint(endpoint)
            except ValueError as exc:
                raise LiveStateError(f"znode {znode}: {exc}") from exc
            if listener not in protocol_map:
                raise LiveStateError(f"znode {znode}: no security protocol defined for listener {listener}")
            parsed.append(_format_endpoint(listener, host, port))
        endpoints = tuple(parsed)
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise LiveStateError(f"znode {znode}: 'rack' is {_kind(rack)}, expected a string")
    return BrokerRegistration(broker_id, endpoints, frozen_map(protocol_map), rack)


def encode_broker_registration(
    reg: BrokerRegistration, *, version: int = 5, jmx_port: int = -1, timestamp_ms: int | None = None
) -> bytes:
    """`BrokerIdZNode.encode` (tests and simulated brokers); `version` 1 writes the legacy host/port only."""
    if not 1 <= version <= 5:
        raise ValueError(f"broker registration version {version} is not 1..5")
    parsed = [parse_endpoint(e) for e in reg.endpoints]
    fallback = "PLAINTEXT" if version == 1 else ""  # v1 knows only PLAINTEXT
    protocols = {name: reg.protocol_map.get(name, fallback) for name, _, _ in parsed}
    if missing := [name for name, protocol in protocols.items() if not protocol]:
        raise ValueError(f"no security protocol for listener(s) {', '.join(missing)}")
    plaintext = next(((h, p) for name, h, p in parsed if protocols[name] == "PLAINTEXT"), (None, -1))
    payload: dict[str, Any] = {"version": version, "host": plaintext[0] or None, "port": plaintext[1]}
    if version >= 2:
        payload["endpoints"] = [_format_endpoint(n, h, p) for n, h, p in parsed]
    payload["jmx_port"] = jmx_port
    payload["timestamp"] = str(int(time.time() * 1000) if timestamp_ms is None else timestamp_ms)
    if version >= 3 and reg.rack is not None:
        payload["rack"] = reg.rack
    if version >= 4:
        payload["listener_security_protocol_map"] = protocols
    if version >= 5:
        payload["features"] = {}
    return _dumps(payload)


# --- topic assignments and the controller --------------------------------------------------------------


def encode_topic_assignment(assignment: Mapping[int, Sequence[int]], topic_id: str | None = None) -> bytes:
    payload: dict[str, Any] = {
        "version": 3,
        "partitions": {str(p): list(assignment[p]) for p in sorted(assignment)},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    if topic_id is not None:
        payload["topic_id"] = topic_id
    return _dumps(payload)


def decode_topic_assignment(name: str, data: bytes, znode: str, version: int | None = None) -> LiveTopic:
    """`TopicZNode.decode` for v1 (<=2.3), v2 (adding/removing replicas) and v3 (optional `topic_id`)."""
    obj = _object(_loads(data, znode), znode)
    partitions = _object(obj.get("partitions"), znode, "'partitions'")
    for key in ("adding_replicas", "removing_replicas"):
        if key in obj:
            _object(obj[key], znode, repr(key))
    replica_lists = list(partitions.values())
    if (  # all well-formed (checked at C speed: 10,000 topics x partitions add up): build it in one go
        all(map(str.isdigit, partitions))
        and set(map(type, replica_lists)) <= _LIST_ONLY
        and set(map(type, chain.from_iterable(replica_lists))) <= _INT_ONLY
    ):
        assignment = dict(zip(map(int, partitions), map(tuple, replica_lists), strict=False))  # same length
    else:
        assignment = _checked_assignment(partitions, znode)
    topic_id = obj.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise LiveStateError(f"znode {znode}: 'topic_id' is {_kind(topic_id)}, expected a string")
    ordered = MappingProxyType(dict(sorted(assignment.items())))  # numeric order ("10" after "9")
    return LiveTopic(name, ordered, version, topic_id)


_TOPIC_ID_MEMBER = b',"topic_id":"'
_TOPIC_ID_CHARS = re.compile(rb"[A-Za-z0-9_-]+")  # a topic id as Kafka writes it: URL-safe base64


def split_topic_id(data: bytes) -> tuple[bytes, str] | None:
    """(the rest, the topic id) when an assignment ends as Kafka writes it: `…,"topic_id":"<id>"}`.

    Two such znodes with the same rest decode alike but for the id (when one decodes at all): the id's
    characters hold no quote or backslash, so that last member can only be the top-level object's last,
    whose value wins over any earlier `topic_id`. `zk/read` decodes each distinct rest once (ids differ).
    """
    at, end = data.rfind(_TOPIC_ID_MEMBER), len(data) - 2
    start = at + len(_TOPIC_ID_MEMBER)
    if at < 0 or not data.endswith(b'"}') or not _TOPIC_ID_CHARS.fullmatch(data, start, end):
        return None
    return data[:at], data[start:end].decode("ascii")


def _checked_assignment(partitions: Mapping[str, Any], znode: str) -> dict[int, tuple[int, ...]]:
    """The assignment, partition by partition, naming the first malformed one."""
    assignment: dict[int, tuple[int, ...]] = {}
    for partition, replicas in partitions.items():
        if not partition.isdigit() or not isinstance(replicas, list):
            raise LiveStateError(
                f"znode {znode}: partition {partition!r}: {_kind(replicas)}, expected [broker ids]"
            )
        if not set(map(type, replicas)) <= _INT_ONLY:  # C-speed check: 10k topics x partitions add up
            raise LiveStateError(
                f"znode {znode}: partition {partition}: replicas {replicas!r} are not all ints"
            )
        assignment[int(partition)] = tuple(replicas)
    return assignment


def encode_controller(
    broker: int, *, kraft_controller_epoch: int | None = -1, timestamp_ms: int = 0
) -> bytes:
    """v2 (3.4+) by default; `kraft_controller_epoch=None` writes the v1 form of older brokers."""
    payload: dict[str, Any] = {"version": 1 if kraft_controller_epoch is None else 2, "brokerid": broker}
    payload["timestamp"] = str(timestamp_ms)
    if kraft_controller_epoch is not None:
        payload["kraftControllerEpoch"] = kraft_controller_epoch
    return _dumps(payload)


def decode_controller(
    data: bytes, znode: str = CONTROLLER_PATH, version: int | None = None
) -> ControllerInfo:
    obj = _object(_loads(data, znode), znode)
    epoch = _int(obj, "kraftControllerEpoch", znode) if "kraftControllerEpoch" in obj else -1
    return ControllerInfo(_int(obj, "brokerid", znode), epoch, version)


# --- ACLs ----------------------------------------------------------------------------------------------


class AclEntry(NamedTuple):
    """One ZooKeeper ACL: scheme ("world", "auth", "digest"), id and a ZooDefs.Perms bit set."""

    scheme: str
    id: str
    perms: int


PERM_READ, PERM_WRITE, PERM_CREATE, PERM_DELETE, PERM_ADMIN = 1, 2, 4, 8, 16
PERM_ALL = 31
OPEN_ACL_UNSAFE = (AclEntry("world", "anyone", PERM_ALL),)
CREATOR_ALL_ACL = (AclEntry("auth", "", PERM_ALL),)  # the server substitutes the session's identities
READ_ACL_UNSAFE = (AclEntry("world", "anyone", PERM_READ),)


def default_acls(secure: bool, path: str) -> tuple[AclEntry, ...]:
    """`ZkData.defaultAcls`: open unless secure; secure = creator-all, plus world-read off sensitive paths."""
    if not secure or path == CONSUMERS_PATH:
        return OPEN_ACL_UNSAFE
    if path.startswith(SENSITIVE_ROOT_PATHS):  # a plain prefix test, exactly like Kafka's
        return CREATOR_ALL_ACL
    return CREATOR_ALL_ACL + READ_ACL_UNSAFE
