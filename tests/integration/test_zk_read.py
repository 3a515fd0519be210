"""read_live_state against a real ZooKeeper: a Kafka-like layout written with raw kazoo calls."""

from __future__ import annotations

import time

import pytest
from kazoo import security
from kazoo.client import KazooClient

from reconciler.allowlist import NotAllowedError
from reconciler.errors import LiveStateError
from reconciler.model import AclEntry, AclResource, BrokerRegistration, EntityRef, LiveState, Secret, ZooKeeperSpec
from reconciler.zk import layout
from reconciler.zk import read as read_module
from reconciler.zk.acls import encode_acls, read_acls, resource_path
from reconciler.zk.read import ReadScope, read_live_state
from reconciler.zk.session import ZooKeeperError, close, connect, digest_acl, kazoo_acls
from tests.conftest import free_port

pytestmark = pytest.mark.zk

MULTI = pytest.mark.parametrize("multi_read", [True, False], ids=["multiRead", "per-znode"])

BROKERS = {
    1: BrokerRegistration(
        1,
        ("INTERNAL://b1:9092", "EXTERNAL://b1.example.com:9094"),
        {"INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"},
        "r1",
    ),
    2: BrokerRegistration(2, ("PLAINTEXT://b2:9092",), {"PLAINTEXT": "PLAINTEXT"}, "r2"),
    10: BrokerRegistration(10, ("PLAINTEXT://b10:9092",), {"PLAINTEXT": "PLAINTEXT"}),
}
ENTITIES = {
    EntityRef("topics", "orders"): {"retention.ms": "86400000", "cleanup.policy": "delete"},
    EntityRef("topics", "payments.ledger"): {"cleanup.policy": "compact"},
    EntityRef("topics", "empty"): {},
    EntityRef("brokers", "<default>"): {"num.io.threads": "16"},
    EntityRef("brokers", "1"): {"log.cleaner.threads": "2"},
    EntityRef("clients", "<default>"): {"producer_byte_rate": "1048576"},
    EntityRef("clients", "billing app"): {"producer_byte_rate": "4194304"},
    EntityRef("users", "User:CN=alice smith"): {"request_percentage": "50"},
    EntityRef("users", "User:CN=alice smith", "app-1"): {"producer_byte_rate": "2097152"},
    EntityRef("users", "<default>", "<default>"): {"consumer_byte_rate": "1000"},
    EntityRef("ips", "<default>"): {"connection_creation_rate": "50"},
}


def put(client: KazooClient, path: str, data: bytes | None, ephemeral: bool = False) -> None:
    client.create(path, data, makepath=True, ephemeral=ephemeral)


def write_cluster(client: KazooClient) -> None:
    """What brokers and kafka-configs leave behind (parents of user-client nodes have null data)."""
    for path in (
        "/config/changes",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
        "/brokers/ids",
        "/brokers/topics",
        "/admin/delete_topics",
    ):
        client.ensure_path(path)
    for ref, config in ENTITIES.items():
        if ref == EntityRef("users", "<default>", "<default>"):
            client.ensure_path("/config/users/<default>/clients")  # parents made by createRecursive
        put(client, layout.entity_path(ref), layout.encode_entity_config(config))
        client.create(layout.NOTIFICATION_PREFIX, layout.encode_notification(ref), sequence=True)
    for broker_id, reg in BROKERS.items():
        put(client, layout.broker_path(broker_id), layout.encode_broker_registration(reg), ephemeral=True)
    put(
        client,
        layout.topic_path("orders"),
        layout.encode_topic_assignment(
            {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(12)}, "8rCb0Hc6QBqpwxGZ3XzRBg"
        ),
    )
    put(client, layout.topic_path("payments.ledger"), b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}')
    put(client, layout.CONTROLLER_PATH, layout.encode_controller(1), ephemeral=True)


@MULTI
def test_reads_back_what_was_written(zk_client: KazooClient, multi_read: bool) -> None:
    write_cluster(zk_client)
    client = zk_client
    client.set(
        layout.entity_path(EntityRef("topics", "orders")),
        layout.encode_entity_config(ENTITIES[EntityRef("topics", "orders")]),
    )  # version 1
    state = read_live_state(client, "c1", multi_read=multi_read)

    assert state.cluster == "c1"
    # the null-data parent made by createRecursive is an entity without config, as Kafka reads it
    expected = {**ENTITIES, EntityRef("users", "<default>"): {}}
    assert {ref: dict(e.config) for ref, e in state.entities.items()} == expected
    assert state.entities[EntityRef("topics", "orders")].version == 1
    assert state.entities[EntityRef("topics", "empty")].version == 0
    assert state.entities[EntityRef("users", "User:CN=alice smith")].has_children
    assert not state.entities[EntityRef("users", "User:CN=alice smith", "app-1")].has_children
    assert list(state.brokers) == [1, 2, 10]
    assert state.brokers == BROKERS
    assert list(state.topics) == ["orders", "payments.ledger"]
    orders = state.topics["orders"]
    assert (orders.partitions, orders.replication_factor, orders.topic_id) == (
        12,
        2,
        "8rCb0Hc6QBqpwxGZ3XzRBg",
    )
    assert orders.assignment[11] == (3, 1)
    assert state.topics["payments.ledger"].topic_id is None
    assert state.controller is not None and state.controller.broker == 1 and not state.controller.is_kraft
    assert state.controller.version == 0


