"""Byte-level checks of Kafka's ZooKeeper paths and payloads (kafka/ground-truth.md §1)."""

from __future__ import annotations

import json

import pytest

from reconciler.errors import LiveStateError
from reconciler.model import BrokerRegistration, EntityRef, sanitize
from reconciler.zk import layout

# --- paths and sanitising ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "path"),
    [
        (EntityRef("topics", "orders"), "/config/topics/orders"),
        (EntityRef("brokers", "<default>"), "/config/brokers/<default>"),
        (EntityRef("brokers", "3"), "/config/brokers/3"),
        (EntityRef("clients", "billing-app"), "/config/clients/billing-app"),
        (EntityRef("users", "User:alice", "<default>"), "/config/users/User%3Aalice/clients/<default>"),
        (EntityRef("users", "<default>", "app 1"), "/config/users/<default>/clients/app%201"),
        (EntityRef("ips", "10.0.0.7"), "/config/ips/10.0.0.7"),
    ],
)
def test_entity_path(ref: EntityRef, path: str) -> None:
    assert layout.entity_path(ref) == path


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("User:CN=alice smith", "User%3ACN%3Dalice%20smith"),
        ("a*b+c~d", "a%2Ab%2Bc%7Ed"),
        ("<default>", "<default>"),
        ("ünï", "%C3%BCn%C3%AF"),
        ("a.b_c-d", "a.b_c-d"),
    ],
)
def test_sanitize_like_kafka(name: str, sanitized: str) -> None:
    assert sanitize(name) == sanitized


# --- entity configs and notifications ------------------------------------------------------------------


def test_encode_entity_config_exact_bytes() -> None:
    assert layout.encode_entity_config({"retention.ms": "86400000"}) == (
        b'{"version":1,"config":{"retention.ms":"86400000"}}'
    )
    assert layout.encode_entity_config({}) == b'{"version":1,"config":{}}'
    # sorted keys (deterministic), non-ASCII raw UTF-8 like Jackson
    assert (
        layout.encode_entity_config({"b": "é", "a": "1"})
        == '{"version":1,"config":{"a":"1","b":"é"}}'.encode()
    )


def test_encode_entity_config_rejects_non_strings() -> None:
    with pytest.raises(TypeError):
        layout.encode_entity_config({"retention.ms": 86400000})  # type: ignore[dict-item]


def test_decode_entity_config_round_trip_and_empty() -> None:
    config = {"cleanup.policy": "compact", "retention.ms": "86400000", "x": "ü"}
    assert layout.decode_entity_config(layout.encode_entity_config(config), "/config/topics/t") == config
    assert layout.decode_entity_config(None, "/config/users/u", has_children=True) == {}
    assert layout.decode_entity_config(b"", "/config/users/u", has_children=True) == {}
    for empty in (None, b""):  # an empty leaf is not what Kafka writes (docs/operations.md: corrupt)
        with pytest.raises(LiveStateError, match="empty data"):
            layout.decode_entity_config(empty, "/config/users/u")
    # readers ignore the version and key order
    with pytest.raises(LiveStateError, match="expected 1"):  # Kafka's ConfigEntityZNode writes version 1
        layout.decode_entity_config(b'{"config":{"a":"1"},"version":2}', "/z")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b'{"version":1,"config":{', "corrupt JSON"),
        (b"\xff\xfe", "corrupt JSON"),
        (b"[1,2]", "expected a JSON object"),
        (b'{"version":1}', "'config'"),
        (b'{"version":1,"config":[]}', "'config'"),
        (b'{"version":1,"config":{"retention.ms":86400000}}', "Expected `String` value, received 86400000"),
        (b'{"version":1,"config":{"a":null}}', "Expected `String` value, received null"),
        (b'{"version":1,"config":{"a":true}}', "received true"),
    ],
)
def test_decode_entity_config_errors_name_the_znode(data: bytes, fragment: str) -> None:
    with pytest.raises(LiveStateError) as err:
        layout.decode_entity_config(data, "/kafka/config/topics/orders")
    assert "/kafka/config/topics/orders" in str(err.value)
    assert fragment in str(err.value)


