"""Replica placement on real Kafka 3.9 brokers in ZooKeeper mode with broker.rack set: the scenarios of
tests/integration/reassign_scenarios.py (RF 1 -> 3 under load, a drain, an interrupted apply resumed, a cancel)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import reassign_scenarios as scenarios
from tests.integration.brokerrepo import make_repo
from tests.integration.moves import delete_topics
from tests.kafkabrokers import KafkaCluster


@pytest.fixture
def target(kafka_racks: KafkaCluster) -> Iterator[scenarios.Target]:
    """The rack-aware ZooKeeper-mode brokers, without the topics of the tests before (a drain moves every topic)."""
    def make(tmp: Path, topics: str, throttle: int, drain: tuple[int, ...], max_partitions: int) -> Path:
        root = make_repo(tmp / "repo", kafka_racks, {"topics.yaml": topics})
        cluster = root / "clusters" / "c1" / "cluster.yaml"
        cluster.write_text(cluster.read_text() + scenarios.placement_yaml(throttle, drain, max_partitions))
        return root

    delete_topics(kafka_racks.bootstrap)
    yield scenarios.Target(kafka_racks.bootstrap, kafka_racks.brokers, "c1", make)
    delete_topics(kafka_racks.bootstrap)


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
