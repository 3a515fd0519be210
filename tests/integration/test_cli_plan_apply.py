"""The command line over a real ZooKeeper: exit codes, plan files, guards and confirmation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run
from reconciler.zk.layout import encode_controller, encode_entity_config

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "%s"}
  brokers: [1, 2, 3]
"""
TOPICS = """apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
    orders: {partitions: 3, replicationFactor: 2, config: {retention.ms: %s}}
"""


def make_repo(root: Path, connect: str, retention: str = "86400000") -> Path:
    cluster = root / "clusters" / "c1"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "cluster.yaml").write_text(CLUSTER % connect)
    (cluster / "topics.yaml").write_text(TOPICS % retention)
    return root


def cli(root: Path, *args: str) -> int:
    return run(["--repo", str(root), *args])


def test_plan_exit_codes_plan_file_and_apply(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    plan_file = tmp_path / "plan.json"
    assert cli(root, "plan", "--detailed-exitcode", "--out", str(plan_file)) == 2
    out = capsys.readouterr().out
    assert "+ topic orders (3 partitions, replication factor 2)" in out
    assert cli(root, "plan") == 0  # without --detailed-exitcode changes are not an error
    capsys.readouterr()
    assert cli(root, "apply", str(plan_file), "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 0
    assert zk_client.get("/config/topics/orders")[0] == b'{"version":1,"config":{"retention.ms":"86400000"}}'
    assert cli(root, "plan", "--detailed-exitcode") == 0
    assert "No changes" in capsys.readouterr().out


def test_markdown_and_json_formats_on_stdout_only(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    assert cli(root, "plan", "--format", "json") == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is the artefact alone
    assert document["plans"][0]["topicsToCreate"][0]["name"] == "orders"
    assert cli(root, "plan", "--format", "markdown") == 0
    assert "`c1`" in capsys.readouterr().out


def test_destructive_change_needs_the_flag(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect, retention="604800000")
    audit = str(tmp_path / "a.jsonl")
    assert cli(root, "apply", "c1", "--auto-approve", "--audit-log", audit) == 0
    make_repo(root, zk_connect, retention="3600000")  # 7d -> 1h: data is deleted
    capsys.readouterr()
    assert cli(root, "apply", "c1", "--auto-approve", "--audit-log", audit) == 1
    assert "--allow-destructive" in capsys.readouterr().err
    assert b'"604800000"' in zk_client.get("/config/topics/orders")[0]  # nothing written
    assert cli(root, "apply", "c1", "--auto-approve", "--allow-destructive", "--audit-log", audit) == 0
    assert b'"3600000"' in zk_client.get("/config/topics/orders")[0]


def test_stale_plan_file_exits_3_and_writes_nothing(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    zk_client.create("/config/topics/orders", encode_entity_config({"retention.ms": "1000"}), makepath=True)
    zk_client.create("/brokers/topics/orders", b'{"version":3,"partitions":{"0":[1,2],"1":[2,3],"2":[3,1]},'
                     b'"adding_replicas":{},"removing_replicas":{}}', makepath=True)
    root = make_repo(tmp_path / "repo", zk_connect)
    plan_file = tmp_path / "plan.json"
    assert cli(root, "plan", "--out", str(plan_file)) == 0
    zk_client.set("/config/topics/orders", encode_entity_config({"retention.ms": "2000"}))  # a manual edit
    capsys.readouterr()
    assert cli(root, "apply", str(plan_file), "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 3
    err = capsys.readouterr().err
    assert "stale plan" in err and "reconciler plan" in err
    assert zk_client.get("/config/topics/orders")[0] == encode_entity_config({"retention.ms": "2000"})


def test_edited_plan_file_is_refused(tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    plan_file = tmp_path / "plan.json"
    assert cli(root, "plan", "--out", str(plan_file)) == 0
    plan_file.write_text(plan_file.read_text().replace('"86400000"', '"1"'))
    capsys.readouterr()
    assert cli(root, "apply", str(plan_file), "--auto-approve") == 1
    assert "edited after planning" in capsys.readouterr().err


def test_kraft_controlled_cluster_is_refused(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    zk_client.create("/controller", encode_controller(3000, kraft_controller_epoch=5), makepath=True)
    root = make_repo(tmp_path / "repo", zk_connect)
    assert cli(root, "apply", "c1", "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 1
    assert "KRaft" in capsys.readouterr().err
    assert zk_client.exists("/config/topics/orders") is None


def test_apply_without_a_terminal_needs_auto_approve(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    assert cli(root, "apply", "c1") == 1  # pytest's stdin is not a terminal
    err = capsys.readouterr().err
    assert "--auto-approve" in err
    assert "+ topic orders" in err  # the plan was shown (on stderr) before refusing
    assert zk_client.exists("/config/topics/orders") is None


def test_invalid_manifests_stop_plan_before_reading_zookeeper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", "127.0.0.1:1/nowhere", retention="forever")
    assert cli(root, "plan") == 1
    err = capsys.readouterr().err
    assert "clusters/c1/topics.yaml:6:" in err and "retention.ms" in err
