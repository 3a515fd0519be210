"""Ctrl-C (SIGINT) or SIGTERM in the middle of a large apply, through the real command line against a real
ZooKeeper (issue 30, item 2): the apply stops between batches, and what stderr and the audit entry (znode and
JSON-lines log) say was committed is exactly what ZooKeeper holds, the batch whose reply was awaited when the
signal came included; the first entity not committed is really absent; a re-plan and apply converge.

The apply creates NEW topics (assignment and config, no notification) and changes the config of OLD
existing topics (config and notification): plan order puts the creations first. Tiny batches make many.
`tests.integration.faultproc` pauses the process right after it queued its Nth multi (the batch is on its
way to ZooKeeper, its reply not yet read): the signal is served exactly there, which is where the old code
lost count of a batch that did commit.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.integration.reliability import (
    Proc,
    Run,
    cli,
    config_bytes,
    notification_entities,
    seed_topics,
    topic_configs,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

NEW = [f"n-{i:04d}" for i in range(400)]  # created by the apply
OLD = [f"e-{i:04d}" for i in range(400)]  # their config changed by the apply
MANY = [f"n-{i:05d}" for i in range(4000)]  # for a signal at an arbitrary moment: an apply of a few seconds
BEFORE, AFTER = {"retention.ms": "1000"}, {"retention.ms": "2000"}
# RECONCILER_MAX_BATCH_BYTES 2048: ~6 topics or ~12 config changes a batch, ~117 batches
COUNTS = re.compile(
    r"^  (?P<what>committed|not committed|unknown) \((?:batch(?:es)? (?P<start>\d+)(?:-(?P<end>\d+))? of \d+"
    r"|no batch of \d+)[^)]*\): (?P<topics>[\d,]+) topics[^,]*, (?P<partitions>[\d,]+) partitions[^,]*, "
    r"(?P<entities>[\d,]+) entities[^,;]* with (?P<notifications>[\d,]+) notifications"
    r"(?:; first: (?P<first>.*?))?(?: \(and [\d,]+ more\))?$",
    re.M,
)


@dataclass
class Repo:
    root: Path
    audit_log: Path
    new: list[str]
    batch_bytes: int = 2048

    def env(self) -> dict[str, str]:
        return {"RECONCILER_MAX_BATCH_BYTES": str(self.batch_bytes), "RECONCILER_AUDIT_LOG": str(self.audit_log)}


@pytest.fixture
def repo(zk_client: KazooClient, zk_connect: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Repo]:
    new: list[str] = getattr(request, "param", NEW)
    for broker in (1, 2, 3):
        zk_client.create(f"/brokers/ids/{broker}", json.dumps({
            "version": 5, "host": f"b{broker}", "port": 9092, "endpoints": [f"PLAINTEXT://b{broker}:9092"],
            "jmx_port": -1, "timestamp": "0", "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "features": {},
        }).encode(), makepath=True)
    seed_topics(zk_client, dict.fromkeys(OLD, BEFORE))
    directory = tmp_path / "clusters" / "c1"
    directory.mkdir(parents=True)
    (directory / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1}\nspec:\n  kafkaVersion: \"3.6\"\n"
        f"  zookeeper: {{connect: \"{zk_connect}\"}}\n  brokers: [1, 2, 3]\n", encoding="utf-8")
    lines = ["apiVersion: reconciler/v1", "kind: Topics", "meta: {}", "spec:",
             "  defaults: {partitions: 1, replicationFactor: 1}", "  topics:"]
    lines += [f"    {name}: {{config: {{retention.ms: {AFTER['retention.ms']}}}}}" for name in new + OLD]
    (directory / "topics.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    yield Repo(tmp_path, tmp_path / "audit.jsonl", new, 2048 if new is NEW else 1024)


@dataclass(frozen=True)
class Counts:
    entities: int
    notifications: int
    topics: int
    partitions: int
    batches: int
    first: tuple[str, ...]

    @staticmethod
    def of(match: re.Match[str]) -> Counts:
        def n(name: str) -> int:
            return int(match[name].replace(",", ""))

        first = tuple(match["first"].split(", ")) if match["first"] else ()
        batches = 0 if match["start"] is None else int(match["end"] or match["start"]) - int(match["start"]) + 1
        return Counts(n("entities"), n("notifications"), n("topics"), n("partitions"), batches, first)

    @staticmethod
    def audited(record: dict[str, Any]) -> Counts:
        return Counts(record["entitiesWritten"], record["notifications"], record["topicsCreated"],
                      record["partitionsAdded"], record["batches"], tuple(record["first"]))


def reported(run: Run) -> dict[str, Counts]:
    found = {m["what"]: Counts.of(m) for m in COUNTS.finditer(run.stderr)}
    assert {"committed", "not committed"} <= set(found), run
    return found


def in_zookeeper(client: KazooClient, repo: Repo) -> tuple[set[str], set[str], list[str]]:
    """The new topics that exist, the OLD topics whose config changed, and every notification's entity."""
    created = set(client.get_children("/brokers/topics")) & set(repo.new)
    configs = topic_configs(client, OLD)
    assert set(configs.values()) <= {config_bytes(BEFORE), config_bytes(AFTER)}, "a partial entity znode"
    changed = {name for name, data in configs.items() if data == config_bytes(AFTER)}
    return created, changed, notification_entities(client)