def test_notifications() -> None:
    assert layout.NOTIFICATION_PREFIX == "/config/changes/config_change_"
    cases = {
        EntityRef(
            "users", "User:alice", "<default>"
        ): b'{"version":2,"entity_path":"users/User%3Aalice/clients/<default>"}',
        EntityRef("topics", "my-topic"): b'{"version":2,"entity_path":"topics/my-topic"}',
        EntityRef("brokers", "<default>"): b'{"version":2,"entity_path":"brokers/<default>"}',
        EntityRef("ips", "10.0.0.7"): b'{"version":2,"entity_path":"ips/10.0.0.7"}',
    }
    for ref, expected in cases.items():
        assert layout.encode_notification(ref) == expected
        assert layout.decode_notification(expected, "/config/changes/config_change_0000000001") == ref
    v1 = b'{"version":1,"entity_type":"clients","entity_name":"app"}'
    assert layout.decode_notification(v1, "/n") == EntityRef("clients", "app")
    with pytest.raises(LiveStateError, match="/n"):
        layout.decode_notification(b'{"version":3,"entity_path":"topics/t"}', "/n")


# --- broker registrations ------------------------------------------------------------------------------

V5 = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
    b'"endpoints":["PLAINTEXT://b1:9092","SSL://b1:9093"],"jmx_port":-1,"port":9092,"host":"b1",'
    b'"version":5,"timestamp":"1700000000000","rack":"r1"}'
)


def test_decode_registration_v5_ground_truth_example() -> None:
    reg = layout.decode_broker_registration(1, V5, "/brokers/ids/1")
    assert reg == BrokerRegistration(
        1, ("PLAINTEXT://b1:9092", "SSL://b1:9093"), {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, "r1"
    )


def test_decode_registration_v1_single_plaintext_endpoint() -> None:
    data = b'{"version":1,"host":"b2","port":9092,"jmx_port":-1,"timestamp":"1"}'
    reg = layout.decode_broker_registration(2, data, "/brokers/ids/2")
    assert reg.endpoints == ("PLAINTEXT://b2:9092",)
    assert dict(reg.protocol_map) == {"PLAINTEXT": "PLAINTEXT"}
    assert reg.rack is None


@pytest.mark.parametrize("version", [2, 3])
def test_decode_registration_v2_v3_default_protocol_map(version: int) -> None:
    data = json.dumps(
        {
            "version": version,
            "host": None,
            "port": -1,
            "jmx_port": -1,
            "timestamp": "1",
            "endpoints": ["ssl://[::1]:9093", "SASL_SSL://:9094"],
            "rack": "r2" if version == 3 else None,
        }
    ).encode()
    reg = layout.decode_broker_registration(3, data, "/brokers/ids/3")
    assert reg.endpoints == ("SSL://[::1]:9093", "SASL_SSL://:9094")  # names upper-cased, IPv6 bracketed
    assert dict(reg.protocol_map) == dict(layout.DEFAULT_PROTOCOL_MAP)
    assert reg.rack == ("r2" if version == 3 else None)


def test_decode_registration_v4_custom_listener_names_upper_cased() -> None:
    data = json.dumps(
        {
            "version": 4,
            "host": None,
            "port": -1,
            "jmx_port": -1,
            "timestamp": "1",
            "endpoints": ["internal://b4.int:9092", "EXTERNAL://b4.example.com:9094"],
            "listener_security_protocol_map": {"internal": "plaintext", "EXTERNAL": "SASL_SSL"},
        }
    ).encode()
    reg = layout.decode_broker_registration(4, data, "/brokers/ids/4")
    assert reg.endpoints == ("INTERNAL://b4.int:9092", "EXTERNAL://b4.example.com:9094")
    assert dict(reg.protocol_map) == {"EXTERNAL": "SASL_SSL", "INTERNAL": "PLAINTEXT"}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"not json", "corrupt JSON"),
        (b'{"version":0,"host":"b","port":1}', "unsupported broker registration version 0"),
        (b'{"version":"5"}', "'version'"),
        (b'{"version":1,"port":9092}', "'host'"),
        (b'{"version":5,"endpoints":"PLAINTEXT://b:1"}', "'endpoints'"),
        (b'{"version":5,"endpoints":["garbage"]}', "unable to parse"),
        (b'{"version":4,"endpoints":["X://b:1"],"listener_security_protocol_map":{"Y":"SSL"}}', "listener X"),
        (b'{"version":4,"endpoints":["X://b:1"],"listener_security_protocol_map":{"X":"TLS"}}', "'TLS'"),
    ],
)
def test_decode_registration_errors_name_the_znode(data: bytes, fragment: str) -> None:
    with pytest.raises(LiveStateError) as err:
        layout.decode_broker_registration(7, data, "/brokers/ids/7")
    assert "/brokers/ids/7" in str(err.value) and fragment in str(err.value)


