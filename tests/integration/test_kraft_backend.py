"""The KRaft backend on real KRaft clusters (tests/kraftbrokers.py: a single combined-mode node of Kafka 4.x and
one of Kafka 3.9), and the same manifests on a ZooKeeper-mode 3.9 cluster (the `kafka` fixture): what counts
is what each cluster answers through its Admin API (kafka-python, never our own read-back)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.protocol.admin import DescribeClientQuotasRequest

from tests.integration.brokerrepo import cli, make_repo
from tests.kafkabrokers import KafkaCluster
from tests.kraftbrokers import KraftCluster

T = TypeVar("T")

KRAFT_CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {{name: {name}}}
spec:
  kafkaVersion: "{version}"
  kraft: {{bootstrapServers: "{bootstrap}"{extra}}}
  brokers: [1]
"""


def kraft_repo(root: Path, kraft: KraftCluster, documents: dict[str, str], *, name: str = "k1",
               extra: str = ", allowPlaintextPasswords: true") -> Path:
    cluster = root / "clusters" / name
    cluster.mkdir(parents=True, exist_ok=True)
    version = "4.1" if kraft.version == "4.x" else "3.9"
    (cluster / "cluster.yaml").write_text(KRAFT_CLUSTER.format(name=name, version=version, bootstrap=kraft.bootstrap,
                                                               extra=extra))
    for old in cluster.glob("*.yaml"):
        if old.name != "cluster.yaml" and old.name not in documents:
            old.unlink()
    for file, text in documents.items():
        (cluster / file).write_text(text)
    return root


def manifests(topic: str) -> dict[str, str]:
    """One manifest set for both backends: cluster default and broker 1 configs, a topic with its config,
    user and client quotas. `<default>` declares min.insync.replicas=1: Kafka 4.x's KRaft clusters are formatted
    with it as a cluster-level dynamic config (KIP-966), which may not be removed while ELR is enabled."""
    return {
        "brokers.yaml": (
            "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
            "    log.cleaner.threads: \"2\"\n    min.insync.replicas: \"1\"\n    max.connections.per.ip: \"500\"\n"
            "---\napiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
            "    log.cleaner.backoff.ms: \"20000\"\n"),
        "topics.yaml": (
            f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {topic}:\n"
            "      partitions: 2\n      replicationFactor: 1\n"
            "      config: {retention.ms: \"86400000\", max.message.bytes: \"2097152\"}\n"),
        "quotas.yaml": (
            "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n"
            "  users:\n    kraft-alice: {producer_byte_rate: 1048576}\n"
            "  clients:\n    default: {consumer_byte_rate: 2097152}\n"),
    }


def admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10000)


BROKER_KEYS = ("log.cleaner.threads", "log.cleaner.backoff.ms", "min.insync.replicas", "max.connections.per.ip")
TOPIC_KEYS = ("retention.ms", "max.message.bytes")


DECLARED_QUOTA_ENTITIES = {(("user", "kraft-alice"),), (("client-id", "<default>"),), (("client-id", "default"),)}
DECLARED_QUOTAS = {"producer_byte_rate", "consumer_byte_rate"}


def answers(bootstrap: str, topic: str) -> dict[str, Any]:
    """What the cluster says: broker 1's and the topic's DescribeConfigs (value and source), the quotas."""
    client = admin(bootstrap)
    try:
        broker = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                                         configs=dict.fromkeys(BROKER_KEYS))],
                                         config_filter="all")["broker"]["1"]
        topics = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                         configs=dict.fromkeys(TOPIC_KEYS))],
                                         config_filter="all")["topic"][topic]

        async def ask() -> Any:
            return await client._manager.send(DescribeClientQuotasRequest(components=[], strict=False))

        quotas = client._manager.run(ask)
        layout = {t["name"]: len(t["partitions"]) for t in client.describe_topics([topic])}
    finally:
        client.close()
    return {
        "broker": {k: (broker[k]["value"], broker[k]["config_source"]) for k in BROKER_KEYS},
        "topic": {k: (topics[k]["value"], topics[k]["config_source"]) for k in TOPIC_KEYS},
        # the quotas this test declares (the session's ZooKeeper-mode cluster also holds other tests' quotas;
        # a null entity name is the <default> entity)
        "quotas": sorted((entity, tuple(sorted((v.key, v.value) for v in q.values if v.key in DECLARED_QUOTAS)))
                         for q in quotas.entries
                         if (entity := tuple((e.entity_type, e.entity_name or "<default>") for e in q.entity))
                         in DECLARED_QUOTA_ENTITIES),
        "partitions": layout,
    }