def test_both_read_paths_agree(zk_client: KazooClient) -> None:
    write_cluster(zk_client)
    assert read_live_state(zk_client, "c", multi_read=True) == read_live_state(
        zk_client, "c", multi_read=False
    )


def test_falls_back_when_the_server_lacks_multiread(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZooKeeper < 3.6 answers an unknown opcode with UNIMPLEMENTED and drops the connection; an unknown
    opcode makes this 3.8 server behave the same way."""
    write_cluster(zk_client)
    expected = read_live_state(zk_client, "c1", multi_read=False)
    monkeypatch.setattr(read_module._MultiRead, "type", 99)
    assert read_live_state(zk_client, "c1") == expected
    assert read_module._multi_read_support[zk_client] is False  # learnt: no second probe
    assert read_live_state(zk_client, "c1") == expected


def test_user_parent_with_null_data_and_children(zk_client: KazooClient) -> None:
    zk_client.ensure_path("/config/users/bob/clients")  # null data parents
    put(zk_client, "/config/users/bob/clients/<default>", layout.encode_entity_config({"a": "1"}))
    state = read_live_state(zk_client, "c")
    bob = state.entities[EntityRef("users", "bob")]
    assert (dict(bob.config), bob.has_children) == ({}, True)
    assert dict(state.entities[EntityRef("users", "bob", "<default>")].config) == {"a": "1"}


@MULTI
def test_empty_cluster(zk_client: KazooClient, multi_read: bool) -> None:
    state = read_live_state(zk_client, "fresh", multi_read=multi_read)
    assert state == LiveState("fresh", {}, {}, {}, None, acls={})  # ACLs read: none


@MULTI
def test_acl_resources_are_read_with_the_rest_and_equal_the_one_by_one_read(
        zk_client: KazooClient, multi_read: bool) -> None:
    """The pipelined read of /kafka-acl and /kafka-acl-extended/prefixed gives what `read_acls` (one request at a
    time) gives: entries, pattern and each resource znode's version; `ReadScope(acls=False)` leaves them unread."""
    literal = AclResource("Topic", "LITERAL", "orders")
    prefixed = AclResource("Group", "PREFIXED", "app-")
    alice = AclEntry("User:alice", "*", "Read", "Allow")
    eve = AclEntry("User:eve", "10.0.0.1", "Read", "Deny")
    put(zk_client, resource_path(literal), encode_acls([alice]))
    put(zk_client, resource_path(prefixed), encode_acls([alice, eve]))
    zk_client.set(resource_path(prefixed), encode_acls([eve, alice]))  # version 1
    state = read_live_state(zk_client, "c", multi_read=multi_read)
    assert state.acls == read_acls(zk_client)
    assert state.acls is not None
    assert {r: (set(a.entries), a.version) for r, a in state.acls.items()} == {
        literal: ({alice}, 0), prefixed: ({alice, eve}, 1)}
    assert read_live_state(zk_client, "c", ReadScope(acls=False), multi_read=multi_read).acls is None


def test_missing_chroot_reads_empty(zk_connect: str) -> None:
    client = connect(ZooKeeperSpec(zk_connect + "/not/yet/created"))
    try:
        state = read_live_state(client, "fresh")
    finally:
        close(client)
    assert (state.entities, state.brokers, state.topics, state.controller) == ({}, {}, {}, None)


def test_chroot_isolates_clusters(zk_client: KazooClient, zk_connect: str) -> None:
    write_cluster(zk_client)
    zk_client.ensure_path("/other")
    put(zk_client, "/other/config/topics/elsewhere", layout.encode_entity_config({"a": "b"}))
    other = connect(ZooKeeperSpec(zk_connect + "/other"))
    try:
        state = read_live_state(other, "other")
    finally:
        close(other)
    assert list(state.entities) == [EntityRef("topics", "elsewhere")]
    assert state.brokers == {} and state.controller is None
    assert EntityRef("topics", "elsewhere") not in read_live_state(zk_client, "c1").entities


def test_scope_limits_what_is_read(zk_client: KazooClient) -> None:
    write_cluster(zk_client)
    alice_app = EntityRef("users", "User:CN=alice smith", "app-1")
    scope = ReadScope(
        entity_types=frozenset({"brokers"}),
        extra_entities=frozenset({EntityRef("topics", "orders"), EntityRef("topics", "missing"), alice_app}),
        brokers=False,
        topics=False,
    )
    state = read_live_state(zk_client, "c1", scope)
    assert set(state.entities) == {
        EntityRef("brokers", "<default>"),
        EntityRef("brokers", "1"),
        EntityRef("topics", "orders"),
        alice_app,
    }
    assert state.brokers == {} and state.topics == {}
    assert state.controller is not None
    with pytest.raises(ValueError):
        ReadScope(entity_types=frozenset({"widgets"}))
    assert ReadScope(entity_types=frozenset({"topics", "groups", "features"})).entity_types == {"topics"}


@MULTI
@pytest.mark.parametrize(
    ("path", "data", "fragment"),
    [
        ("/config/topics/orders", b'{"version":1,"config":{"retention.ms":', "corrupt JSON"),
        ("/config/users/User%3CN", b'{"version":1,"config":{"a":1}}', "Expected `String` value"),
        ("/config/users/u/clients/c", b"[]", "expected a JSON object"),
        ("/brokers/ids/3", b'{"version":5,"endpoints":["nonsense"]}', "unable to parse"),
        ("/brokers/topics/orders", b'{"version":3,"partitions":{"0":"1,2"}}', "partition"),
        ("/controller", b"{oops", "corrupt JSON"),
    ],
)
def test_corrupt_znode_is_named(
    zk_client: KazooClient, zk_chroot: str, multi_read: bool, path: str, data: bytes, fragment: str
) -> None:
    if path.startswith("/config/users/u/"):
        zk_client.ensure_path("/config/users/u")
    put(zk_client, path, data)
    with pytest.raises(LiveStateError) as err:
        read_live_state(zk_client, "c1", multi_read=multi_read)
    message = str(err.value)
    assert f"{zk_chroot}{path}" in message, message  # server path: chroot + Kafka's path
    assert fragment in message


def test_non_canonical_entity_names_are_refused(zk_client: KazooClient) -> None:
    put(zk_client, "/config/users/a+b", layout.encode_entity_config({}))  # Kafka would read "a b"
    with pytest.raises(LiveStateError, match=r"/config/users/a\+b.*sanitised"):
        read_live_state(zk_client, "c1")
    zk_client.delete("/config/users/a+b")
    put(zk_client, "/brokers/ids/x", b"{}")
    with pytest.raises(LiveStateError, match="/brokers/ids/x"):
        read_live_state(zk_client, "c1")


def test_znode_deleted_between_list_and_get_is_absent(zk_client: KazooClient) -> None:
    """A listed topic deleted just before its get is issued (one-request-per-znode path, to hook it)."""
    write_cluster(zk_client)
    original = zk_client.get_async
    deleted = layout.topic_path("orders")

    def racing_get(path: str, watch: object = None) -> object:
        if path == deleted:
            zk_client.delete(path)
        return original(path, watch)

    zk_client.get_async = racing_get
    try:
        state = read_live_state(zk_client, "c1", multi_read=False)
    finally:
        del zk_client.get_async
    assert "orders" not in state.topics and "payments.ledger" in state.topics


def test_read_of_2000_topics(zk_client: KazooClient) -> None:
    config = layout.encode_entity_config({"retention.ms": "86400000", "cleanup.policy": "delete"})
    assignment = layout.encode_topic_assignment({p: [1, 2, 3] for p in range(6)})
    zk_client.ensure_path("/config/topics")
    zk_client.ensure_path("/brokers/topics")
    for start in range(0, 2000, 250):  # batched writes keep the set-up fast
        tx = zk_client.transaction()
        for i in range(start, start + 250):
            tx.create(f"/config/topics/topic-{i:05d}", config)
            tx.create(f"/brokers/topics/topic-{i:05d}", assignment)
        assert not [r for r in tx.commit() if isinstance(r, Exception)]
    timings = {}
    for multi_read in (True, False):
        started = time.perf_counter()
        state = read_live_state(zk_client, "big", multi_read=multi_read)
        timings[multi_read] = time.perf_counter() - started
        assert len(state.topics) == 2000 and len(state.entities) == 2000
    print(
        f"\nread 2,000 topics (4,000 znodes): multiRead {timings[True]:.3f}s, per-znode {timings[False]:.3f}s"
    )


def test_repeated_znode_contents_are_decoded_once_and_read_as_their_own(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Topics sharing a config's or an assignment's bytes: one decode each, every topic with its own name and
    version; a corrupt copy of a shared content is still refused and named."""
    same = layout.encode_entity_config({"retention.ms": "86400000"})
    assignment = layout.encode_topic_assignment({0: (1, 2), 1: (2, 1)})
    for name in ("a", "b", "c"):
        put(zk_client, f"/config/topics/{name}", same)
        put(zk_client, f"/brokers/topics/{name}", assignment)
    zk_client.set("/brokers/topics/b", assignment)  # version 1
    put(zk_client, "/config/topics/d", layout.encode_entity_config({"retention.ms": "1"}))
    put(zk_client, "/brokers/topics/d", layout.encode_topic_assignment({0: (3,)}, "AAAAAAAAAAAAAAAAAAAAAA"))
    calls: list[str] = []
    for name in ("decode_entity_config", "decode_topic_assignment"):
        real = getattr(layout, name)
        monkeypatch.setattr(layout, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    state = read_live_state(zk_client, "c1")
    assert sorted(calls) == ["decode_entity_config"] * 2 + ["decode_topic_assignment"] * 2
    assert {n: (t.name, t.version, dict(t.assignment), t.topic_id) for n, t in state.topics.items()} == {
        "a": ("a", 0, {0: (1, 2), 1: (2, 1)}, None), "b": ("b", 1, {0: (1, 2), 1: (2, 1)}, None),
        "c": ("c", 0, {0: (1, 2), 1: (2, 1)}, None), "d": ("d", 0, {0: (3,)}, "AAAAAAAAAAAAAAAAAAAAAA")}
    assert {r.name: dict(e.config) for r, e in state.entities.items()} == {
        "a": {"retention.ms": "86400000"}, "b": {"retention.ms": "86400000"}, "c": {"retention.ms": "86400000"},
        "d": {"retention.ms": "1"}}
    zk_client.set("/config/topics/c", same + b"x")  # corrupt: its own content, decoded and refused
    with pytest.raises(LiveStateError, match="/config/topics/c"):
        read_live_state(zk_client, "c1")


# --- session: connect, auth, ACLs ----------------------------------------------------------------------


def test_connect_failure_names_the_connect_string_not_the_credentials() -> None:
    spec = ZooKeeperSpec(f"127.0.0.1:{free_port()}/kafka", auth_scheme="digest")
    started = time.monotonic()
    with pytest.raises(ZooKeeperError) as err:
        connect(spec, Secret("admin:s3cret-pw"), connect_timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert spec.connect in str(err.value) and "s3cret" not in str(err.value)
    with pytest.raises(NotAllowedError, match="connect string"):  # refused before any socket (issue 28)
        connect(ZooKeeperSpec("127.0.0.1:notaport"))


def test_kazoo_acls_match_kazoo_constants() -> None:
    assert kazoo_acls(layout.OPEN_ACL_UNSAFE) == security.OPEN_ACL_UNSAFE
    assert kazoo_acls(layout.CREATOR_ALL_ACL) == security.CREATOR_ALL_ACL
    assert kazoo_acls(layout.READ_ACL_UNSAFE) == security.READ_ACL_UNSAFE
    assert digest_acl(Secret("kafka:pw")) == security.make_digest_acl("kafka", "pw", all=True)


def test_secure_acls_need_the_brokers_identity(zk_connect: str) -> None:
    """Kafka's secure ACLs (zookeeper.set.acl=true): /config/users is creator-only, topics world-readable."""
    spec = ZooKeeperSpec(zk_connect, auth_scheme="digest")
    broker = connect(spec, Secret("kafka:broker-pw"))
    try:
        for path, config in (("/config/users/alice", {"a": "1"}), ("/config/topics/t", {"b": "2"})):
            for parent in ("/config", path.rsplit("/", 1)[0]):
                if not broker.exists(parent):
                    broker.create(parent, acl=kazoo_acls(layout.default_acls(True, parent)))
            acl = kazoo_acls(layout.default_acls(True, path))
            broker.create(path, layout.encode_entity_config(config), acl=acl)
        state = read_live_state(broker, "secure")
        assert set(state.entities) == {EntityRef("users", "alice"), EntityRef("topics", "t")}
    finally:
        close(broker)
    for multi_read in (True, False):
        stranger = connect(spec, Secret("someone:else"))
        try:
            with pytest.raises(LiveStateError, match=r"/config/users.*NoAuth"):
                read_live_state(stranger, "secure", multi_read=multi_read)
            topics_only = ReadScope(entity_types=frozenset({"topics"}))
            assert list(read_live_state(stranger, "secure", topics_only, multi_read=multi_read).entities) == [
                EntityRef("topics", "t")
            ]
        finally:
            close(stranger)
