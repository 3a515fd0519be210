"""apply_plan against a real ZooKeeper: exact bytes, notifications, topics, quotas, idempotence, audit.

Fault and concurrency cases (stale plans, locks, KRaft, batching, ACLs, lost connections) are in
test_apply_faults.py, which reuses the helpers here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from kazoo.client import KazooClient

from reconciler.diff import build_plan
from reconciler.errors import has_errors
from reconciler.model import (
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    Policy,
    Secret,
    SecretRef,
    SecretState,
    ZooKeeperSpec,
)
from reconciler.plan import Plan
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.zk.read import read_live_state
from reconciler.zk.write import ApplyOptions, ApplyResult, AuditInfo, apply_plan

ENCODER_SECRET = "encoder-secret-1"
PLAINTEXT = "s3cr3t-päss"
PARAMS = EncoderParams(Secret(ENCODER_SECRET))
AUDIT = AuditInfo("plan-1", "c1", "abc123", "tester@host", "2024-01-01T00:00:00Z")
PASSWORD_KEY = "listener.name.internal.ssl.key.password"
NOTIFICATION = re.compile(r"config_change_\d{10}")


# --- helpers (also used by test_apply_faults.py) --------------------------------------------------------


def desired(
    entities: Mapping[EntityRef, Mapping[str, str | SecretRef]] | None = None,
    topics: Mapping[str, tuple[int | None, Mapping[str, str]]] | None = None,
    ignore_keys: tuple[str, ...] = (),
) -> DesiredState:
    policy = Policy(ignore_keys=ignore_keys)
    cluster = ClusterSpec("c1", "3.6", ZooKeeperSpec("unused:2181"), (1, 2, 3), policy=policy)
    return DesiredState(
        cluster=cluster,
        entities={
            ref: DesiredEntity(ref, {k: DesiredValue(v) for k, v in cfg.items()})
            for ref, cfg in (entities or {}).items()
        },
        topics={
            name: DesiredTopic(name, parts, None, {k: DesiredValue(v) for k, v in cfg.items()})
            for name, (parts, cfg) in (topics or {}).items()
        },
    )


def make_plan(
    client: KazooClient, state: DesiredState, unchanged_secrets: tuple[tuple[EntityRef, str], ...] = ()
) -> Plan:
    live = read_live_state(client, "c1")
    secrets = {key: SecretState("unchanged") for key in unchanged_secrets}
    plan, diagnostics = build_plan(state, live, secret_states=secrets)
    assert not has_errors(diagnostics), diagnostics
    return plan


def apply(client: KazooClient, plan: Plan, **kwargs: Any) -> ApplyResult:
    return apply_plan(
        client,
        plan,
        encoder_for=lambda ref: PARAMS,
        resolve_secret=lambda change, ref: Secret(PLAINTEXT),
        audit=AUDIT,
        **kwargs,
    )


def config_bytes(config: Mapping[str, str]) -> bytes:
    """Written independently of layout.py: compact JSON, keys sorted, every value a string."""
    return json.dumps({"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def seed(client: KazooClient, path: str, config: Mapping[str, str]) -> None:
    client.create(path, config_bytes(config), makepath=True)


def seed_topic(client: KazooClient, name: str, partitions: int = 1, extra: str = "") -> None:
    parts = ",".join(f'"{p}":[{1 + p % 3}]' for p in range(partitions))
    data = f'{{"version":3,"partitions":{{{parts}}},"adding_replicas":{{}},"removing_replicas":{{}}{extra}}}'
    client.create(f"/brokers/topics/{name}", data.encode(), makepath=True)


def notifications(client: KazooClient) -> dict[str, bytes]:
    if not client.exists("/config/changes"):
        return {}
    return {c: client.get(f"/config/changes/{c}")[0] for c in client.get_children("/config/changes")}


def snapshot(client: KazooClient, path: str = "/") -> dict[str, tuple[bytes, int]]:
    """Every znode under the chroot with its data and version (the test trees are small)."""
    out: dict[str, tuple[bytes, int]] = {}
    for child in client.get_children(path):
        full = f"{path.rstrip('/')}/{child}"
        data, stat = client.get(full)
        out[full] = (data, stat.version)
        out.update(snapshot(client, full))
    return out


def kafka_decode(encoded: str, secret: str) -> str:
    """An independent PasswordEncoder decoder (CBC): hashlib PBKDF2 + cryptography AES, no reconciler code."""
    fields = dict(item.rsplit(":", 1) for item in encoded.split(","))
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert fields["cipherAlgorithm"] == "AES/CBC/PKCS5Padding"
    key = hashlib.pbkdf2_hmac("sha512", secret.encode(), base64.b64decode(fields["salt"]),
                              int(fields["iterations"]), int(fields["keyLength"]) // 8)
    iv = base64.b64decode(fields["initializationVector"])
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = decryptor.update(base64.b64decode(fields["encryptedPassword"])) + decryptor.finalize()
    text = padded[: -padded[-1]].decode("utf-8")
    assert len(text.encode("utf-16-le")) // 2 == int(fields["passwordLength"])
    return text


# --- tests -----------------------------------------------------------------------------------------------

BROKER_DEFAULT = EntityRef("brokers", "<default>")
BROKER_1 = EntityRef("brokers", "1")
ORDERS = EntityRef("topics", "orders")
CLIENT_DEFAULT = EntityRef("clients", "<default>")
ALICE_APP = EntityRef("users", "User:CN=alice smith", "app-1")
IP = EntityRef("ips", "10.0.0.7")


def mixed_state() -> DesiredState:
    return desired({
        BROKER_DEFAULT: {"log.cleaner.threads": "2"},
        BROKER_1: {PASSWORD_KEY: SecretRef(env="KEY_PASSWORD"), "log.cleaner.threads": "3"},
        CLIENT_DEFAULT: {"producer_byte_rate": "1048576"},
        ALICE_APP: {"consumer_byte_rate": "2048"},
        IP: {"connection_creation_rate": "10"},
    }, topics={"orders": (None, {"retention.ms": "86400000", "cleanup.policy": "compact"})})


def test_writes_kafka_bytes_and_one_notification_per_entity(zk_client: KazooClient, tmp_path: Path) -> None:
    seed_topic(zk_client, "orders")
    seed(zk_client, "/config/topics/orders", {"retention.ms": "1000"})
    seed(zk_client, "/config/brokers/1", {"log.cleaner.threads": "1"})
    zk_client.ensure_path("/config/changes")
    before = set(notifications(zk_client))
    calls: list[tuple[int, int]] = []

    result = apply(zk_client, make_plan(zk_client, mixed_state()), audit_log=tmp_path / "audit.jsonl",
                   progress=lambda done, total: calls.append((done, total)))

    assert (result.entities_written, result.notifications, result.batches) == (6, 6, 1)
    assert calls == [(6, 6)]
    expected = {
        "/config/brokers/<default>": {"log.cleaner.threads": "2"},
        "/config/topics/orders": {"retention.ms": "86400000", "cleanup.policy": "compact"},
        "/config/clients/<default>": {"producer_byte_rate": "1048576"},
        "/config/users/User%3ACN%3Dalice%20smith/clients/app-1": {"consumer_byte_rate": "2048"},
        "/config/ips/10.0.0.7": {"connection_creation_rate": "10"},
    }
    for path, config in expected.items():
        assert zk_client.get(path)[0] == config_bytes(config), path
    broker1, stat = zk_client.get("/config/brokers/1")
    stored = json.loads(broker1)["config"][PASSWORD_KEY]
    assert broker1 == config_bytes({"log.cleaner.threads": "3", PASSWORD_KEY: stored})
    assert stat.version == 1
    assert kafka_decode(stored, ENCODER_SECRET) == PLAINTEXT
    # parents made like Kafka's createRecursive: empty data
    assert zk_client.get("/config/users/User%3ACN%3Dalice%20smith")[0] == b""
    assert zk_client.get("/config/users/User%3ACN%3Dalice%20smith/clients")[0] == b""

    new = {name: data for name, data in notifications(zk_client).items() if name not in before}
    assert all(NOTIFICATION.fullmatch(name) for name in new)
    assert Counter(new.values()) == Counter(
        f'{{"version":2,"entity_path":"{p.removeprefix("/config/")}"}}'.encode()
        for p in [*expected, "/config/brokers/1"]
    )

    entries = zk_client.get_children("/reconciler/audit")
    assert len(entries) == 1 and result.audit_path == f"/reconciler/audit/{entries[0]}"
    raw = zk_client.get(result.audit_path)[0].decode()
    record = json.loads(raw)
    assert record["planId"] and record["cluster"] == "c1" and record["revision"] == "abc123"
    assert record["user"] == "tester@host" and record["result"] == "applied"
    assert record["counts"]["entitiesWritten"] == 6 and record["counts"]["notifications"] == 6
    log_lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in log_lines] == [record]
    for text in (raw, log_lines[0]):
        assert PLAINTEXT not in text and ENCODER_SECRET not in text and stored not in text
        assert "salt" not in text and "encryptedPassword" not in text


def test_idempotent_second_plan_is_empty_and_writes_nothing(zk_client: KazooClient) -> None:
    seed_topic(zk_client, "orders")
    apply(zk_client, make_plan(zk_client, mixed_state()))
    again = make_plan(zk_client, mixed_state(), unchanged_secrets=((BROKER_1, PASSWORD_KEY),))
    assert again.is_empty, again
    before = snapshot(zk_client)
    result = apply(zk_client, again)
    assert result == ApplyResult(0, 0, 0, 0, 0, None)
    assert snapshot(zk_client) == before


def test_untouched_keys_survive_byte_for_byte(zk_client: KazooClient) -> None:
    old_password = encode(Secret(PLAINTEXT), PARAMS)
    odd = 'é "quoted" \\ / \u2028 tab\t'
    seed(zk_client, "/config/brokers/1",
         {PASSWORD_KEY: old_password, "log.cleaner.threads": "1", "custom.ignored": odd})
    state = desired({BROKER_1: {PASSWORD_KEY: SecretRef(env="P"), "log.cleaner.threads": "2"}},
                    ignore_keys=("custom.ignored",))
    plan = make_plan(zk_client, state, unchanged_secrets=((BROKER_1, PASSWORD_KEY),))
    assert [c.key for e in plan.entities for c in e.changes] == ["log.cleaner.threads"]
    apply(zk_client, plan)
    data = zk_client.get("/config/brokers/1")[0]
    expected = {PASSWORD_KEY: old_password, "log.cleaner.threads": "2", "custom.ignored": odd}
    assert data == config_bytes(expected)
    assert json.dumps(old_password).encode() in data


def test_topic_creation_writes_config_then_assignment_without_notification(zk_client: KazooClient) -> None:
    plan = make_plan(zk_client, desired(topics={"payments": (3, {"retention.ms": "1000"})}))
    assert len(plan.topics_to_create) == 1
    assignment = plan.topics_to_create[0].assignment
    result = apply(zk_client, plan)
    assert (result.topics_created, result.notifications) == (1, 0)
    assert zk_client.get("/config/topics/payments")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'
    parts = ",".join(f'"{p}":[{",".join(map(str, r))}]' for p, r in sorted(assignment.items()))
    assert zk_client.get("/brokers/topics/payments")[0] == (
        f'{{"version":3,"partitions":{{{parts}}},"adding_replicas":{{}},"removing_replicas":{{}}}}'.encode()
    )
    assert notifications(zk_client) == {}


def test_topic_creation_overwrites_a_leftover_config_like_kafka(zk_client: KazooClient) -> None:
    """Kafka's createTopicWithAssignment sets-or-creates the config: a leftover never blocks convergence."""
    seed(zk_client, "/config/topics/payments", {"retention.ms": "5", "cleanup.policy": "compact"})
    plan = make_plan(zk_client, desired(topics={"payments": (3, {"retention.ms": "1000"})}))
    apply(zk_client, plan)
    assert zk_client.get("/config/topics/payments")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert zk_client.exists("/brokers/topics/payments") is not None
    assert make_plan(zk_client, desired(topics={"payments": (3, {"retention.ms": "1000"})})).is_empty


