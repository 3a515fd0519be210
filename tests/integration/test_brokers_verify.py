"""`apply` on real Kafka 3.9 brokers, and `verify_plan`'s judgement of what they took. Every fact asserted is
what a broker reports through its Admin API (kafka-python), never what we read back from ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.apply import load_apply_settings
from reconciler.brokers.verify import verify_plan
from reconciler.model import EntityRef
from reconciler.plan import Change, EntityPlan, Plan, plan_to_json
from reconciler.verify.report import VerifyReport
from tests.integration.brokerrepo import broker_config, cli, make_repo, plan_file, topic_config
from tests.kafkabrokers import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DEFAULTS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {{broker: default}}
spec:
  config:
{config}
"""
PER_BROKER = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {{broker: {broker}}}
spec:
  config:
{config}
"""
TOPICS = """apiVersion: reconciler/v1
kind: Topics
meta: {{}}
spec:
  topics:
{topics}
"""
QUOTAS = """apiVersion: reconciler/v1
kind: Quotas
meta: {}
spec:
  users:
    verify-alice: {producer_byte_rate: 1048576, consumer_byte_rate: 2097152}
  clients:
    verify-app: {request_percentage: 50}
  ips:
    127.0.0.9: {connection_creation_rate: 20}
"""


def indent(lines: dict[str, str]) -> str:
    return "\n".join(f"    {k}: {v}" for k, v in lines.items())


def verify(root: Path, plan: Plan, timeout_s: float = 20.0) -> VerifyReport:
    cluster = load_apply_settings(root, [plan.cluster])[plan.cluster].cluster
    return verify_plan(plan, cluster, root, timeout_s=timeout_s, interval_s=0.3)


def apply_file(root: Path, path: Path, tmp: Path) -> int:
    return cli(root, "apply", str(path), "--auto-approve", "--audit-log", str(tmp / "audit.jsonl"))


def test_a_clean_apply_is_taken_by_every_broker(kafka: KafkaCluster, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", kafka, {
        "defaults.yaml": DEFAULTS.format(config=indent({"log.cleaner.backoff.ms": 21000,
                                                        "max.connections.per.ip": 5000})),
        "broker-2.yaml": PER_BROKER.format(broker=2, config=indent({"log.cleaner.backoff.ms": 22000})),
        "topics.yaml": TOPICS.format(topics="    verify-orders: {partitions: 3, replicationFactor: 2, "
                                            "config: {retention.ms: 3600000, cleanup.policy: compact}}"),
        "quotas.yaml": QUOTAS,
    })
    path, plan = plan_file(root, tmp_path)
    assert apply_file(root, path, tmp_path) == 0
    report = verify(root, plan)
    assert report.ok, report.text_lines()
    assert report.brokers == (1, 2, 3)

    # the brokers' own answers: <default> on 1 and 3, the per-broker override on 2 (the default beneath it)
    for broker in (1, 3):
        entry = broker_config(kafka, broker, "log.cleaner.backoff.ms")
        assert entry is not None
        assert (entry["value"], entry["config_source"]) == ("21000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    entry = broker_config(kafka, 2, "log.cleaner.backoff.ms")
    assert entry is not None
    assert (entry["value"], entry["config_source"]) == ("22000", "DYNAMIC_BROKER_CONFIG")
    assert [(s["source"], s["value"]) for s in entry["synonyms"]][:2] == [
        ("DYNAMIC_BROKER_CONFIG", "22000"), ("DYNAMIC_DEFAULT_BROKER_CONFIG", "21000")]
    topic = topic_config(kafka, "verify-orders", "retention.ms")
    assert topic is not None and (topic["value"], topic["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")

    # a per-broker key replaced by another, and a partition increase: taken too
    make_repo(root, kafka, {
        "defaults.yaml": DEFAULTS.format(config=indent({"log.cleaner.backoff.ms": 21000,
                                                        "max.connections.per.ip": 5000})),
        "broker-2.yaml": PER_BROKER.format(broker=2, config=indent({"max.connections.per.ip": 6000})),
        "topics.yaml": TOPICS.format(topics="    verify-orders: {partitions: 4, replicationFactor: 2, "
                                            "config: {retention.ms: 3600000, cleanup.policy: compact}}"),
        "quotas.yaml": QUOTAS,
    })
    path, plan = plan_file(root, tmp_path)
    assert {e.ref.display for e in plan.entities} == {"brokers/2"}
    assert [(p.name, p.target) for p in plan.partition_increases] == [("verify-orders", 4)]
    assert apply_file(root, path, tmp_path) == 0
    report = verify(root, plan)
    assert report.ok, report.text_lines()
    entry = broker_config(kafka, 2, "log.cleaner.backoff.ms")
    assert entry is not None and (entry["value"], entry["config_source"]) == ("21000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    entry = broker_config(kafka, 2, "max.connections.per.ip")
    assert entry is not None and (entry["value"], entry["config_source"]) == ("6000", "DYNAMIC_BROKER_CONFIG")


def _write_plan(tmp: Path, plan: Plan) -> Path:
    path = tmp / "handmade-plan.json"
    path.write_text(plan_to_json(plan.with_id()))
    return path


def _default_version(kafka: KafkaCluster) -> int | None:
    client = KazooClient(hosts=kafka.zk_connect)
    client.start(timeout=15)
    try:
        stat = client.exists("/config/brokers/<default>")
        return None if stat is None else int(stat.version)
    finally:
        client.stop()
        client.close()


@pytest.mark.broker_rejects
def test_a_value_the_broker_refuses_is_not_taken(kafka: KafkaCluster, tmp_path: Path) -> None:
    """num.io.threads above twice the running count: the manifests' rules pass it when they believe a
    larger static value, the broker refuses the whole update (DynamicThreadPool.validateReconfiguration)."""
    root = make_repo(tmp_path / "repo", kafka, {})
    ref = EntityRef("brokers", "<default>")
    bad = Plan("c1", entities=(EntityPlan(ref, _default_version(kafka), (
        Change("num.io.threads", "+", after="100"), Change("log.cleaner.io.max.bytes.per.second", "+",
                                                            after="5.0E7"))),))
    # the plan file is one an operator could have made with stale static facts; apply executes it exactly
    assert apply_file(root, _write_plan(tmp_path, bad), tmp_path) == 0
    try:
        report = verify(root, bad, timeout_s=6)
        assert not report.ok
        lines = "\n".join(report.text_lines())
        problems = {(p.key, p.status, p.where) for p in report.problems()}
        assert ("num.io.threads", "not_taken", "brokers 1, 2, 3") in problems, lines
        # the other key of the refused update is not in effect either: the broker runs the old value
        assert ("log.cleaner.io.max.bytes.per.second", "not_taken", "brokers 1, 2, 3") in problems, lines
        entry = broker_config(kafka, 1, "num.io.threads")
        assert entry is not None and entry["value"] == "8"  # the broker's own word: still 8 threads
        assert any("num.io.threads" in line for line in kafka.dropped_configs().get(1, []))
    finally:  # remove both keys: the brokers apply their dynamic configs again
        undo = Plan("c1", entities=(EntityPlan(ref, _default_version(kafka), (
            Change("num.io.threads", "-", before="100"),
            Change("log.cleaner.io.max.bytes.per.second", "-", before="5.0E7"))),))
        assert apply_file(root, _write_plan(tmp_path, undo), tmp_path) == 0
        assert verify(root, undo).ok


@pytest.mark.broker_rejects
def test_a_password_encoded_with_another_secret_is_not_taken(kafka: KafkaCluster, tmp_path: Path) -> None:
    """The manifests' passwordEncoder.secret is not the brokers' password.encoder.secret: the write succeeds,
    every broker drops the password ("could not be decoded, ignoring"), and verification says so."""
    key = "listener.name.plaintext.ssl.key.password"  # a password, reconfigurable on an existing listener
    docs = {"broker-2.yaml": PER_BROKER.format(broker=2, config=f"    {key}: {{secret: {{file: jaas.txt}}}}")}
    root = make_repo(tmp_path / "repo", kafka, docs, secret="not-the-brokers-secret")
    (root / "clusters" / "c1" / "jaas.txt").write_text("key-password-b")
    path, plan = plan_file(root, tmp_path)
    assert apply_file(root, path, tmp_path) == 0
    try:
        report = verify(root, plan, timeout_s=5)
        assert not report.ok
        assert {(p.key, p.status, p.where) for p in report.problems()} == {(key, "not_taken", "broker 2")}
        assert broker_config(kafka, 2, key) is None  # the broker holds no such config
        assert any("could not be decoded" in line for line in kafka.dropped_configs().get(2, []))
        assert "not-the-brokers-secret" not in json.dumps(report.to_json())

        # with the brokers' own secret the same password is taken, present as dynamic and sensitive
        make_repo(root, kafka, docs)
        (root / "clusters" / "c1" / "jaas.txt").write_text("key-password-c")
        path, plan = plan_file(root, tmp_path)
        assert apply_file(root, path, tmp_path) == 0
        report = verify(root, plan)
        assert report.ok, report.text_lines()
        entry = broker_config(kafka, 2, key)
        assert entry is not None
        assert (entry["is_sensitive"], entry["config_source"], entry["value"]) == (
            True, "DYNAMIC_BROKER_CONFIG", None)
    finally:
        make_repo(root, kafka, {"broker-2.yaml": PER_BROKER.format(broker=2, config="    log.cleaner.threads: 1")})
        assert cli(root, "apply", "c1", "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 0


def test_a_broker_that_is_down_is_unanswered_not_taken(kafka: KafkaCluster, tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", kafka, {
        "defaults.yaml": DEFAULTS.format(config=indent({"log.cleaner.backoff.ms": 23000}))})
    kafka.stop_broker(3)
    try:
        path, plan = plan_file(root, tmp_path)
        assert apply_file(root, path, tmp_path) == 0
        report = verify(root, plan, timeout_s=3)
        assert not report.ok
        assert {(p.status, p.where) for p in report.problems()} == {("unreachable", "broker 3")}
        assert "log.cleaner.backoff.ms" in {p.key for p in report.problems()}
        taken = {(r.expectation.key, r.expectation.target) for r in report.results if r.outcome.status == "taken"}
        assert {("log.cleaner.backoff.ms", "1"), ("log.cleaner.backoff.ms", "2")} <= taken
    finally:
        kafka.start_broker(3)
    # once back, broker 3 reads its dynamic configs from ZooKeeper at start-up: now all three took it
    report = verify(root, plan)
    assert report.ok, report.text_lines()
    entry = broker_config(kafka, 3, "log.cleaner.backoff.ms")
    assert entry is not None and (entry["value"], entry["config_source"]) == ("23000", "DYNAMIC_DEFAULT_BROKER_CONFIG")


def test_apply_verify_command_exit_codes_report_and_audit(
    kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = tmp_path / "audit.jsonl"
    root = make_repo(tmp_path / "repo", kafka, {
        "defaults.yaml": DEFAULTS.format(config=indent({"log.cleaner.backoff.ms": 24000}))})
    capsys.readouterr()
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--verify-format", "json",
               "--audit-log", str(audit)) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout: the verification report alone
    assert [(v["cluster"], v["verified"], v["notTaken"], v["unreachable"]) for v in document["verifications"]] == [
        ("c1", True, 0, 0)]
    assert "c1: verified: every broker took every change" in captured.err
    # once, not nested in the progress line (issue 39 item 9: "c1: verify on brokers at …: c1: verified: …")
    assert captured.err.count("verified: every broker took every change") == 1, captured.err
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    assert entries[-1]["event"] == "verify" and entries[-1]["verified"] is True

    kafka.stop_broker(1)
    try:
        make_repo(root, kafka, {"defaults.yaml": DEFAULTS.format(config=indent({"log.cleaner.backoff.ms": 25000}))})
        assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--verify-timeout", "3s",
                   "--verify-format", "markdown", "--audit-log", str(audit)) == 4
        captured = capsys.readouterr()
        assert "**no answer** `brokers/<default>` `log.cleaner.backoff.ms` on broker 1" in captured.out
        assert "brokers/<default> log.cleaner.backoff.ms: no answer on broker 1: the broker is not registered" \
            in captured.err
        last = json.loads(audit.read_text().splitlines()[-1])
        assert (last["verified"], last["unreachable"], last["taken"]) == (False, 1, 2)
    finally:
        kafka.start_broker(1)
