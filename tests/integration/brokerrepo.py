"""A manifests repository for the real brokers of tests/kafkabrokers.py, and the Admin API questions the
tests ask the brokers themselves (kafka-python, never our own read-back)."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from reconciler.cli.main import run
from reconciler.plan import Plan, plans_from_json
from tests.kafkabrokers import KafkaCluster

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {{name: {name}}}
spec:
  kafkaVersion: "3.9"
  zookeeper: {{connect: "{zk}"}}
  adminClient: {{bootstrapServers: "{bootstrap}"}}
  brokers: [{brokers}]
  passwordEncoder: {{secret: {{file: {secret_file}}}}}
"""


def make_repo(root: Path, kafka: KafkaCluster, documents: dict[str, str], *, name: str = "c1",
              secret: str | None = None) -> Path:
    """clusters/<name>/cluster.yaml for `kafka` plus `documents` (file name -> YAML); the encoder secret
    file holds `secret` (default: the brokers' own)."""
    cluster = root / "clusters" / name
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "encoder-secret.txt").write_text(kafka.secret if secret is None else secret)
    (cluster / "cluster.yaml").write_text(CLUSTER.format(
        name=name, zk=kafka.zk_connect, bootstrap=kafka.bootstrap,
        brokers=", ".join(map(str, kafka.brokers)), secret_file="encoder-secret.txt"))
    for old in cluster.glob("*.yaml"):
        if old.name != "cluster.yaml" and old.name not in documents:
            old.unlink()
    for file, text in documents.items():
        (cluster / file).write_text(text)
    return root


def cli(root: Path, *args: str) -> int:
    return run(["--repo", str(root), "--no-color", *args])


def plan_file(root: Path, tmp: Path, cluster: str = "c1") -> tuple[Path, Plan]:
    out = tmp / f"plan-{cluster}.json"
    code = cli(root, "plan", cluster, "--out", str(out))
    assert code == 0, code
    return out, plans_from_json(out.read_text())[0]


def admin(kafka: KafkaCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=kafka.bootstrap.split(","), request_timeout_ms=10000)


def broker_config(kafka: KafkaCluster, broker: int, key: str) -> dict[str, Any] | None:
    """Broker `broker`'s own DescribeConfigs entry for `key` (with synonyms), as kafka-python returns it."""
    client = admin(kafka)
    try:
        answer = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker),
                                                         configs={key: None})],
                                         include_synonyms=True, config_filter="all")
    finally:
        client.close()
    entry = answer.get("broker", {}).get(str(broker), {}).get(key)
    return None if entry is None else dict(entry)


def topic_config(kafka: KafkaCluster, topic: str, key: str) -> dict[str, Any] | None:
    client = admin(kafka)
    try:
        answer = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: None})],
                                         include_synonyms=True, config_filter="all")
    finally:
        client.close()
    entry = answer.get("topic", {}).get(topic, {}).get(key)
    return None if entry is None else dict(entry)


def dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def reset_dynamic_configs(kafka: KafkaCluster, tmp: Path) -> None:
    """Every broker's dynamic configs (`<default>` and per-broker) removed through our own apply, so the next
    test on the shared brokers starts from their server.properties alone."""
    empty = "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: {b}}}\nspec: {{config: {{}}}}\n"
    docs = {f"broker-{b}.yaml": empty.format(b=b) for b in ("default", *map(str, kafka.brokers))}
    # under the shared brokers' one cluster directory name (one target, one directory: ownership.py)
    root = make_repo(tmp / "reset-repo", kafka, docs)
    code = cli(root, "apply", "c1", "--auto-approve", "--allow-destructive", "--audit-log", str(tmp / "reset.jsonl"))
    assert code == 0, "could not reset the brokers' dynamic configs"


def hand_over(kafka: KafkaCluster, to: str) -> None:
    """Around a test that applies to the shared brokers under another cluster directory name (the README's
    `local-dev`): the owner record names `to`, so neither that directory nor the other tests' `c1` is refused as
    a second directory managing the same target (ownership.py) — what `meta.renamedFrom` does for an operator."""
    from datetime import datetime

    from kazoo.client import KazooClient

    from reconciler.backend import Owner
    from reconciler.zk.owner import claim_owner, read_owner

    client = KazooClient(hosts=kafka.zk_connect, timeout=10)
    client.start(timeout=15)
    try:
        recorded = read_owner(client, "/reconciler")
        owner = Owner(to, "tests", datetime.now(UTC).isoformat())
        assert claim_owner(client, "/reconciler", owner, False,
                           replacing=recorded.cluster if recorded else None).cluster == to
    finally:
        client.stop()
        client.close()