def test_partition_increase_keeps_topic_id_and_existing_partitions(zk_client: KazooClient) -> None:
    zk_client.create("/brokers/topics/orders", (
        b'{"version":3,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{"1":[3]},'
        b'"removing_replicas":{},"topic_id":"8rCb0Hc6QBqpwxGZ3XzRBg"}'), makepath=True)
    plan = make_plan(zk_client, desired(topics={"orders": (4, {})}))
    (increase,) = plan.partition_increases
    result = apply(zk_client, plan)
    assert result.partitions_added == 2 and result.notifications == 0
    data, stat = zk_client.get("/brokers/topics/orders")
    written = json.loads(data)
    assert written["partitions"] == {"0": [1, 2], "1": [2, 3],
                                     **{str(p): list(r) for p, r in increase.new_assignment.items()}}
    assert set(increase.new_assignment) == {2, 3}
    assert written["topic_id"] == "8rCb0Hc6QBqpwxGZ3XzRBg" and written["adding_replicas"] == {"1": [3]}
    assert stat.version == 1


def test_emptied_quota_entities_are_deleted_unless_they_have_children(zk_client: KazooClient) -> None:
    seed(zk_client, "/config/clients/app", {"producer_byte_rate": "100"})
    seed(zk_client, "/config/users/alice", {"producer_byte_rate": "1"})
    seed(zk_client, "/config/users/alice/clients/x", {"producer_byte_rate": "2"})
    seed(zk_client, "/config/users/bob", {"producer_byte_rate": "3"})
    seed(zk_client, "/config/users/bob/clients/y", {"producer_byte_rate": "4"})
    zk_client.ensure_path("/config/changes")
    state = desired({
        EntityRef("clients", "app"): {},
        EntityRef("users", "alice"): {},
        EntityRef("users", "alice", "x"): {"producer_byte_rate": "2"},
        EntityRef("users", "bob"): {},
        EntityRef("users", "bob", "y"): {},
    })
    apply(zk_client, make_plan(zk_client, state))
    assert zk_client.exists("/config/clients/app") is None
    assert zk_client.get("/config/users/alice")[0] == b'{"version":1,"config":{}}'  # has a client child
    assert zk_client.get("/config/users/alice/clients/x")[0] == config_bytes({"producer_byte_rate": "2"})
    assert zk_client.exists("/config/users/bob") is None  # its only child went in the same multi
    assert zk_client.exists("/config/clients") and zk_client.exists("/config/users")  # parents kept
    assert sorted(notifications(zk_client).values()) == [
        b'{"version":2,"entity_path":"clients/app"}',
        b'{"version":2,"entity_path":"users/alice"}',
        b'{"version":2,"entity_path":"users/bob"}',
        b'{"version":2,"entity_path":"users/bob/clients/y"}',
    ]
    assert make_plan(zk_client, state).is_empty


@pytest.mark.parametrize("bad", [0, 512])
def test_options_are_validated(bad: int) -> None:
    with pytest.raises(ValueError, match="max_batch_bytes"):
        ApplyOptions(max_batch_bytes=bad)