def test_encode_registration_v5_and_round_trips() -> None:
    reg = BrokerRegistration(
        1, ("PLAINTEXT://b1:9092", "SSL://b1:9093"), {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, "r1"
    )
    data = layout.encode_broker_registration(reg, timestamp_ms=1700000000000)
    assert json.loads(data) == json.loads(V5)
    for version in (1, 2, 3, 4, 5):
        decoded = layout.decode_broker_registration(
            1, layout.encode_broker_registration(reg, version=version), "/b"
        )
        if version == 1:
            assert decoded.endpoints == ("PLAINTEXT://b1:9092",)
        else:
            assert decoded.endpoints == reg.endpoints
            assert decoded.rack == ("r1" if version >= 3 else None)
    assert json.loads(layout.encode_broker_registration(reg, version=4))[
        "listener_security_protocol_map"
    ] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}


def test_encode_registration_without_plaintext_writes_null_host() -> None:
    reg = BrokerRegistration(2, ("SSL://b2:9093",), {"SSL": "SSL"})
    payload = json.loads(layout.encode_broker_registration(reg, version=4))
    assert payload["host"] is None and payload["port"] == -1 and "features" not in payload
    with pytest.raises(ValueError, match="REPL"):
        layout.encode_broker_registration(BrokerRegistration(2, ("REPL://b:1",), {}))


# --- topic assignments, controller ---------------------------------------------------------------------


def test_encode_topic_assignment_exact_bytes() -> None:
    assert layout.encode_topic_assignment({1: [2, 3, 1], 0: (1, 2, 3)}) == (
        b'{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{},"removing_replicas":{}}'
    )
    assert layout.encode_topic_assignment({0: [1]}, "8rCb0Hc6QBqpwxGZ3XzRBg").endswith(
        b',"topic_id":"8rCb0Hc6QBqpwxGZ3XzRBg"}'
    )


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}',
        b'{"version":2,"partitions":{"1":[2,1],"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}',
        b'{"version":3,"partitions":{"0":[1,2],"1":[2,1]},"adding_replicas":{"0":[3]},"removing_replicas":{}}',
    ],
)
def test_decode_topic_assignment_versions(data: bytes) -> None:
    topic = layout.decode_topic_assignment("t", data, "/brokers/topics/t", version=4)
    assert dict(topic.assignment) == {0: (1, 2), 1: (2, 1)}
    assert (topic.partitions, topic.replication_factor, topic.version, topic.topic_id) == (2, 2, 4, None)


def test_decode_topic_assignment_numeric_order_and_topic_id() -> None:
    data = layout.encode_topic_assignment({p: [1] for p in range(12)}, "8rCb0Hc6QBqpwxGZ3XzRBg")
    topic = layout.decode_topic_assignment("t", data, "/z")
    assert list(topic.assignment) == list(range(12))
    assert topic.topic_id == "8rCb0Hc6QBqpwxGZ3XzRBg"


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b'{"version":3}',
        b'{"version":3,"partitions":[]}',
        b'{"version":3,"partitions":{"x":[1]}}',
        b'{"version":3,"partitions":{"0":[1,"2"]}}',
        b'{"version":3,"partitions":{"0":[true]}}',
        b'{"version":3,"partitions":{"0":1}}',
        b'{"version":3,"partitions":{"0":[1]},"adding_replicas":[]}',
        b'{"version":3,"partitions":{"0":[1]},"topic_id":5}',
    ],
)
def test_decode_topic_assignment_errors_name_the_znode(data: bytes) -> None:
    with pytest.raises(LiveStateError, match="/brokers/topics/orders"):
        layout.decode_topic_assignment("orders", data, "/brokers/topics/orders")


