"""ACLs as code on real Kafka 3.9 brokers (the `kafka_secure` fixture: SASL_PLAINTEXT with SCRAM and Kafka's
AclAuthorizer; PLAINTEXT is the super user). SCRAM users are made with Kafka's own ConfigCommand; ACLs are
written by our apply; what counts is what the brokers do: a consumer over SASL reads or is refused with
TOPIC_AUTHORIZATION_FAILED (kafka-python's error class). Kafka's own AclCommand writes the reference state."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.admin import NewTopic
from kafka.consumer import KafkaConsumer
from kafka.errors import TopicAuthorizationFailedError
from kafka.producer import KafkaProducer
from kazoo.client import KazooClient

from reconciler.model import AclResource
from reconciler.plan import plans_from_json
from reconciler.zk.acls import decode_acls, encode_acls, encode_change
from tests.integration.brokerrepo import admin, cli, make_repo
from tests.kafkabrokers import REPO, KafkaCluster
from tests.leakcheck import plant


def _libs() -> str:
    out = subprocess.run(["bash", str(REPO / "scripts" / "kafka-jars.sh")], capture_output=True, text=True,
                         check=True, timeout=600)
    return out.stdout.strip().splitlines()[-1]


def kafka_tool(main: str, *args: str) -> None:
    """Run one of Kafka's own command-line classes from the brokers' jars."""
    env = {**os.environ, "KAFKA_LOG4J_OPTS": ""}
    result = subprocess.run(["java", "-Dlog4j.configuration=file:/dev/null", "-cp", f"{_libs()}/*", main, *args],
                            capture_output=True, text=True, timeout=180, env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


def scram_user(kafka: KafkaCluster, user: str, password: str) -> None:
    kafka_tool("kafka.admin.ConfigCommand", "--zookeeper", kafka.zk_connect, "--alter", "--add-config",
               f"SCRAM-SHA-256=[iterations=8192,password={password}]", "--entity-type", "users",
               "--entity-name", user)


@pytest.fixture(scope="module")
def users(kafka_secure: KafkaCluster) -> dict[str, str]:
    passwords = {u: plant(f"lk-acl-{u}-{uuid.uuid4().hex[:10]}") for u in ("alice", "bob")}
    for user, password in passwords.items():
        scram_user(kafka_secure, user, password)
    return passwords


def create_topic(kafka: KafkaCluster, name: str) -> None:
    client = admin(kafka)  # PLAINTEXT: User:ANONYMOUS, the super user
    try:
        client.create_topics([NewTopic(name, 1, 1)])
    finally:
        client.close()
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap.split(","))
    producer.send(name, b"hello").get(timeout=30)
    producer.close()


def consume(kafka: KafkaCluster, user: str, password: str, topic: str) -> list[bytes]:
    """The records `user` reads from `topic` over SASL_PLAINTEXT/SCRAM, in a consumer group `<topic>-g`
    (kafka-python raises TopicAuthorizationFailedError when the brokers answer TOPIC_AUTHORIZATION_FAILED)."""
    assert kafka.sasl_bootstrap
    consumer = KafkaConsumer(bootstrap_servers=kafka.sasl_bootstrap.split(","), security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=user,
                             sasl_plain_password=password, auto_offset_reset="earliest", group_id=f"{topic}-g",
                             enable_auto_commit=False)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            batch = consumer.poll(timeout_ms=1000)
            records = [r.value for rs in batch.values() for r in rs]
            if records:
                return records
        return []
    finally:
        consumer.close()


def denied(kafka: KafkaCluster, user: str, password: str, topic: str) -> bool:
    try:
        consume(kafka, user, password, topic)
    except TopicAuthorizationFailedError:
        return True
    return False


def until(check: Callable[[], bool], what: str) -> None:
    """ACL changes reach the brokers through change notifications: wait a little for them."""
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(1)


ACLS = """apiVersion: reconciler/v1
kind: Acls
meta: {{cluster: c1}}
spec:
  consumers:
    - principals: [User:alice]
      topicPrefix: {prefix}
      groupPrefix: {prefix}
  resources:
    - type: Group
      name: {prefix}
      pattern: PREFIXED
      entries: [{{principal: User:bob, operation: Read}}]  # bob may join the group and see the topic:
    - type: Topic                                            # what he lacks is Read on it
      name: {prefix}
      pattern: PREFIXED
      entries: [{{principal: User:bob, operation: Describe}}]
{extra}"""

# alice keeps her group and Describe on the topics, and loses Read on them (the consumers entry is gone)
WITHOUT_READ = """apiVersion: reconciler/v1
kind: Acls
meta: {{cluster: c1}}
spec:
  resources:
    - type: Group
      name: {prefix}
      pattern: PREFIXED
      entries: [{{principals: [User:alice, User:bob], operation: Read}}]
    - type: Topic
      name: {prefix}
      pattern: PREFIXED
      entries: [{{principals: [User:alice, User:bob], operation: Describe}}]
{extra}"""


def apply(root: Path, tmp: Path) -> None:
    """apply --verify: exit 0 only when DescribeAcls reports every entry added and none removed."""
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--audit-log", str(tmp / "audit.jsonl")) == 0


def test_manifest_acls_allow_deny_and_removal(kafka_secure: KafkaCluster, users: dict[str, str],
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = f"acl-{uuid.uuid4().hex[:6]}-"
    first, later = f"{prefix}one", f"{prefix}later"
    create_topic(kafka_secure, first)

    root = make_repo(tmp_path / "repo", kafka_secure, {"acls.yaml": ACLS.format(prefix=prefix, extra="")})
    apply(root, tmp_path)
    until(lambda: consume(kafka_secure, "alice", users["alice"], first) == [b"hello"], "alice reads")
    assert denied(kafka_secure, "bob", users["bob"], first)  # no ACL names bob

    create_topic(kafka_secure, later)  # created after the prefixed ACL: covered by it
    assert consume(kafka_secure, "alice", users["alice"], later) == [b"hello"]

    deny = (f"    - type: Topic\n      name: {later}\n      entries:\n"
            "        - {principal: User:alice, operation: Read, permission: Deny}\n")
    make_repo(root, kafka_secure, {"acls.yaml": ACLS.format(prefix=prefix, extra=deny)})
    apply(root, tmp_path)
    until(lambda: denied(kafka_secure, "alice", users["alice"], later), "the Deny wins over the prefixed Allow")
    assert consume(kafka_secure, "alice", users["alice"], first) == [b"hello"]  # the Deny is for `later` only
    # `describe` says what the brokers just did: alice denied Read on `later` (the Deny), allowed on `first`;
    # bob may Describe but not Read (the consumer above was refused)
    capsys.readouterr()
    said = {t: _access(root, t, capsys) for t in (first, later)}
    assert said[later][("User:alice", "Read")] == "denied" and said[first][("User:alice", "Read")] == "allowed"
    assert said[later][("User:alice", "Describe")] == "allowed"  # implied by the prefixed Read, never denied
    assert said[first][("User:bob", "Describe")] == "allowed" and ("User:bob", "Read") not in said[first]

    # the Allow removed: planned as disruptive, naming the principal that loses access
    make_repo(root, kafka_secure, {"acls.yaml": WITHOUT_READ.format(prefix=prefix, extra=deny)})
    out = tmp_path / "plan.json"
    assert cli(root, "plan", "c1", "--out", str(out)) == 0
    (plan,) = plans_from_json(out.read_text())
    (change,) = [a for a in plan.acls if a.resource.name == prefix]
    assert change.risk == "disruptive" and change.losing == ("User:alice",)
    assert [(e.principal, e.operation, e.permission) for e in change.remove] == [("User:alice", "Read", "Allow")]
    assert cli(root, "show", str(out), "--format", "markdown") == 0
    comment = capsys.readouterr().out
    assert "Access removed" in comment and "User:alice loses Read" in comment
    assert cli(root, "apply", str(out), "--auto-approve", "--verify", "--audit-log",
               str(tmp_path / "audit.jsonl")) == 0
    until(lambda: denied(kafka_secure, "alice", users["alice"], first), "alice is denied once the Allow is gone")


def _access(root: Path, topic: str, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], str]:
    """`describe c1 topics/<topic> --format json`: (principal, operation) -> the live verdict."""
    assert cli(root, "describe", "c1", f"topics/{topic}", "--format", "json") == 0
    (view,) = json.loads(capsys.readouterr().out)["access"]
    return {(e["principal"], e["operation"]): e["live"]["verdict"] for e in view["entries"] if e["live"]}


def _znodes(kafka: KafkaCluster, paths: list[str]) -> dict[str, bytes]:
    host, _, chroot = kafka.zk_connect.partition("/")
    client = KazooClient(hosts=f"{host}/{chroot}")
    client.start(timeout=15)
    try:
        return {p: client.get(p)[0] for p in paths}
    finally:
        client.stop()
        client.close()


def _newest(kafka: KafkaCluster, parent: str) -> bytes:
    host, _, chroot = kafka.zk_connect.partition("/")
    client = KazooClient(hosts=f"{host}/{chroot}")
    client.start(timeout=15)
    try:
        newest = max(client.get_children(parent))
        data: bytes = client.get(f"{parent}/{newest}")[0]
        return data
    finally:
        client.stop()
        client.close()


def test_acls_written_by_kafka_acl_command_plan_as_no_change(kafka_secure: KafkaCluster, tmp_path: Path) -> None:
    name = f"cmd-{uuid.uuid4().hex[:6]}"
    props = f"zookeeper.connect={kafka_secure.zk_connect}"
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--allow-principal",
               "User:carol", "--operation", "Read", "--topic", name)
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--consumer",
               "--allow-principal", "User:dave", "--topic", f"{name}-", "--group", f"{name}-g",
               "--resource-pattern-type", "prefixed")
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--deny-principal",
               "User:eve", "--deny-host", "10.1.2.3", "--operation", "Write", "--transactional-id", name)
    literal, prefixed = f"/kafka-acl/Topic/{name}", f"/kafka-acl-extended/prefixed/Group/{name}-g"
    txn_node = f"/kafka-acl/TransactionalId/{name}"
    kafka_bytes = _znodes(kafka_secure, [literal, prefixed, txn_node])
    for data in kafka_bytes.values():  # single-entry nodes: byte for byte as Kafka's ResourceZNode.encode
        assert encode_acls(sorted(decode_acls(data, "test"))) == data
    # the change notifications AclCommand made for the last literal and the last prefixed resource
    literal_change, extended_change = _newest(kafka_secure, "/kafka-acl-changes"), \
        _newest(kafka_secure, "/kafka-acl-extended-changes")
    assert literal_change == encode_change(AclResource("TransactionalId", "LITERAL", name))[1]
    assert extended_change == encode_change(AclResource("Group", "PREFIXED", f"{name}-g"))[1]

    manifest = f"""apiVersion: reconciler/v1