def last_audit(client: KazooClient, repo: Repo) -> dict[str, Any]:
    """The newest audit entry, which must be the same in ZooKeeper and in the JSON-lines log."""
    node = max(client.get_children("/reconciler/audit"))
    entry: dict[str, Any] = json.loads(client.get(f"/reconciler/audit/{node}")[0])
    lines = repo.audit_log.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1]) == entry
    return entry


def check_report(run: Run, client: KazooClient, repo: Repo) -> dict[str, Counts]:
    """stderr and the audit entry agree with each other and with ZooKeeper (with ZooKeeper reachable, the report
    never has batches of unknown outcome: `test_apply_faults` covers those)."""
    assert run.code == 1, run
    assert "Traceback" not in run.stderr, run
    assert run.stdout == "", run
    counts = reported(run)
    committed, missing = counts["committed"], counts["not committed"]
    created, changed, notified = in_zookeeper(client, repo)
    assert len(notified) == len(set(notified)), "a duplicated notification"
    assert set(notified) == {f"topics/{n}" for n in changed}, "an entity without its notification"
    unknown = counts.get("unknown")
    assert unknown is None, run
    assert len(created) == committed.topics and len(changed) == committed.entities, run
    assert len(notified) == committed.notifications == committed.entities
    assert committed.partitions == missing.partitions == 0
    assert committed.topics + missing.topics == len(repo.new)
    assert committed.entities + missing.entities == len(OLD)
    # the first units named: committed ones are in ZooKeeper, the first one not committed is really absent
    for label in committed.first:
        name = label.removeprefix("topics/")
        assert name in created or name in changed, label
    first_missing = missing.first[0].removeprefix("topics/")
    assert first_missing not in created and first_missing not in changed, missing
    if first_missing in repo.new:
        assert client.exists(f"/brokers/topics/{first_missing}") is None
        assert client.exists(f"/config/topics/{first_missing}") is None
    else:
        assert client.get(f"/config/topics/{first_missing}")[0] == config_bytes(BEFORE)
    # the same in the audit entry (ZooKeeper's and the log's)
    entry = last_audit(client, repo)
    assert entry["result"] == "interrupted" and entry["cluster"] == "c1"
    assert entry["counts"]["topicsCreated"] == committed.topics
    assert entry["counts"]["entitiesWritten"] == committed.entities
    assert entry["counts"]["notifications"] == committed.notifications
    assert entry["counts"]["batches"] == committed.batches
    audited = entry["interrupted"]
    assert Counts.audited(audited["committed"]) == committed
    assert Counts.audited(audited["notCommitted"]) == missing
    assert "unknown" not in audited
    assert audited["batches"] == committed.batches + missing.batches
    # the lock is released, and the operator is told what to run next
    assert client.get_children("/reconciler/lock") == []
    assert "next: `reconciler plan c1`" in run.stderr and "`reconciler apply c1`" in run.stderr
    return counts


