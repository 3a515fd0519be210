"""Issue 42, done when: on real brokers (Kafka 3.9 in ZooKeeper mode, Kafka 4.1 in KRaft mode), lowering a topic's
retention names exactly the consumer group that has not read what it deletes, with a count within the segment
granularity of what the broker then really deletes.

Each run: a topic of 2 partitions with 240 records each, CreateTime one hour apart from 10 days ago (each its own
batch, so `segment.ms` = 1 d rolls a segment every 25 records: `LogSegment.shouldRoll` compares record
timestamps). Group `half` (an active member, client id `billing-app`) has read and committed 120 of each
partition, `all` has read everything, `empty` joined and left without committing. The manifests lower
retention.ms from 30 d to 3 d; `reconciler impact` (live: the offsets at exactly 3 d) must name `half` alone.
On KRaft the same change also goes through the PR check first (`plan --git-base main --inventory`, a snapshot
of main): the comment opens with the consumers at risk and the base's `maxUnreadLoss` policy blocks it. Then
`reconciler apply` writes it, the brokers' retention check (every 2 s on the test brokers) deletes the
segments older than 3 d, and the records `half` really lost are counted from the log start the brokers then
report (kafka-python's consumer, `beginning_offsets`): the estimate is never below it and above it by at most
one segment per partition (read from the broker's own segment files).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from reconciler.cli.main import run
from tests.integration.brokerrepo import make_repo
from tests.integration.test_kraft_backend import KRAFT_CLUSTER
from tests.kafkabrokers import KafkaCluster
from tests.kraftbrokers import KraftCluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DAY, HOUR = 86_400_000, 3_600_000
RECORDS, PARTITIONS, READ = 240, 2, 120


def topic_yaml(topic: str, retention_ms: int) -> str:
    return (f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {topic}:\n"
            f"      partitions: {PARTITIONS}\n      replicationFactor: 1\n"
            f"      config: {{retention.ms: \"{retention_ms}\", segment.ms: \"{DAY}\"}}\n")


def prepare(bootstrap: str, topic: str, suffix: str) -> tuple[int, dict[str, KafkaConsumer]]:
    """The topic, its records, the three groups; returns the first record's timestamp and the live member."""
    servers = bootstrap.split(",")
    admin = KafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, topic_configs={
            "retention.ms": str(30 * DAY), "segment.ms": str(DAY)})])
    finally:
        admin.close()
    start = int(time.time() * 1000) - 10 * DAY
    producer = KafkaProducer(bootstrap_servers=servers, linger_ms=0, acks="all")
    try:
        for p in range(PARTITIONS):
            for i in range(RECORDS):  # one batch each: a segment rolls when a batch is a day past its first
                producer.send(topic, value=b"r" * 100, partition=p, timestamp_ms=start + i * HOUR).get(timeout=60)
    finally:
        producer.close()
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

    def member(group: str, client: str) -> KafkaConsumer:
        consumer = KafkaConsumer(topic, bootstrap_servers=servers, group_id=group, client_id=client,
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 max_poll_interval_ms=1_800_000, session_timeout_ms=45_000)
        deadline = time.monotonic() + 120
        read: dict[int, int] = {}
        while time.monotonic() < deadline and sum(read.values()) < PARTITIONS * RECORDS:
            for tp, batch in consumer.poll(timeout_ms=1000).items():
                read[tp.partition] = read.get(tp.partition, 0) + len(batch)
        assert sum(read.values()) == PARTITIONS * RECORDS, read  # it has read every record once
        return consumer

    everything = member(f"all-{suffix}", "audit-app")
    everything.commit({tp: OffsetAndMetadata(RECORDS, "", -1) for tp in tps})
    everything.close()
    half = member(f"half-{suffix}", "billing-app")  # stays a member (Stable) until the test ends
    half.commit({tp: OffsetAndMetadata(READ, "", -1) for tp in tps})  # what it has processed: half
    empty = KafkaConsumer(topic, bootstrap_servers=servers, group_id=f"empty-{suffix}", enable_auto_commit=False)
    deadline = time.monotonic() + 60
    while not empty.assignment() and time.monotonic() < deadline:
        empty.poll(timeout_ms=500)
    empty.close(autocommit=False)  # joined, never committed: Empty, no offsets
    return start, {"half": half}


