"""Issue 44: config changes on a KRaft cluster go in shared IncrementalAlterConfigs requests (as Kafka's Admin client
sends them), judged by a real Kafka 4.x node (tests/kraftbrokers.py) through kafka-python's own Admin API: every
topic of every request takes its value, and a resource the cluster refuses within a shared request is named, with
nothing of the plan written."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from reconciler.kraft import operations
from reconciler.kraft.admin import KraftAdmin
from tests.integration.brokerrepo import cli
from tests.integration.test_kraft_backend import admin, apply, eventually, kraft_repo
from tests.kraftbrokers import KraftCluster

BROKERS = ('apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n'
           '    min.insync.replicas: "1"\n')


def topics_doc(prefix: str, count: int, retention: int) -> str:
    lines = [f"    {prefix}-{i:02d}: {{config: {{retention.ms: \"{retention}\"}}}}" for i in range(count)]
    return ("apiVersion: reconciler/v1\nkind: Topics\nmeta: {name: batch}\nspec:\n"
            "  defaults: {partitions: 1, replicationFactor: 1}\n  topics:\n" + "\n".join(lines) + "\n")


def retentions(bootstrap: str, names: list[str]) -> dict[str, tuple[str, str]]:
    client = admin(bootstrap)
    try:
        answer = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n, configs={"retention.ms": None})
                                          for n in names], config_filter="all")["topic"]
    finally:
        client.close()
    return {n: (answer[n]["retention.ms"]["value"], answer[n]["retention.ms"]["config_source"]) for n in names}


def test_topic_configs_in_shared_requests_are_all_taken(kraft4: KraftCluster, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, count = f"batch-{uuid.uuid4().hex[:6]}", 23
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 86400000)})
    assert apply(root, "k1", tmp_path) == 0
    monkeypatch.setattr(operations, "CONFIG_BATCH", 10)
    sent: list[int] = []
    real = KraftAdmin.alter_many

    def counted(self: KraftAdmin, resources: Any, validate_only: bool, node: int | None = None) -> Any:
        if not validate_only:
            sent.append(len(resources))
        return real(self, resources, validate_only, node)

    monkeypatch.setattr(KraftAdmin, "alter_many", counted)
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 172800000)})
    assert apply(root, "k1", tmp_path) == 0
    assert sent == [10, 10, 3]  # 23 resources, 10 a request
    got = eventually(lambda: retentions(kraft4.bootstrap, names),
                     lambda r: all(v == ("172800000", "DYNAMIC_TOPIC_CONFIG") for v in r.values()))
    assert got == dict.fromkeys(names, ("172800000", "DYNAMIC_TOPIC_CONFIG"))
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0


def test_a_resource_refused_within_a_shared_request_is_named_and_nothing_is_written(
        kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster default (removing min.insync.replicas while ELR is enabled: refused by Kafka 4.x's
    `ConfigurationControlManager`) shares its validateOnly request with five topics' changes: the refusal names
    brokers/<default>, and no topic takes its new value."""
    prefix, count = f"shared-{uuid.uuid4().hex[:6]}", 5
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 86400000)})
    assert apply(root, "k1", tmp_path) == 0
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS.replace('    min.insync.replicas: "1"\n',
                                                                  '    log.cleaner.threads: "2"\n'),
                                  "topics.yaml": topics_doc(prefix, count, 172800000)})
    capsys.readouterr()
    assert apply(root, "k1", tmp_path, "--allow-destructive") == 1
    err = capsys.readouterr().err
    assert "brokers/<default> config" in err and "min.insync.replicas cannot be removed while ELR is enabled" in err
    assert not any(f"topics/{n} config" in err for n in names)  # the topics were not refused
    assert retentions(kraft4.bootstrap, names) == dict.fromkeys(names, ("86400000", "DYNAMIC_TOPIC_CONFIG"))
