"""Thread pools, quotas and a password-encoder rotation on real Kafka 3.9 brokers: what the brokers report
through their Admin API after `apply --verify`, and across restarts."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import DescribeClientQuotasRequest

from tests.integration.brokerrepo import admin, broker_config, cli, make_repo, plan_file
from tests.kafkabrokers import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

BROKER = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {{broker: {broker}}}
spec:
  config:
{config}
"""


def apply_verified(root: Path, tmp: Path, *extra: str) -> None:
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", *extra,
               "--audit-log", str(tmp / "audit.jsonl")) == 0


def client_quotas(kafka: KafkaCluster) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """DescribeClientQuotas with no filter, sent with kafka-python's own protocol classes."""
    client = admin(kafka)

    async def ask() -> Any:
        return await client._manager.send(DescribeClientQuotasRequest(components=[], strict=False))

    try:
        response = client._manager.run(ask)
    finally:
        client.close()
    assert response.error_code == 0
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
            {v.key: v.value for v in entry.values} for entry in response.entries}


def test_thread_pool_resize_and_quotas(kafka: KafkaCluster, tmp_path: Path) -> None:
    quotas = """apiVersion: reconciler/v1
kind: Quotas
meta: {}
spec:
  users:
    q-bob: {producer_byte_rate: 1048576}
    default: {request_percentage: 200}
  userClients:
    q-bob: {q-app: {consumer_byte_rate: 524288}}
  clients:
    q-batch: {producer_byte_rate: 262144}
  ips:
    127.0.0.77: {connection_creation_rate: 15}
"""
    root = make_repo(tmp_path / "repo", kafka, {
        "defaults.yaml": BROKER.format(broker="default", config="    num.io.threads: 12\n    num.network.threads: 4"),
        "quotas.yaml": quotas})
    apply_verified(root, tmp_path)
    for broker in kafka.brokers:  # each broker resized its pools (DynamicThreadPool) and reports it
        for key, value in (("num.io.threads", "12"), ("num.network.threads", "4")):
            entry = broker_config(kafka, broker, key)
            assert entry is not None
            assert (entry["value"], entry["config_source"]) == (value, "DYNAMIC_DEFAULT_BROKER_CONFIG")
    reported = client_quotas(kafka)
    assert reported[(("user", "q-bob"),)] == {"producer_byte_rate": 1048576.0}
    assert reported[(("client-id", "q-app"), ("user", "q-bob"))] == {"consumer_byte_rate": 524288.0}
    assert reported[(("user", None),)] == {"request_percentage": 200.0}
    assert reported[(("client-id", "q-batch"),)] == {"producer_byte_rate": 262144.0}
    assert reported[(("ip", "127.0.0.77"),)] == {"connection_creation_rate": 15.0}

    # back down by less than half each step, as DynamicThreadPool allows; quotas removed with their entities
    make_repo(root, kafka, {"defaults.yaml": BROKER.format(broker="default", config="    num.io.threads: 8"),
                            "quotas.yaml": quotas.replace("{producer_byte_rate: 1048576}",
                                                          "{producer_byte_rate: 2097152}")})
    apply_verified(root, tmp_path, "--allow-destructive")
    entry = broker_config(kafka, 1, "num.network.threads")
    assert entry is not None and (entry["value"], entry["config_source"]) == ("3", "DEFAULT_CONFIG")
    assert client_quotas(kafka)[(("user", "q-bob"),)] == {"producer_byte_rate": 2097152.0}


def test_encoder_secret_rotation_across_a_restart(kafka: KafkaCluster, tmp_path: Path) -> None:
    """A password written with the brokers' secret S; brokers restarted with a new secret N and S as the old
    one re-encode it themselves (DynamicBrokerConfig.maybeReEncodePasswords); the manifests then name N and S:
    plan has nothing to do, a new password is encoded with N and taken, and a restart without S keeps both."""
    # an SSL store password of the PLAINTEXT listener: a password Kafka encodes, reconfigurable on an existing
    # listener (a JAAS config is not: DynamicListenerConfig refuses later updates of such a listener)
    key = "listener.name.plaintext.ssl.key.password"
    jaas = "key-password-{}"
    old = kafka.secret
    root = make_repo(tmp_path / "repo", kafka, {
        "broker-1.yaml": BROKER.format(broker=1, config=f"    {key}: {{secret: {{file: jaas1.txt}}}}")})
    cluster = root / "clusters" / "c1"
    (cluster / "jaas1.txt").write_text(jaas.format("first"))
    apply_verified(root, tmp_path)

    new = uuid.uuid4().hex
    kafka.set_encoder_secrets(new, old)
    kafka.restart_all()
    (cluster / "old-secret.txt").write_text(old)
    make_repo(root, kafka, {
        "broker-1.yaml": BROKER.format(broker=1, config=f"    {key}: {{secret: {{file: jaas1.txt}}}}"),
        "broker-2.yaml": BROKER.format(broker=2, config=f"    {key}: {{secret: {{file: jaas2.txt}}}}")})
    text = (cluster / "cluster.yaml").read_text()
    (cluster / "cluster.yaml").write_text(text.replace(
        "passwordEncoder: {secret: {file: encoder-secret.txt}}",
        "passwordEncoder: {secret: {file: encoder-secret.txt}, oldSecret: {file: old-secret.txt}}"))
    (cluster / "jaas2.txt").write_text(jaas.format("second"))
    _, plan = plan_file(root, tmp_path)
    # broker 1's password was re-encoded by the broker itself with N: the plan decodes it, unchanged
    assert [(e.ref.display, [c.key for c in e.changes]) for e in plan.entities] == [("brokers/2", [key])]
    apply_verified(root, tmp_path)

    kafka.set_encoder_secrets(new, None)  # the old secret retired
    kafka.restart_all()
    for broker in (1, 2):
        entry = broker_config(kafka, broker, key)
        assert entry is not None, f"broker {broker} dropped its password after the rotation"
        assert (entry["config_source"], entry["is_sensitive"]) == ("DYNAMIC_BROKER_CONFIG", True)
    (cluster / "cluster.yaml").write_text(text)
    make_repo(root, kafka, {})  # the passwords stay (undeclared entities are left alone)
    _, plan = plan_file(root, tmp_path)
    assert plan.is_empty