def eventually(ask: Callable[[], T], ok: Callable[[T], bool], timeout_s: float = 15.0) -> T:
    """KRaft brokers learn a write from the metadata log a moment after the controllers commit it."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = ask()
        if ok(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def apply(root: Path, name: str, tmp: Path, *extra: str) -> int:
    return cli(root, "apply", name, "--auto-approve", "--allow-dirty", "--audit-log", str(tmp / "audit.jsonl"),
               *extra)


def test_same_manifests_give_the_same_answers_on_zookeeper_and_kraft(
        kafka: KafkaCluster, kraft4: KraftCluster, tmp_path: Path) -> None:
    topic = f"same-{uuid.uuid4().hex[:8]}"
    zk_root = make_repo(tmp_path / "zk", kafka, manifests(topic))
    kr_root = kraft_repo(tmp_path / "kraft", kraft4, manifests(topic))
    assert apply(zk_root, "c1", tmp_path) == 0
    assert apply(kr_root, "k1", tmp_path) == 0
    on_zk = eventually(lambda: answers(kafka.bootstrap, topic), lambda a: a["broker"]["log.cleaner.threads"][0] == "2")
    on_kraft = eventually(lambda: answers(kraft4.bootstrap, topic), lambda a: a == on_zk)
    assert on_kraft == on_zk
    assert on_kraft["broker"]["log.cleaner.threads"] == ("2", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert ((("user", "kraft-alice"),), (("producer_byte_rate", 1048576.0),)) in on_kraft["quotas"]
    assert on_kraft["broker"]["log.cleaner.backoff.ms"] == ("20000", "DYNAMIC_BROKER_CONFIG")
    assert on_kraft["topic"]["retention.ms"] == ("86400000", "DYNAMIC_TOPIC_CONFIG")
    assert on_kraft["partitions"] == {topic: 2}
    # a second plan finds nothing to do on either backend
    assert cli(zk_root, "plan", "c1", "--detailed-exitcode") == 0
    assert cli(kr_root, "plan", "k1", "--detailed-exitcode") == 0


def test_kraft39_applies_verifies_and_plans_no_changes(kraft39: KraftCluster, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"k39-{uuid.uuid4().hex[:8]}"
    root = kraft_repo(tmp_path, kraft39, manifests(topic))
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 2
    assert apply(root, "k1", tmp_path, "--verify") == 0
    assert "every broker took every change" in capsys.readouterr().err
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0
    # growing the topic and changing a key: CreatePartitions and IncrementalAlterConfigs SET/DELETE
    docs = manifests(topic)
    docs["topics.yaml"] = docs["topics.yaml"].replace("partitions: 2", "partitions: 4").replace(
        ', max.message.bytes: "2097152"', "")
    kraft_repo(tmp_path, kraft39, docs)
    assert apply(root, "k1", tmp_path, "--verify", "--allow-destructive") == 0  # max.message.bytes lowered
    after = eventually(lambda: answers(kraft39.bootstrap, topic), lambda a: a["partitions"] == {topic: 4})
    assert after["partitions"] == {topic: 4}
    assert after["topic"]["max.message.bytes"][1] == "DEFAULT_CONFIG"
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0


def test_kraft_refusal_by_validate_only_is_reported_and_nothing_written(
        kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A removal only KRaft refuses (the cluster-level min.insync.replicas while ELR is enabled,
    `ConfigurationControlManager.validateAlterConfig`, Kafka 4.x): the plan reports it as the cluster's refusal
    (validateOnly), and apply writes nothing of the plan (not even the topic)."""
    topic = f"refused-{uuid.uuid4().hex[:8]}"
    docs = manifests(topic)
    docs["brokers.yaml"] = docs["brokers.yaml"].replace('    min.insync.replicas: "1"\n', "")
    root = kraft_repo(tmp_path, kraft4, docs)
    capsys.readouterr()
    assert cli(root, "plan", "k1") == 1
    err = capsys.readouterr().err
    assert "the cluster refuses (validateOnly)" in err
    assert "min.insync.replicas cannot be removed while ELR is enabled" in err
    assert apply(root, "k1", tmp_path) == 1
    client = admin(kraft4.bootstrap)
    try:
        assert topic not in client.list_topics()
    finally:
        client.close()


