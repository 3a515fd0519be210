"""`reconciler describe` against a real ZooKeeper: the effective value and its source chain, live and as the
manifests would make it (what Kafka 3.9's DescribeConfigs would list: TOPIC_CONFIG > DYNAMIC_BROKER_CONFIG >
DYNAMIC_DEFAULT_BROKER_CONFIG > STATIC_BROKER_CONFIG > DEFAULT_CONFIG), secrets hidden, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run
from reconciler.zk.layout import encode_entity_config, encode_topic_assignment
from tests.leakcheck import plant

LIVE_PASSWORD = plant("lk-describe-live-password-8h2")
CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "%s"}
  brokers: [1, 2]
"""
BROKERS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: default}
spec:
  static: {file: server.properties}
  config:
    log.retention.ms: 172800000
"""
TOPICS = """apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
    orders: {partitions: 2, replicationFactor: 2}
"""
KEYSTORE = "listener.name.external.ssl.keystore.password"


@pytest.fixture
def cluster(tmp_path: Path, zk_connect: str, zk_client: KazooClient) -> Path:
    zk_client.create("/config/brokers/<default>", encode_entity_config(
        {"log.retention.ms": "86400000", "num.io.threads": "16"}), makepath=True)
    zk_client.create("/config/brokers/1", encode_entity_config(
        {"num.io.threads": "32", KEYSTORE: LIVE_PASSWORD}), makepath=True)
    zk_client.create("/config/topics/orders", encode_entity_config({"retention.ms": "3600000"}), makepath=True)
    zk_client.create("/brokers/topics/orders", encode_topic_assignment({0: [1, 2], 1: [2, 1]}), makepath=True)
    root = tmp_path / "repo" / "clusters" / "c1"
    root.mkdir(parents=True)
    (root / "cluster.yaml").write_text(CLUSTER % zk_connect)
    (root / "brokers.yaml").write_text(BROKERS)
    (root / "server.properties").write_text("broker.id=1\nlog.retention.hours=48\n")
    (root / "topics.yaml").write_text(TOPICS)
    return tmp_path / "repo"


def describe(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(["describe", "c1", *args, "--repo", str(repo)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def config(out: str, entity: str, key: str) -> dict[str, Any]:
    doc = json.loads(out)
    found = next(e for e in doc["entities"] if e["entity"] == entity)
    result: dict[str, Any] = next(c for c in found["configs"] if c["name"] == key)
    return result


def chain(side: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    return [(s["source"], s["name"], s["value"], s["origin"]) for s in side["synonyms"]]


def test_topic_source_chain_live_and_planned(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = describe(cluster, capsys, "topics/orders", "retention.ms", "--format", "json")
    assert code == 0
    entry = config(out, "topics/orders", "retention.ms")
    assert (entry["live"]["value"], entry["live"]["source"]) == ("3600000", "TOPIC_CONFIG")
    assert chain(entry["live"]) == [
        ("TOPIC_CONFIG", "retention.ms", "3600000", "/config/topics/orders"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.ms", "86400000", "/config/brokers/<default>"),
        ("STATIC_BROKER_CONFIG", "log.retention.hours", "48", "clusters/c1/server.properties:2"),
        ("DEFAULT_CONFIG", "log.retention.hours", "168", "Kafka default"),
    ]
    # the manifests declare orders without its own retention: apply removes the override, <default> rules
    assert (entry["manifests"]["value"], entry["manifests"]["source"]) == ("172800000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert chain(entry["manifests"])[0] == ("DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.ms", "172800000",
                                            "clusters/c1/brokers.yaml:7")
    assert entry["differs"] is True


def test_broker_chain_and_secrets(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = describe(cluster, capsys, "brokers/1", "--format", "json")
    assert code == 0 and LIVE_PASSWORD not in out
    threads = config(out, "brokers/1", "num.io.threads")
    assert chain(threads["live"]) == [
        ("DYNAMIC_BROKER_CONFIG", "num.io.threads", "32", "/config/brokers/1"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "num.io.threads", "16", "/config/brokers/<default>"),
        ("DEFAULT_CONFIG", "num.io.threads", "8", "Kafka default"),
    ]
    # brokers/1 is declared by no manifest (left alone); <default> is declared without num.io.threads (removed)
    assert [s[0] for s in chain(threads["manifests"])] == ["DYNAMIC_BROKER_CONFIG", "DEFAULT_CONFIG"]
    secret = config(out, "brokers/1", KEYSTORE)
    assert secret["live"] == {"value": None, "source": "DYNAMIC_BROKER_CONFIG", "sensitive": True,
                              "synonyms": [{"name": KEYSTORE, "value": None, "source": "DYNAMIC_BROKER_CONFIG",
                                            "layer": "brokers/1", "origin": "/config/brokers/1"}]}
    code, text, _ = describe(cluster, capsys, "brokers/1", KEYSTORE)
    assert code == 0 and "(sensitive)" in text and LIVE_PASSWORD not in text


def test_text_lists_what_is_not_at_kafkas_default_and_writes_nothing(
    cluster: Path, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = {p: zk_client.get(p)[1].version for p in ("/config/brokers/<default>", "/config/topics/orders")}
    code, out, err = describe(cluster, capsys)
    assert code == 0
    lines = out.splitlines()
    assert {"brokers/<default>", "brokers/1", "brokers/2  (no config znode)", "topics/orders"} <= set(lines)
    orders = lines[lines.index("topics/orders") + 1:]
    row = next(r for r in orders if r.startswith("retention.ms "))
    assert "~" in row and "3600000 (1h)" in row and "topic override" in row and "172800000 (2d)" in row
    assert not any(r.startswith("segment.bytes ") for r in orders[:orders.index("") if "" in orders else None])
    assert "c1: read ZooKeeper" in err  # progress on stderr, the artefact alone on stdout
    code, everything, _ = describe(cluster, capsys, "topics/orders", "--all")
    assert code == 0 and any(r.startswith("segment.bytes ") for r in everything.splitlines())
    assert {p: zk_client.get(p)[1].version for p in versions} == versions


def test_unknown_topic_key_and_entity_are_errors(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = describe(cluster, capsys, "topics/orders", "retention.msec")
    assert code == 1 and "did you mean retention.ms" in err
    code, _, err = describe(cluster, capsys, "widgets/x")
    assert code == 1 and "TYPE/NAME" in err
    code, _, err = describe(cluster, capsys, "groups/x")  # a 4.x kind: no such entity in ZooKeeper mode
    assert code == 1 and "only on KRaft clusters" in err
    code, _, err = describe(cluster, capsys, "topics/nowhere")
    assert code == 1 and "neither in ZooKeeper nor in the manifests" in err
    code, out, _ = describe(cluster, capsys, "clients/idle")  # nothing set anywhere: said, not an empty table
    assert code == 0 and out == "clients/idle  (no config znode)\nevery key at Kafka's default (--all lists them)\n"