def test_reconcile_verify_reports_not_taken_as_a_failure(
    kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from git import Repo

    root = make_repo(tmp_path / "repo", kafka, {
        "defaults.yaml": BROKER.format(broker="default", config="    log.cleaner.backoff.ms: 26000")})
    repo = Repo.init(root, initial_branch="main")
    repo.index.add([str(p.relative_to(root)) for p in (root / "clusters").rglob("*") if p.is_file()])
    repo.index.commit("first")
    capsys.readouterr()
    args = ["reconcile", "c1", "--once", "--verify", "--verify-timeout", "4s", "--format", "json",
            "--audit-log", str(tmp_path / "audit.jsonl")]
    assert cli(root, *args) == 0
    summary = json.loads(capsys.readouterr().out)
    [cluster] = summary["clusters"]
    assert (cluster["status"], cluster["verification"]["verified"]) == ("applied", True)

    kafka.stop_broker(2)
    try:
        (root / "clusters" / "c1" / "defaults.yaml").write_text(
            BROKER.format(broker="default", config="    log.cleaner.backoff.ms: 27000"))
        repo.index.add(["clusters/c1/defaults.yaml"])
        repo.index.commit("second")
        assert cli(root, *args) == 1
        captured = capsys.readouterr()
        [cluster] = json.loads(captured.out)["clusters"]
        assert (cluster["status"], cluster["verification"]["unreachable"]) == ("not-taken", 1)
        assert "log.cleaner.backoff.ms: no answer on broker 2" in captured.err
    finally:
        kafka.start_broker(2)


def test_guarded_topic_deletion(kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A topic is deleted only when the cluster's policy.deleteTopics names it, as a destructive change shown
    first, and never an internal one; the brokers stop reporting it."""
    topics = """apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
""" + "".join(f"    {name}: {{partitions: 2, replicationFactor: 2}}\n" for name in ("del-keep", "del-tmp-1", "del-old"))
    root = make_repo(tmp_path / "repo", kafka, {"topics.yaml": topics})
    apply_verified(root, tmp_path)
    # removed from the manifests: only unmanaged, never deleted by default
    make_repo(root, kafka, {"topics.yaml": topics.split("    del-tmp-1")[0]})
    _, plan = plan_file(root, tmp_path)
    assert plan.topics_to_delete == () and {"topics/del-tmp-1", "topics/del-old"} <= set(plan.unmanaged)

    cluster = root / "clusters" / "c1" / "cluster.yaml"
    cluster.write_text(cluster.read_text() + "  policy: {deleteTopics: [del-old, del-tmp-*, __consumer*]}\n")
    capsys.readouterr()
    assert cli(root, "plan", "c1", "--format", "markdown") == 0
    comment = capsys.readouterr().out
    first = comment.index("Topics to DELETE")
    assert first < comment.index("Unmanaged") if "Unmanaged" in comment else first > 0
    assert "`del-old`" in comment and "`del-tmp-1`" in comment and "`del-keep`" not in comment.split("Unmanaged")[0]
    _, plan = plan_file(root, tmp_path)
    assert [(t.name, t.partitions, t.matched) for t in plan.topics_to_delete] == [
        ("del-old", 2, "del-old"), ("del-tmp-1", 2, "del-tmp-*")]
    assert plan.max_risk == "destructive"
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--audit-log", str(tmp_path / "a.jsonl")) == 1
    apply_verified(root, tmp_path, "--allow-destructive")  # verified: the brokers no longer report them
    client = admin(kafka)
    try:
        reported = {t["name"]: t["error_code"] for t in client.describe_topics(["del-keep", "del-old", "del-tmp-1"])}
    finally:
        client.close()
    assert reported["del-keep"] == 0 and reported["del-old"] != 0 and reported["del-tmp-1"] != 0
    _, plan = plan_file(root, tmp_path)
    assert plan.is_empty


def test_an_internal_topic_named_for_deletion_is_refused(kafka: KafkaCluster, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", kafka, {})
    cluster = root / "clusters" / "c1" / "cluster.yaml"
    cluster.write_text(cluster.read_text() + "  policy: {deleteTopics: [__consumer_offsets]}\n")
    assert cli(root, "plan", "c1") == 1