def test_controller_v1_and_v2() -> None:
    v1 = layout.decode_controller(b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}', version=3)
    assert (v1.broker, v1.kraft_controller_epoch, v1.version, v1.is_kraft) == (1, -1, 3, False)
    v2 = layout.decode_controller(b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}')
    assert (v2.broker, v2.kraft_controller_epoch, v2.is_kraft) == (3000, 5, True)
    zk_mode = layout.decode_controller(layout.encode_controller(2))
    assert (zk_mode.broker, zk_mode.kraft_controller_epoch) == (2, -1)
    assert layout.encode_controller(1, kraft_controller_epoch=None, timestamp_ms=5) == (
        b'{"version":1,"brokerid":1,"timestamp":"5"}'
    )
    for bad in (b"", b"x", b'{"version":2}', b'{"brokerid":1,"kraftControllerEpoch":"5"}'):
        with pytest.raises(LiveStateError, match="/kafka/controller"):
            layout.decode_controller(bad, "/kafka/controller")


# --- ACLs ----------------------------------------------------------------------------------------------


def test_default_acls_like_zkdata() -> None:
    open_acl = (("world", "anyone", 31),)
    assert layout.default_acls(False, "/config/users/alice") == open_acl
    assert layout.default_acls(True, "/consumers") == open_acl
    assert layout.default_acls(True, "/config/users/alice") == (("auth", "", 31),)
    assert layout.default_acls(True, "/config/brokers/<default>") == (("auth", "", 31),)
    assert layout.default_acls(True, "/delegation_token/tokens/x") == (("auth", "", 31),)
    for path in ("/config/topics/t", "/config/changes/config_change_", "/brokers/topics/t", "/config"):
        assert layout.default_acls(True, path) == (("auth", "", 31), ("world", "anyone", 1))


@pytest.mark.parametrize(
    "data",
    [
        layout.encode_topic_assignment({0: (1, 2), 1: (2, 1)}, "8rCb0Hc6QBqpwxGZ3XzRBg"),
        b'{"version":3,"partitions":{"0":[1]},"topic_id":"old","topic_id":"AAAA"}',  # the last one wins
        b'{"version":3,"partitions":{"0":[1]},"x":"\\\\","topic_id":"AAAA"}',  # an escaped backslash before
        b'{"version":3,"partitions":{"0":[1]},"x":{"topic_id":"AAAA"}}',  # nested: not the last member
        b'{"version":3,"partitions":{"0":[1]},"x":"a\\",\\"topic_id\\":\\"AAAA\\"}',  # inside a string
        b'{"version":3,"partitions":{"0":["1"]},"topic_id":"AAAA"}',  # malformed: refused either way
        b'{"version":3,"partitions":{"0":[1]} ,"topic_id":"AAAA"}',
        b'{"version":3,"partitions":{"0":[1]},"topic_id":"A+/="}',  # not URL-safe base64: not split
        b'{"version":3,"partitions":{"0":[1]},"topic_id":"AAAA"} ',
        b'{"topic_id":"AAAA"}',
    ],
)
def test_split_topic_id_content_decodes_alike_but_for_the_id(data: bytes) -> None:
    """zk/read decodes an assignment once per content without its topic id: any other id must decode to the
    same topic with that id (or be refused alike)."""
    split = layout.split_topic_id(data)
    if split is None:
        return
    rest, topic_id = split
    assert rest + b',"topic_id":"' + topic_id.encode() + b'"}' == data

    def decoded(content: bytes) -> tuple[dict[int, tuple[int, ...]], str | None] | str:
        try:
            topic = layout.decode_topic_assignment("t", content, "/z", 1)
        except LiveStateError as exc:
            return str(exc)
        return dict(topic.assignment), topic.topic_id

    other = rest + b',"topic_id":"Zz9_-"}'
    first, second = decoded(data), decoded(other)
    if isinstance(first, str):
        assert first == second
    else:
        assert second == (first[0], "Zz9_-") and first[1] == topic_id
