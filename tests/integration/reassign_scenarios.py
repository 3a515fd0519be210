"""The replica-placement scenarios the issue asks of both backends (tests/integration/test_reassign_zk.py: Kafka
3.9 in ZooKeeper mode; test_reassign_kraft.py: Kafka 4.1 in KRaft mode), each on three real brokers with
broker.rack set (1: a, 2: b, 3: b): the replication factor raised 1 -> 3 while a producer writes and a consumer
reads (no record lost, the throttle seen on the brokers while the replicas move and gone after), a broker
drained, a reassignment interrupted by a killed apply and resumed by the next one, and a cancel (KIP-455). What is
asserted is what the brokers report (Metadata, ListPartitionReassignments, DescribeConfigs through kafka-python),
never the reconciler's own read-back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.admin import NewTopic

from tests.integration.brokerrepo import cli
from tests.integration.moves import (
    BROKER_RATES,
    TOPIC_LISTS,
    Traffic,
    Watcher,
    admin,
    dynamic,
    in_flight,
    layout,
    preload,
    wait_for,
)

MiB = 1 << 20
RACKS = {1: "a", 2: "b", 3: "b"}
# (tmp, topics document, throttle, drained brokers, maxMovingPartitions) -> the repository root
RepoMaker = Callable[[Path, str, int, tuple[int, ...], int], Path]


@dataclass(frozen=True)
class Target:
    """A cluster under test: its brokers' bootstrap servers and ids, its name in the repository, and how a
    repository for it is written (cluster.yaml with spec.reassignment and spec.placement)."""

    bootstrap: str
    brokers: tuple[int, ...]
    cluster: str
    make: RepoMaker

    def repo(self, tmp: Path, topics: str, *, throttle: int, drain: tuple[int, ...] = (),
             max_partitions: int = 50) -> Path:
        return self.make(tmp, topics, throttle, drain, max_partitions)


def placement_yaml(throttle: int, drain: tuple[int, ...], max_partitions: int) -> str:
    """The lines cluster.yaml's spec gets for a reassignment: its throttle and bounds, the brokers drained."""
    text = f"  reassignment: {{throttle: {throttle}, maxMovingPartitions: {max_partitions}}}\n"
    if drain:
        text += f"  placement: {{drain: [{', '.join(map(str, drain))}]}}\n"
    return text


def topics_doc(name: str, partitions: int, rf: int, extra: str = "") -> str:
    return ("apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
            f"    {name}: {{partitions: {partitions}, replicationFactor: {rf}{extra}}}\n")


def no_throttles(target: Target, topic: str) -> bool:
    brokers = dynamic(target.bootstrap, "broker", target.brokers, BROKER_RATES)
    lists = dynamic(target.bootstrap, "topic", [topic], TOPIC_LISTS)
    return not any(brokers.values()) and not any(lists.values())


def create(target: Target, topic: str, assignment: dict[int, list[int]]) -> None:
    client = admin(target.bootstrap)
    try:
        client.create_topics([NewTopic(topic, replica_assignments=assignment)])
    finally:
        client.close()
    wait_for(f"topic {topic}", lambda: (found := layout(target.bootstrap, topic)) and len(found) == len(assignment)
             and all(leader >= 0 for _, _, leader in found.values()))