def converges(repo: Repo, client: KazooClient, left_topics: int, left_changes: int) -> None:
    plan = cli(repo.root, "plan", "c1", "--detailed-exitcode", timeout=120)
    assert plan.code == 2, plan
    summary = f"{left_changes} to change, 0 to remove" + (f", {left_topics} topics to create" if left_topics else "")
    # the new topics have one replica on three brokers: rated disruptive (durability, risk/topics.py)
    assert re.search(rf"Plan: 0 to add, {re.escape(summary)}( \(\d+ disruptive\))?\.\n", plan.stdout), plan
    applied = cli(repo.root, "apply", "c1", "--auto-approve", timeout=120, env=repo.env())
    assert applied.code == 0, applied
    created, changed, notified = in_zookeeper(client, repo)
    assert created == set(repo.new) and changed == set(OLD)
    assert sorted(notified) == sorted(f"topics/{n}" for n in OLD)  # one notification per changed entity
    again = cli(repo.root, "plan", "c1", "--detailed-exitcode", timeout=120)
    assert again.code == 0, again


def paused_apply(repo: Repo, batch: int) -> Proc:
    """`apply c1` that stops itself right after queueing its `batch`th multi (the batch's reply unread)."""
    proc = Proc(repo.root, ["apply", "c1", "--auto-approve"], module="tests.integration.faultproc",
                env={**repo.env(), "FAULT_PAUSE": f"multi:{batch}:after"})
    proc.wait_stopped(120)
    return proc


@pytest.mark.parametrize("batch", [5, 90])  # among the topic creations; among the config changes
def test_sigint_mid_apply_reports_and_audits_what_zookeeper_holds(
    repo: Repo, zk_client: KazooClient, batch: int
) -> None:
    proc = paused_apply(repo, batch)
    proc.proc.send_signal(signal.SIGINT)  # served when it resumes, while batch `batch` is on its way
    proc.resume()
    run = proc.finish(120)
    assert "received SIGINT: stopping after the batches being committed" in run.stderr, run
    counts = check_report(run, zk_client, repo)
    # the batch on its way when the signal came was awaited, committed and counted; none was started after it
    assert counts["committed"].batches == batch, run
    assert f"stopped between batches {batch} and {batch + 1} of " in run.stderr, run
    committed = counts["committed"]
    assert (committed.entities > 0) == (batch == 90) and committed.topics > 0
    converges(repo, zk_client, len(repo.new) - committed.topics, len(OLD) - committed.entities)


def test_a_second_signal_ends_the_wait_and_zookeeper_says_what_committed(
    repo: Repo, zk_client: KazooClient
) -> None:
    """The second signal ends the wait for the batches' replies; the apply lock's version (one read, with the
    audit entry's bounded wait, answered after every batch sent) then says exactly which of them committed:
    batches 1-5 were sent, so 1-5 are reported committed, and nothing as unknown."""
    proc = paused_apply(repo, 5)
    proc.proc.send_signal(signal.SIGINT)  # both pending: served in signal-number order when it resumes
    proc.proc.send_signal(signal.SIGTERM)
    proc.resume()
    run = proc.finish(60)
    counts = check_report(run, zk_client, repo)
    assert counts["committed"].batches == 5, run
    assert "stopped between batches 5 and 6 of " in run.stderr, run
    created, changed, _ = in_zookeeper(zk_client, repo)
    converges(repo, zk_client, len(repo.new) - len(created), len(OLD) - len(changed))


@pytest.mark.parametrize("repo", [MANY], indirect=True)
def test_sigterm_at_any_moment_of_the_writes(repo: Repo, zk_client: KazooClient) -> None:
    """No pause point: the signal comes whenever the writes have begun (as an operator's Ctrl-C would); 4,000
    topics in batches of ~3 keep the apply writing for seconds."""
    proc = Proc(repo.root, ["apply", "c1", "--auto-approve"], env=repo.env())

    def writing() -> bool:
        stat = zk_client.exists("/brokers/topics")
        return stat is not None and stat.numChildren > len(OLD) + len(repo.new) // 4  # a quarter written

    assert wait_until(writing, 120, interval=0.005), proc.finish(1)
    proc.proc.send_signal(signal.SIGTERM)
    run = proc.finish(120)
    counts = check_report(run, zk_client, repo)
    committed = counts["committed"]
    converges(repo, zk_client, len(repo.new) - committed.topics, len(OLD) - committed.entities)
