"""`reconciler migrate-check` on a real ZooKeeper: a password our apply encoded with the cluster's secret is
reported as aborting the migration when the KRaft controllers are to be given another secret, and not when they
get the right one; configs KRaft ignores, quotas it rejects, ACLs and SCRAM credentials are listed; exit codes
as `plan --detailed-exitcode`. What Kafka really does: tests/integration/test_kraft_migration.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {{name: m1}}
spec:
  kafkaVersion: "3.9"
  zookeeper: {{connect: "{zk}"}}
  brokers: [1]
  passwordEncoder: {{secret: {{file: encoder-secret.txt}}}}
"""
BROKERS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: 1}
spec:
  config:
    listener.name.internal.ssl.key.password: {secret: {file: key-password.txt}}
"""
QUOTAS = """apiVersion: reconciler/v1
kind: Quotas
meta: {}
spec:
  users:
    bob: {request_percentage: 25}
  scramUsers:
    carol:
      SCRAM-SHA-256: {password: {secret: {file: key-password.txt}}, iterations: 4096}
"""
ACLS = """apiVersion: reconciler/v1
kind: Acls
meta: {cluster: m1}
spec:
  resources:
    - type: Topic
      name: orders
      entries: [{principal: User:bob, operation: Read}]
"""


@pytest.fixture
def repo(tmp_path: Path, zk_connect: str, zk_client: KazooClient) -> Path:
    cluster = tmp_path / "clusters" / "m1"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(CLUSTER.format(zk=zk_connect))
    (cluster / "encoder-secret.txt").write_text("the-brokers-secret")
    (cluster / "key-password.txt").write_text("correct horse battery staple")
    (cluster / "brokers.yaml").write_text(BROKERS)
    (cluster / "quotas.yaml").write_text(QUOTAS)
    (cluster / "acls.yaml").write_text(ACLS)
    code = run(["--repo", str(tmp_path), "apply", "m1", "--auto-approve", "--allow-dirty",
                "--audit-log", str(tmp_path / "audit.jsonl")])
    assert code == 0
    # what an older cluster holds besides: a topic config 4.0 removed, a fractional byte rate (as kafka-configs.sh
    # of ZooKeeper mode accepted them)
    for path, config in (("/config/topics/legacy", {"message.format.version": "2.8"}),
                         ("/config/users/dave", {"producer_byte_rate": "1024.5"})):
        zk_client.create(path, json.dumps({"version": 1, "config": config}).encode(), makepath=True)
    return tmp_path


def check(root: Path, *args: str) -> int:
    return run(["--repo", str(root), "--no-color", "migrate-check", "m1", *args])


def test_a_password_the_controllers_cannot_decode_is_reported_to_abort_the_migration(repo: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    wrong = tmp_path / "controller-secret.txt"
    wrong.write_text("another-secret")
    capsys.readouterr()
    assert check(repo, "--controller-secret-file", str(wrong), "--format", "json") == 2
    report = json.loads(capsys.readouterr().out)
    aborts = [(f["where"], f["key"], f["message"]) for f in report["findings"] if f["kind"] == "abort"]
    assert [a[:2] for a in aborts] == [("brokers/1", "listener.name.internal.ssl.key.password")]
    assert "the migration aborts on it" in aborts[0][2] and "nothing is migrated" in aborts[0][2]
    assert report["checkedPasswords"] == 1
    kinds = {(f["kind"], f["where"], f["key"]) for f in report["findings"]}
    assert ("ignored", "topics/legacy", "message.format.version") in kinds
    assert ("rejected", "users/dave", "producer_byte_rate") in kinds
    assert {("action", "ACLs", None), ("action", "SCRAM", None)} <= kinds
    assert '+  kraft: {bootstrapServers: "HOST:9092"}' in report["clusterYaml"]
    assert "correct horse" not in json.dumps(report) and "the-brokers-secret" not in json.dumps(report)

    # with the brokers' own secret nothing aborts; the rest is still to do
    right = tmp_path / "right-secret.txt"
    right.write_text("the-brokers-secret")
    assert check(repo, "--controller-secret-file", str(right), "--bootstrap-servers", "k1:9092,k2:9092") == 2
    text = capsys.readouterr().out
    assert "Aborts the migration" not in text
    assert "Ignored by KRaft (1):" in text and "topics/legacy message.format.version" in text
    assert '+  kraft: {bootstrapServers: "k1:9092,k2:9092"}' in text


def test_a_clean_cluster_exits_0(tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "clusters" / "m1"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(CLUSTER.format(zk=zk_connect))
    (cluster / "encoder-secret.txt").write_text("the-brokers-secret")
    (cluster / "brokers.yaml").write_text("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\n"
                                          "spec:\n  config: {log.cleaner.threads: \"2\"}\n")
    assert run(["--repo", str(tmp_path), "apply", "m1", "--auto-approve", "--allow-dirty",
                "--audit-log", str(tmp_path / "audit.jsonl")]) == 0
    capsys.readouterr()
    assert check(tmp_path) == 0
    assert "Nothing found" in capsys.readouterr().out
