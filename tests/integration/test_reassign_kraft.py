"""Replica placement on three real Kafka 4.1 KRaft nodes with broker.rack set (scripts/local-kraft-cluster.sh): the
scenarios of tests/integration/reassign_scenarios.py (RF 1 -> 3 under load, a drain, an interrupted apply resumed,
a cancel), through the KRaft backend (its record in the cluster's state topic)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.model import DEFAULT_STATE_TOPIC
from tests.integration import reassign_scenarios as scenarios
from tests.integration.moves import delete_topics
from tests.kraftbrokers import KraftCluster

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {{name: k1}}
spec:
  kafkaVersion: "4.1"
  kraft: {{bootstrapServers: "{bootstrap}"}}
  brokers: [1, 2, 3]
"""


@pytest.fixture
def target(kraft_racks: KraftCluster) -> Iterator[scenarios.Target]:
    """The rack-aware KRaft nodes, without the topics of the tests before (the reconciler's state topic kept)."""
    def make(tmp: Path, topics: str, throttle: int, drain: tuple[int, ...], max_partitions: int) -> Path:
        root = tmp / "repo"
        cluster = root / "clusters" / "k1"
        cluster.mkdir(parents=True, exist_ok=True)
        (cluster / "cluster.yaml").write_text(CLUSTER.format(bootstrap=kraft_racks.bootstrap)
                                              + scenarios.placement_yaml(throttle, drain, max_partitions))
        (cluster / "topics.yaml").write_text(topics)
        return root

    delete_topics(kraft_racks.bootstrap, keep=[DEFAULT_STATE_TOPIC])
    yield scenarios.Target(kraft_racks.bootstrap, kraft_racks.brokers, "k1", make)
    delete_topics(kraft_racks.bootstrap, keep=[DEFAULT_STATE_TOPIC])


def test_rf_1_to_3_rack_aware_while_producing_and_consuming(target: scenarios.Target, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    scenarios.scenario_rf_1_to_3_rack_aware_while_producing_and_consuming(target, tmp_path, capsys)


def test_drain_moves_every_replica_off_a_broker(target: scenarios.Target, tmp_path: Path) -> None:
    scenarios.scenario_drain_moves_every_replica_off_a_broker(target, tmp_path)


def test_an_interrupted_reassignment_is_resumed_by_the_next_pass(target: scenarios.Target, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    scenarios.scenario_an_interrupted_reassignment_is_resumed_by_the_next_pass(target, tmp_path, capsys)


def test_cancel_reverts_the_moves_and_removes_the_throttles(target: scenarios.Target, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    scenarios.scenario_cancel_reverts_the_moves_and_removes_the_throttles(target, tmp_path, capsys)
