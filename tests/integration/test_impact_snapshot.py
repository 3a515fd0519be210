"""`reconciler snapshot` and `reconciler impact` against a real ZooKeeper: a small cluster read into Parquet,
read back, and assessed both from that inventory and live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run
from reconciler.model import BrokerRegistration
from reconciler.zk import layout

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CONFIGS = {
    "/config/topics/orders": {"retention.ms": "86400000"},
    "/config/topics/logs": {},
    "/config/brokers/<default>": {"log.retention.ms": "604800000", "num.io.threads": " 16"},
    "/config/brokers/1": {"listener.name.internal.ssl.key.password": "c2FsdA==:not-a-real-encoding"},
    "/config/users/alice": {"SCRAM-SHA-256": "salt=abc,stored_key=def,server_key=ghi,iterations=4096"},
    "/config/clients/<default>": {"producer_byte_rate": "1048576"},
}


def write_cluster(client: KazooClient) -> None:
    for broker, rack in ((1, "r1"), (2, "r2")):
        reg = BrokerRegistration(broker, (f"PLAINTEXT://b{broker}:9092",), {"PLAINTEXT": "PLAINTEXT"}, rack)
        client.create(layout.broker_path(broker), layout.encode_broker_registration(reg), makepath=True)
    client.create("/brokers/topics/orders", layout.encode_topic_assignment({0: [1, 2], 1: [2, 1]}), makepath=True)
    client.create("/brokers/topics/logs", layout.encode_topic_assignment({0: [1, 2]}), makepath=True)
    for path, config in CONFIGS.items():
        client.create(path, layout.encode_entity_config(config), makepath=True)


def write_manifests(root: Path, connect: str) -> None:
    cluster = root / "clusters" / "c1"
    (cluster / "static").mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1, labels: {env: test}}\n"
        f"spec:\n  kafkaVersion: \"3.6\"\n  zookeeper: {{connect: \"{connect}\"}}\n  brokers: [1, 2]\n")
    (cluster / "static" / "broker-2.properties").write_text("log.retention.hours=24\n")
    (cluster / "brokers.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\n"
        "spec:\n  config: {log.retention.ms: 3600000, num.io.threads: 16}\n---\n"
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 2}\n"
        "spec:\n  static: {file: static/broker-2.properties}\n  config: {}\n")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = run(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    return out


def test_snapshot_then_impact(spark: Any, zk_client: KazooClient, zk_connect: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    write_cluster(zk_client)
    repo, inventory = tmp_path / "repo", tmp_path / "inventory"
    write_manifests(repo, zk_connect)
    sizes = tmp_path / "sizes.csv"
    sizes.write_text("cluster,topic,partition,size_bytes\nc1,orders,0,100\nc1,orders,1,200\nc1,logs,0,50\n"
                     "other,logs,0,999\n")

    assert cli(capsys, "--repo", str(repo), "snapshot", "--out", str(inventory), "--sizes", str(sizes)) == ""

    def table(name: str) -> set[tuple[Any, ...]]:
        rows = spark.read.parquet(str(inventory / name)).collect()
        return {tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in rows}

    assert table("brokers") == {("c1", 1, "r1", ("PLAINTEXT://b1:9092",)), ("c1", 2, "r2", ("PLAINTEXT://b2:9092",))}
    assert table("topics") == {("c1", "orders", 2, 2), ("c1", "logs", 1, 2)}
    assert table("partitions") == {("c1", "orders", 0, (1, 2)), ("c1", "orders", 1, (2, 1)), ("c1", "logs", 0, (1, 2))}
    assert table("configs") == {
        ("c1", "topics", "orders", "retention.ms", "86400000"),
        ("c1", "brokers", "<default>", "log.retention.ms", "604800000"),
        ("c1", "brokers", "<default>", "num.io.threads", "16"),  # canonical: " 16" trimmed
        ("c1", "brokers", "1", "listener.name.internal.ssl.key.password", "(sensitive)"),
        ("c1", "users", "alice", "SCRAM-SHA-256", "(sensitive)"),
        ("c1", "clients", "<default>", "producer_byte_rate", "1048576"),
    }
    assert table("static") == {("c1", "2", "log.retention.hours", "24")}
    assert table("sizes") == {("c1", "orders", 0, 100), ("c1", "orders", 1, 200), ("c1", "logs", 0, 50)}
    meta = json.loads((inventory / "inventory.json").read_text())
    assert meta["clusters"] == ["c1"] and meta["sizes"] is True

    # <default> log.retention.ms 7d -> 1h: logs changes (1 partition, 50 bytes); orders keeps its override
    from_inventory = json.loads(cli(capsys, "--repo", str(repo), "impact", "--inventory", str(inventory),
                                    "--format", "json"))
    assert (from_inventory["topicsAffected"], from_inventory["partitionsAffected"]) == (1, 1)
    assert from_inventory["bytesAffected"] == 50
    assert from_inventory["brokersAffected"] == 2
    assert from_inventory["byKey"][0]["key"] == "retention.ms"
    assert from_inventory["byKey"][0]["risk"] == "destructive"

    live = json.loads(cli(capsys, "--repo", str(repo), "impact", "--format", "json"))
    assert live["source"]["before"] == "live state read from the clusters"
    for key in ("clustersAffected", "brokersAffected", "topicsAffected", "partitionsAffected"):
        assert live[key] == from_inventory[key]
    assert live["bytesAffected"] is None  # no sizes without an inventory
    assert live["byKey"] == [{**row, "bytes": None} for row in from_inventory["byKey"]]
    no_sizes = {"bytes": None, "bytesDeletedEstimate": None, "topicBytesDeleted": None}
    assert live["byCluster"] == [{**row, **no_sizes} for row in from_inventory["byCluster"]]
