"""ZooKeeper SIGKILLed in the middle of a large apply (3,000 topic configs in ~750 small batches), through
the real command line: the apply ends within bounded time, every entity znode holds either its old or its
complete new config with exactly one notification per changed entity, and a re-run converges. A re-run
right after ZooKeeper is back is not stopped by the crashed apply's lock (issue 16): its session survives
the restart, but its process is gone, so the re-run on this machine takes the lock over at once (if the
short test session has not expired by then; the takeover of a restored session is proven deterministically
in test_reliability_lock.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.model import ZooKeeperSpec
from reconciler.zk.session import close, connect
from tests.conftest import ZkServer
from tests.integration.reliability import (
    Proc,
    Run,
    cli,
    config_bytes,
    notification_entities,
    seed_topics,
    topic_configs,
    wait_until,
    write_repo,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]  # a safety net: each run inside is bounded too

N = 3000
OLD, NEW = {"retention.ms": "1000"}, {"retention.ms": "2000"}
NAMES = [f"t-{i:05d}" for i in range(N)]
SESSION_TIMEOUT_S = 4  # ZooKeeper's minimum with the test server's tickTime (2 x 2 s)
# ~4 entities per multi: ~750 batches, so the kill lands in the middle of the commits
ENV = {"RECONCILER_MAX_BATCH_BYTES": "1024"}
FAILED = re.compile(  # the two ways a commit loop can end when ZooKeeper is gone: both say what to do next
    r"error: (batch \d+/\d+: lost the ZooKeeper connection during the commit and could not reconnect to check "
    r"whether it committed \(batches 1-\d+ are committed and correct\); run `reconciler plan` when ZooKeeper "
    r"is reachable again: it shows what is left to do"
    r"|cluster c1: ZooKeeper failed during apply \(\w+\) after \d+ committed batch\(es\); run `reconciler plan` "
    r"to see what is left to do)"
)


@dataclass
class Large:
    repo: Path
    connect: str
    audit_log: Path


@pytest.fixture
def large(zk_client: KazooClient, zk_connect: str, zk_server: ZkServer, tmp_path: Path) -> Iterator[Large]:
    seed_topics(zk_client, dict.fromkeys(NAMES, OLD))
    repo = write_repo(tmp_path, zk_connect, topics=dict.fromkeys(NAMES, NEW), session_timeout_s=SESSION_TIMEOUT_S)
    try:
        yield Large(repo, zk_connect, tmp_path / "audit.jsonl")
    finally:
        zk_server.restart()  # never leave the session's server down


def start_apply(large: Large) -> Proc:
    return Proc(large.repo, ["apply", "--auto-approve"], env={**ENV, "RECONCILER_AUDIT_LOG": str(large.audit_log)})


def kill_in_the_middle(zk_server: ZkServer, zk_client: KazooClient, proc: Proc) -> float:
    """SIGKILL ZooKeeper once a fifth of the entities are written (the apply is then mid-commit)."""
    def progress() -> int:
        return int(zk_client.retry(zk_client.exists, "/config/changes").numChildren)

    assert wait_until(lambda: progress() >= N // 5, 60, interval=0.005), proc.finish(1)
    zk_server.kill()
    return time.monotonic()


def fresh_client(connect_string: str) -> KazooClient:
    return connect(ZooKeeperSpec(connect_string, session_timeout_s=10.0), connect_timeout_s=30.0)


def check_consistent(client: KazooClient) -> set[str]:
    """Every entity znode holds exactly the old or the new config; the changed ones are exactly those with a
    notification, each with one. Returns the changed topics."""
    configs = topic_configs(client, NAMES)
    assert set(configs.values()) <= {config_bytes(OLD), config_bytes(NEW)}, "a partial entity znode"
    changed = {name for name, data in configs.items() if data == config_bytes(NEW)}
    entities = notification_entities(client)
    assert len(entities) == len(set(entities)), "a duplicated notification"
    assert set(entities) == {f"topics/{name}" for name in changed}, "an entity without its notification"
    return changed


def rerun_converges(large: Large, client: KazooClient, left: int, plan_first: bool = True) -> Run:
    if plan_first:
        plan = cli(large.repo, "plan", "--detailed-exitcode", timeout=60)
        assert plan.code == 2 and f"Plan: 0 to add, {left} to change, 0 to remove." in plan.stdout, plan
    apply = cli(large.repo, "apply", "--auto-approve", timeout=90,
                env={**ENV, "RECONCILER_AUDIT_LOG": str(large.audit_log)})
    assert apply.code == 0 and f"{left} entities" in apply.stderr, apply
    assert check_consistent(client) == set(NAMES)
    again = cli(large.repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0 and "No changes" in again.stdout, again
    return apply


def audit_lines(large: Large) -> list[dict[str, object]]:
    return [json.loads(line) for line in large.audit_log.read_text(encoding="utf-8").splitlines()]


def assert_failed_clearly(run: Run) -> None:
    assert run.code == 1, run
    assert FAILED.fullmatch(run.stderr.rstrip().splitlines()[-1]), run
    assert "Traceback" not in run.stderr, run


def test_zookeeper_killed_mid_apply_and_kept_down(
    large: Large, zk_server: ZkServer, zk_client: KazooClient
) -> None:
    proc = start_apply(large)
    killed_at = kill_in_the_middle(zk_server, zk_client, proc)
    run = proc.finish(90)
    # bounded: reconnect attempts stop at about the session timeout, then the commit's check gives up
    assert time.monotonic() - killed_at < 30, run
    assert_failed_clearly(run)
    (record,) = audit_lines(large)  # written locally although ZooKeeper was gone
    assert record["result"] == "failed: ZooKeeperError" and record["user"] == "reliability@test"
    committed = record["counts"]["entitiesWritten"]  # type: ignore[index]

    zk_server.restart()
    client = fresh_client(large.connect)
    try:
        changed = check_consistent(client)
        assert N // 5 <= len(changed) < N
        assert committed <= len(changed) <= committed + 10  # plus the batch in flight, if it committed
        (dead_node,) = client.get_children("/reconciler/lock")  # restored with the crashed apply's session
        rerun = rerun_converges(large, client, N - len(changed), plan_first=False)  # apply again at once
    finally:
        close(client)
    # never a wait: the crashed apply's process is gone, so its lock (if its restored session has not
    # expired yet) is taken over at once
    assert "waiting up to" not in rerun.stderr, rerun
    record = audit_lines(large)[-1]
    assert record["result"] == "applied", record
    if "took over the apply lock of a crashed apply" in rerun.stderr:
        (takeover,) = record["lockTakeovers"]  # type: ignore[misc]
        assert takeover["node"] == dead_node and takeover["pid"] == proc.pid, record
        assert takeover["reason"].startswith(f"process {proc.pid} no longer exists on "), record
    else:
        assert "lockTakeovers" not in record, record


def test_zookeeper_killed_mid_apply_and_restarted(
    large: Large, zk_server: ZkServer, zk_client: KazooClient
) -> None:
    """Restarted on the same data while the apply retries: its session (and lock) survive a restart, so it
    either finishes or fails clearly; either way nothing is partial or doubled, and a re-run converges."""
    proc = start_apply(large)
    killed_at = kill_in_the_middle(zk_server, zk_client, proc)
    zk_server.restart()
    run = proc.finish(90)
    assert time.monotonic() - killed_at < 60, run
    client = fresh_client(large.connect)
    try:
        if run.code == 0:
            assert f"{N} entities" in run.stderr, run
            assert check_consistent(client) == set(NAMES)
            again = cli(large.repo, "plan", "--detailed-exitcode", timeout=60)
            assert again.code == 0, again
        else:
            assert_failed_clearly(run)
            changed = check_consistent(client)
            rerun_converges(large, client, N - len(changed))
    finally:
        close(client)