def scenario_rf_1_to_3_rack_aware_while_producing_and_consuming(target: Target, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"moves-{uuid.uuid4().hex[:8]}"
    root = target.repo(tmp_path, topics_doc(topic, 3, 1), throttle=MiB)
    assert cli(root, "apply", target.cluster, "--auto-approve", "--allow-dirty",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    before = wait_for("the topic's partitions", lambda: (found := layout(target.bootstrap, topic))
                      and len(found) == 3 and all(leader >= 0 for _, _, leader in found.values()) and found)
    assert all(len(r) == 1 for r, _, _ in before.values())
    preload(target.bootstrap, topic, 3, 1.5)

    target.repo(tmp_path, topics_doc(topic, 3, 3), throttle=MiB)
    assert cli(root, "plan", target.cluster, "--format", "markdown") == 0
    comment = capsys.readouterr().out
    assert "| Broker | Receives | Sends |" in comment and "throttled at 1 MiB/s" in comment
    assert "leader/follower.replication.throttled.rate=1048576 on 3 brokers 1,2,3" in comment

    traffic = Traffic(target.bootstrap, topic, 3).start()
    watcher = Watcher(target.bootstrap, target.brokers, topic).start()
    try:
        code = cli(root, "apply", target.cluster, "--auto-approve", "--allow-dirty", "--verify",
                   "--audit-log", str(tmp_path / "a.jsonl"))
    finally:
        watcher.stop()
        traffic.finish()
    assert code == 0
    after = layout(target.bootstrap, topic)
    for p, (replicas, isr, _) in after.items():
        assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3], after
        assert replicas[0] == before[p][0][0]  # the preferred leader stays where it was
        assert {RACKS[b] for b in replicas[:2]} == {"a", "b"}  # the first follower on the other rack
    # the throttle was on the brokers and the moving replicas while the replicas moved, and is gone now
    assert watcher.moving == {(topic, p) for p in range(3)}
    assert all("leader.replication.throttled.rate=1048576" in watcher.broker_rates.get(str(b), set())
               for b in (1, 2, 3)), watcher.broker_rates
    assert any(seen.get("follower.replication.throttled.replicas") for seen in watcher.topic_lists)
    assert no_throttles(target, topic)
    assert traffic.acked and not traffic.failures, traffic.failures[:5]
    assert traffic.lost() == set(), sorted(traffic.lost())[:10]
    assert cli(root, "plan", target.cluster, "--detailed-exitcode") == 0  # converged: nothing left to move


def scenario_drain_moves_every_replica_off_a_broker(target: Target, tmp_path: Path) -> None:
    topic = f"drain-{uuid.uuid4().hex[:8]}"
    create(target, topic, {0: [1, 2], 1: [2, 1], 2: [3, 1], 3: [1, 3], 4: [2, 3], 5: [3, 2]})
    preload(target.bootstrap, topic, 6, 0.2)
    root = target.repo(tmp_path, topics_doc(topic, 6, 2), throttle=50 * MiB, drain=(2,), max_partitions=2)
    assert cli(root, "apply", target.cluster, "--auto-approve", "--allow-dirty", "--verify",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    after = layout(target.bootstrap, topic)
    for replicas, isr, _ in after.values():
        assert 2 not in replicas and len(replicas) == 2 and sorted(isr) == sorted(replicas), after
        assert {RACKS[b] for b in replicas} == {"a", "b"}  # rack-aware: broker 3 took broker 2's place
    assert after[2][0] == (3, 1) and after[3][0] == (1, 3)  # untouched: they held nothing on broker 2
    assert after[1][0][0] == 1 or after[1][0][0] == 3  # its leader was drained: another leads
    assert no_throttles(target, topic) and not in_flight(target.bootstrap)


def _apply_process(root: Path, tmp: Path, cluster: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen([sys.executable, "-m", "reconciler", "--repo", str(root), "--no-color", "apply", cluster,
                             "--auto-approve", "--allow-dirty", "--audit-log", str(tmp / "a.jsonl")],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def scenario_an_interrupted_reassignment_is_resumed_by_the_next_pass(target: Target, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """An apply killed (SIGKILL) while its moves are in flight leaves them moving with their throttles; the next
    plan shows them moving, and the next apply waits for them, then removes the throttles."""
    topic = f"resume-{uuid.uuid4().hex[:8]}"
    create(target, topic, {0: [1], 1: [3]})
    preload(target.bootstrap, topic, 2, 2)
    root = target.repo(tmp_path, topics_doc(topic, 2, 2), throttle=64 * 1024)  # still moving when killed
    process = _apply_process(root, tmp_path, target.cluster)
    try:
        wait_for("the moves in flight", lambda: {tp for tp in in_flight(target.bootstrap) if tp[0] == topic},
                 timeout_s=120)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    moving = {tp for tp in in_flight(target.bootstrap) if tp[0] == topic}
    assert moving, "the moves finished before the apply was killed: raise the data or lower the throttle"
    assert not no_throttles(target, topic)  # the killed pass left its throttles (the next removes them)

    target.repo(tmp_path, topics_doc(topic, 2, 2), throttle=100 * MiB)  # the next pass may go faster
    assert cli(root, "plan", target.cluster) == 0
    shown = capsys.readouterr().out
    assert "already moving" in shown and "(moving; " in shown
    assert cli(root, "apply", target.cluster, "--auto-approve", "--allow-dirty", "--verify",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    after = layout(target.bootstrap, topic)
    assert all(len(r) == 2 and sorted(isr) == sorted(r) for r, isr, _ in after.values()), after
    assert no_throttles(target, topic) and not in_flight(target.bootstrap)


def scenario_cancel_reverts_the_moves_and_removes_the_throttles(target: Target, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"cancel-{uuid.uuid4().hex[:8]}"
    create(target, topic, {0: [1], 1: [2]})
    preload(target.bootstrap, topic, 2, 2)
    root = target.repo(tmp_path, topics_doc(topic, 2, 3), throttle=128 * 1024)
    assert cli(root, "apply", target.cluster, "--auto-approve", "--allow-dirty", "--reassign-wait", "0",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    assert {tp for tp in in_flight(target.bootstrap) if tp[0] == topic} == {(topic, 0), (topic, 1)}
    assert cli(root, "reassignments", target.cluster) == 0
    listed = capsys.readouterr().out
    assert f"{topic}-0: replicas:" in listed and "started by plan" in listed

    assert cli(root, "reassignments", target.cluster, "--cancel") == 0
    wait_for("the cancel", lambda: not {tp for tp in in_flight(target.bootstrap) if tp[0] == topic})
    after = layout(target.bootstrap, topic)
    assert {p: r for p, (r, _, _) in after.items()} == {0: (1,), 1: (2,)}  # back where they were
    assert no_throttles(target, topic)