def test_kraft_acls_scram_and_passwords(kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # plans find the fingerprints in the audit log apply writes (RECONCILER_AUDIT_LOG: the same for both)
    monkeypatch.setenv("RECONCILER_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    prefix = f"acl-{uuid.uuid4().hex[:8]}"
    user = f"scram-{uuid.uuid4().hex[:8]}"
    pw = tmp_path / "clusters" / "k1" / "pw.txt"
    pw.parent.mkdir(parents=True)
    pw.write_text("correct horse battery")
    docs = {
        "acls.yaml": ("apiVersion: reconciler/v1\nkind: Acls\nmeta: {cluster: k1}\nspec:\n  resources:\n"
                      f"    - type: Topic\n      name: {prefix}\n      pattern: PREFIXED\n"
                      "      entries: [{principal: User:bob, operation: Read}]\n"),
        "quotas.yaml": ("apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n  scramUsers:\n"
                        f"    {user}:\n      SCRAM-SHA-256: {{password: {{secret: {{file: pw.txt}}}}, "
                        "iterations: 8192}\n"),
        "brokers.yaml": ("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
                         "    listener.name.internal.ssl.key.password: {secret: {file: pw.txt}}\n"),
    }
    # without TLS and without the operator's consent, a plan sending a password is refused
    root = kraft_repo(tmp_path, kraft4, docs, extra="")
    capsys.readouterr()
    assert cli(root, "plan", "k1") == 1
    assert "allowPlaintextPasswords" in capsys.readouterr().err
    root = kraft_repo(tmp_path, kraft4, docs)
    assert apply(root, "k1", tmp_path) == 0
    client = admin(kraft4.bootstrap)
    try:
        acls, _ = client.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                 ResourcePatternFilter(ResourceType.TOPIC, prefix,
                                                                       ACLResourcePatternType.PREFIXED)))
        assert [(a.principal, a.operation.name) for a in acls] == [("User:bob", "READ")]
        creds = client.describe_user_scram_credentials([user])[user]["credential_infos"]
        assert [(c["mechanism"].name, c["iterations"]) for c in creds] == [("SCRAM_SHA_256", 8192)]
        key = "listener.name.internal.ssl.key.password"
        entry = eventually(lambda: client.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                                                          configs={key: None})],
                                                           config_filter="all")["broker"]["1"].get(key),
                           lambda e: e is not None)
        assert entry["is_sensitive"] and entry["value"] is None and entry["config_source"] == "DYNAMIC_BROKER_CONFIG"
    finally:
        client.close()
    # nothing to read back: unchanged is decided from the apply's fingerprints, and said so
    capsys.readouterr()
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0
    assert "KRaft never returns passwords" in capsys.readouterr().out
    # a new value behind the same reference is a change
    pw.write_text("another password")
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 2


def test_a_pull_request_cannot_point_a_kraft_cluster_elsewhere(kraft4: KraftCluster, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """PR mode reads a KRaft cluster with the base revision's spec.kraft, as it does spec.zookeeper: the PR's
    bootstrap servers (here a proxy that counts connections, in front of the same cluster) are never dialled."""
    from tests.integration.test_gitops import commit, invoke, make_repo
    from tests.tcpproxy import logging_proxy

    host, port = kraft4.bootstrap.rsplit(":", 1)
    topic = f"pr-{uuid.uuid4().hex[:8]}"
    root = tmp_path / "manifests"
    repo = make_repo(root)
    docs = {f"clusters/k1/{name}": text for name, text in manifests(topic).items() if name != "quotas.yaml"}
    cluster = KRAFT_CLUSTER.format(name="k1", version="4.1", bootstrap=kraft4.bootstrap, extra="")
    commit(repo, "cluster k1", {"clusters/k1/cluster.yaml": cluster, **docs})
    repo.git.checkout("-b", "feature")
    with logging_proxy((host, int(port))) as attacker:
        evil = cluster.replace(kraft4.bootstrap, attacker.address)
        commit(repo, "innocent retention change", {
            "clusters/k1/cluster.yaml": evil,
            "clusters/k1/topics.yaml": docs["clusters/k1/topics.yaml"].replace("86400000", "3600000")})
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
        assert code == 0, err
        assert attacker.connections == 0 and not attacker.sent
    assert "spec.kraft" in out and "not used by this check" in out
    assert "retention.ms" in out and attacker.address not in err


def test_a_plan_made_before_the_cluster_changed_is_refused(kraft4: KraftCluster, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """No znode versions on KRaft: apply reads again what the plan saw, and a value changed meanwhile (here by
    kafka-python, as kafka-configs.sh would) refuses the whole plan with exit 3, before anything is written."""
    from kafka.admin import ConfigResource as Resource

    topic = f"stale-{uuid.uuid4().hex[:8]}"
    root = kraft_repo(tmp_path, kraft4, manifests(topic))
    assert apply(root, "k1", tmp_path) == 0
    docs = manifests(topic)
    docs["brokers.yaml"] = docs["brokers.yaml"].replace('backoff.ms: "20000"', 'backoff.ms: "25000"')
    docs["topics.yaml"] += "    also-" + topic + ":\n      partitions: 1\n      replicationFactor: 1\n"
    kraft_repo(tmp_path, kraft4, docs)
    plan = tmp_path / "plan.json"
    assert cli(root, "plan", "k1", "--out", str(plan)) == 0
    client = admin(kraft4.bootstrap)
    try:
        client.alter_configs([Resource(ConfigResourceType.BROKER, "1", configs={"log.cleaner.backoff.ms": "30000"})],
                             raise_on_unknown=False, incremental=True)
        eventually(lambda: answers(kraft4.bootstrap, topic)["broker"]["log.cleaner.backoff.ms"][0],
                   lambda v: v == "30000")
        capsys.readouterr()
        assert cli(root, "apply", str(plan), "--auto-approve", "--audit-log", str(tmp_path / "audit.jsonl")) == 3
        err = capsys.readouterr().err
        assert "changed since the plan was made" in err and "brokers/1 log.cleaner.backoff.ms: changed meanwhile" in err
        assert f"also-{topic}" not in client.list_topics()  # nothing of the plan written
    finally:
        client.close()