def segment_records(data_dirs: list[Path], topic: str) -> dict[int, int]:
    """The largest number of records in one segment of each partition, from the broker's own segment files
    (`<base offset>.log`)."""
    out = {}
    for p in range(PARTITIONS):
        bases = sorted(int(f.stem) for d in data_dirs for f in (d / f"{topic}-{p}").glob("*.log"))
        assert bases, f"no segment files of {topic}-{p}"
        out[p] = max(b - a for a, b in zip(bases, [*bases[1:], RECORDS], strict=True))
    return out


def log_starts(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","))
    try:
        found = consumer.beginning_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
        return {tp.partition: int(o) for tp, o in found.items()}
    finally:
        consumer.close()


def cli(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = run(["--repo", str(root), "--no-color", *args])
    out, err = capsys.readouterr()
    assert code == 0, err[-4000:]
    return out


POLICY = """apiVersion: reconciler/v1
kind: Policy
meta: {name: consumers}
spec:
  rules:
    - id: unread-loss
      maxUnreadLoss: 10
      message: a retention change may not delete what a consumer group has not read
"""


def pull_request(root: Path, topic: str, group: str, write_cluster: Callable[[dict[str, str]], None],
                 capsys: pytest.CaptureFixture[str]) -> None:
    """The PR check: main keeps 30 d and a maxUnreadLoss policy, the snapshot is taken there; a branch lowers
    retention to 3 d. The comment opens with the consumers at risk, and the policy (the base's) blocks it."""
    import git

    write_cluster({"topics.yaml": topic_yaml(topic, 30 * DAY)})
    (root / "clusters" / "policies.yaml").write_text(POLICY)
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t")
        config.set_value("user", "email", "t@t")
    repo.git.add("--all")
    repo.index.commit("base")
    inventory = root.parent / "inventory"
    cli(root, capsys, "snapshot", "--out", str(inventory))
    meta = json.loads((inventory / "inventory.json").read_text())
    assert meta["offsets"]["c1"]["readAt"]  # when they were read, said
    repo.git.checkout("-b", "lower-retention")
    write_cluster({"topics.yaml": topic_yaml(topic, 3 * DAY)})
    repo.git.add("--all")
    repo.index.commit("retention 3d")
    capsys.readouterr()
    code = run(["--repo", str(root), "--no-color", "plan", "--git-base", "main", "--format", "markdown",
                "--inventory", str(inventory)])
    comment, err = capsys.readouterr()
    assert code == 1, err[-3000:]  # blocked: the base's maxUnreadLoss
    assert comment.index("Consumers at risk") < comment.index("### Fleet impact")
    assert comment.index("Consumers at risk") < comment.index(f"topics/{topic}")  # above the plan's changes
    assert f"`{group}` on `{topic}` (`c1`) is 5d–7d behind: retention 3d would delete ~" in comment
    assert "blocked by 1 error(s)" in comment.splitlines()[1]
    assert f"rule unread-loss (clusters/policies.yaml:6): cluster c1: topics/{topic}: consumer group " \
           f"'{group}' would lose" in comment
    assert "clusters/c1/topics.yaml:" in comment  # at the line that lowers the retention


def scenario(root: Path, bootstrap: str, write_cluster: Callable[[dict[str, str]], None], data_dirs: list[Path],
             capsys: pytest.CaptureFixture[str], *, pr: bool = False) -> None:
    suffix = uuid.uuid4().hex[:6]
    topic = f"ledger-{suffix}"
    start, members = prepare(bootstrap, topic, suffix)
    try:
        if pr:
            pull_request(root, topic, f"half-{suffix}", write_cluster, capsys)
        write_cluster({"topics.yaml": topic_yaml(topic, 3 * DAY)})
        summary = json.loads(cli(root, capsys, "impact", "--format", "json"))
        consumers = summary["consumers"]
        rows = [r for r in consumers["rows"] if r["topic"] == topic]
        assert [r["group"] for r in rows] == [f"half-{suffix}"]  # not `all` (read everything), not `empty`
        row = rows[0]
        assert row["records"][0] == row["records"][1]  # 3 d was read exactly: no range
        estimate = row["records"][1]
        assert row["active"] and row["clientIds"] == ["billing-app"] and row["state"] == "Stable"
        age = row["readAtMs"] - (start + READ * HOUR)  # the oldest record it has not read, at the read
        assert row["lagMs"][0] <= age < row["lagMs"][1]
        assert row["lagRecords"] == PARTITIONS * (RECORDS - READ)
        assert consumers["clusters"][0]["readAtMs"] == row["readAtMs"]
        described = json.loads(cli(root, capsys, "describe", "c1", f"topics/{topic}", "--format", "json"))
        groups = {g["group"]: g for g in described["consumers"]["groups"]}  # every group with offsets on it
        assert set(groups) == {f"half-{suffix}", f"all-{suffix}"}  # `empty` committed nothing
        assert groups[f"all-{suffix}"]["records"] == [0, 0] and groups[f"all-{suffix}"]["lagRecords"] == 0
        assert abs(groups[f"half-{suffix}"]["records"][1] - estimate) <= 2  # read again a moment later
        segments = segment_records(data_dirs, topic)
        assert max(segments.values()) <= 30, segments  # the records rolled a segment a day (25 each)

        cli(root, capsys, "apply", "c1", "--auto-approve", "--allow-destructive")
        deadline, starts = time.monotonic() + 120, log_starts(bootstrap, topic)
        while time.monotonic() < deadline:  # until a retention check has run on every partition and settled
            time.sleep(3)
            now = log_starts(bootstrap, topic)
            if now == starts and all(v > 0 for v in now.values()):
                break
            starts = now
        assert all(v > 0 for v in starts.values()), f"the brokers deleted nothing: {starts}"
        lost = sum(max(0, starts[p] - READ) for p in range(PARTITIONS))
        print(f"{topic}: estimated {estimate} unread records deleted, the brokers deleted {lost} of them "
              f"(log starts {starts}, at most {segments} records a segment)")
        # per record: never below what the brokers deleted, above it by at most one segment per partition
        assert lost <= estimate <= lost + sum(segments.values()), (estimate, lost, starts, segments)
        assert lost > 0
    finally:
        for consumer in members.values():
            consumer.close(autocommit=False)


def test_zookeeper_mode_39_names_the_group_that_loses_unread_records(
        kafka: KafkaCluster, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"

    def write(documents: dict[str, str]) -> None:
        make_repo(root, kafka, documents)

    data = [kafka.dir / f"broker-{b}" / "data" for b in kafka.brokers]
    scenario(root, kafka.bootstrap, write, data, capsys)


def test_kraft_41_names_the_group_that_loses_unread_records(
        kraft4: KraftCluster, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"

    state = f", stateTopic: _kr-consumers-{uuid.uuid4().hex[:6]}"

    def write(documents: dict[str, str]) -> None:
        cluster = root / "clusters" / "c1"
        cluster.mkdir(parents=True, exist_ok=True)
        # its own state topic: the shared node's default one records cluster k1 as its owner (ownership.py)
        (cluster / "cluster.yaml").write_text(KRAFT_CLUSTER.format(name="c1", version="4.1",
                                                                   bootstrap=kraft4.bootstrap, extra=state))
        for file, text in documents.items():
            (cluster / file).write_text(text)

    scenario(root, kraft4.bootstrap, write, [kraft4.dir / "data"], capsys, pr=True)