kind: Acls
meta: {{cluster: c1}}
spec:
  resources:
    - type: Topic
      name: {name}
      entries: [{{principal: User:carol, operation: Read}}]
    - type: TransactionalId
      name: {name}
      entries: [{{principal: User:eve, host: 10.1.2.3, operation: Write, permission: Deny}}]
  consumers:
    - principals: [User:dave]
      topicPrefix: {name}-
      groupPrefix: {name}-g
"""
    root = make_repo(tmp_path / "repo", kafka_secure, {"acls.yaml": manifest})
    out = tmp_path / "plan.json"
    assert cli(root, "plan", "c1", "--out", str(out)) == 0
    (plan,) = plans_from_json(out.read_text())
    mine = [a for a in plan.acls if name in a.resource.name]
    assert mine == [], [a.resource.display for a in mine]


def test_import_declares_live_acls_that_plan_as_no_change(kafka_secure: KafkaCluster, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    name = f"imp-{uuid.uuid4().hex[:6]}"
    props = f"zookeeper.connect={kafka_secure.zk_connect}"
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--producer",
               "--allow-principal", "User:frank", "--topic", name, "--transactional-id", name, "--idempotent")
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--deny-principal",
               "User:gina", "--operation", "Read", "--operation", "Describe", "--topic", f"{name}-",
               "--resource-pattern-type", "prefixed")
    user = f"{name}-scram"  # a SCRAM user as kafka-configs.sh --zookeeper makes one: its password cannot be
    scram_user(kafka_secure, user, plant(f"lk-import-{name}"))  # recovered, so it stays unmanaged, by name
    out = tmp_path / "imported"
    assert cli(out, "import", "c1", "--zookeeper", kafka_secure.zk_connect, "--out", str(out),
               "--kafka-version", "3.9", "--force") == 0
    assert "SCRAM credentials of" in capsys.readouterr().err
    written = (out / "clusters" / "c1" / "acls.yaml").read_text()
    assert "User:frank" in written and "IdempotentWrite" in written and "PREFIXED" in written
    assert user not in "".join(p.read_text() for p in (out / "clusters" / "c1").glob("*.yaml"))
    plan_out = tmp_path / "plan.json"
    assert cli(out, "plan", "c1", "--out", str(plan_out)) == 0
    (plan,) = plans_from_json(plan_out.read_text())
    assert plan.acls == () and plan.unmanaged_acls == ()  # every live ACL declared, each exactly
    assert plan.is_empty  # and the SCRAM user left alone


def test_a_plan_made_stale_by_kafka_acl_command_writes_nothing(kafka_secure: KafkaCluster, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    name = f"stale-{uuid.uuid4().hex[:6]}"
    props = f"zookeeper.connect={kafka_secure.zk_connect}"
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--allow-principal",
               "User:hank", "--operation", "Read", "--topic", name)
    manifest = (f"apiVersion: reconciler/v1\nkind: Acls\nmeta: {{}}\nspec:\n  resources:\n    - type: Topic\n"
                f"      name: {name}\n      entries: [{{principal: User:ivy, operation: Read}}]\n")
    root = make_repo(tmp_path / "repo", kafka_secure, {"acls.yaml": manifest})
    out = tmp_path / "plan.json"
    assert cli(root, "plan", "c1", "--out", str(out)) == 0
    # someone changes the same resource after the plan: its znode version moves on
    kafka_tool("kafka.admin.AclCommand", "--authorizer-properties", props, "--add", "--allow-principal",
               "User:jay", "--operation", "Read", "--topic", name)
    before = _znodes(kafka_secure, [f"/kafka-acl/Topic/{name}"])
    assert cli(root, "apply", str(out), "--auto-approve", "--audit-log", str(tmp_path / "audit.jsonl")) == 3
    assert _znodes(kafka_secure, [f"/kafka-acl/Topic/{name}"]) == before  # nothing written
    client = admin(kafka_secure)  # and the brokers still report both entries Kafka's tool wrote
    try:
        from kafka.admin import (
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePatternFilter,
            ResourceType,
        )

        found, _ = client.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                  ResourcePatternFilter(ResourceType.TOPIC, name,
                                                                        ACLResourcePatternType.LITERAL)))
    finally:
        client.close()
    assert sorted(a.principal for a in found) == ["User:hank", "User:jay"]
