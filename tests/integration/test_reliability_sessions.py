"""Session expiry and connection loss during `plan` (reads) and `apply` (writes), through the real command
line. The process pauses itself at a precise ZooKeeper request (tests/integration/faultproc.py); meanwhile
the test expires its session (a second client attaches to the same session id and closes it, or the pause
simply outlasts the session timeout) or restarts ZooKeeper (the connection is lost, the session survives).

Reads are retried (they are idempotent): the plan is the same as without the fault. Writes are retried after
a lost connection only when the batch provably did not commit, and never without the lock: an expired
session lost the lock with it, so the apply stops (exit 1) and the re-run finishes the job. Either way each
change is written exactly once: one notification per entity, none lost, none doubled.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.conftest import ZkServer
from tests.integration.reliability import (
    Proc,
    cli,
    config_bytes,
    notification_entities,
    outside_reconciler,
    seed_topics,
    topic_configs,
    tree,
    wait_until,
    write_repo,
)

N = 300
OLD, NEW = {"retention.ms": "1000"}, {"retention.ms": "2000"}
NAMES = [f"t-{i:04d}" for i in range(N)]
SESSION_TIMEOUT_S = 4
LOCK_GONE = re.compile(
    r"error: the apply lock /t-\w+/reconciler/lock/\w+__lock__\d+ is gone: the ZooKeeper session expired "
    r"\(or the node was deleted\), so another apply may hold the lock now; nothing of batch (\d+)/\d+ was "
    r"written( \(batches 1-(\d+) are committed and correct\))?\. Run `reconciler plan` and apply again"
)

pytestmark = pytest.mark.timeout(120)  # a safety net: each process inside has its own timeout


@pytest.fixture
def repo(zk_client: KazooClient, zk_connect: str, zk_server: ZkServer, tmp_path: Path) -> Path:
    seed_topics(zk_client, dict.fromkeys(NAMES, OLD))
    return write_repo(tmp_path, zk_connect, topics=dict.fromkeys(NAMES, NEW), session_timeout_s=SESSION_TIMEOUT_S)


def paused(repo: Path, args: list[str], pause: str) -> tuple[Proc, Path]:
    """The command, stopped right before its ZooKeeper request `pause` (see faultproc)."""
    session_file = repo / f"session-{pause.replace(':', '-')}.json"
    proc = Proc(repo, args, module="tests.integration.faultproc", env={
        "FAULT_PAUSE": pause, "FAULT_SESSION_FILE": str(session_file), "RECONCILER_MAX_BATCH_BYTES": "1024",
        "RECONCILER_AUDIT_LOG": str(repo / "audit.jsonl"),
    })
    proc.wait_stopped(60)
    return proc, session_file


def expire(zk_server: ZkServer, session_file: Path) -> None:
    """Close the paused process's session from a second client that attaches to it (id and password)."""
    session = json.loads(session_file.read_text())
    other = KazooClient(hosts=zk_server.connect, client_id=(session["session_id"], bytes.fromhex(session["password"])))
    other.start(timeout=15)
    assert other.client_id is not None and other.client_id[0] == session["session_id"]
    other.stop()  # sends closeSession: the server drops the session and its ephemeral nodes
    other.close()


def lose_connection(zk_server: ZkServer) -> None:
    """Crash and restart ZooKeeper on the same data: the connection is gone, the session is not."""
    zk_server.kill()
    zk_server.restart()


def plan_id(run_stdout: str) -> str:
    match = re.search(r"plan ([0-9a-f]{16})\)", run_stdout)
    assert match, run_stdout
    return match.group(1)


def changed_topics(client: KazooClient) -> set[str]:
    """Consistency: each entity old or new, the changed ones each with exactly one notification."""
    configs = topic_configs(client, NAMES)
    assert set(configs.values()) <= {config_bytes(OLD), config_bytes(NEW)}
    changed = {name for name, data in configs.items() if data == config_bytes(NEW)}
    entities = notification_entities(client)
    assert sorted(entities) == sorted(f"topics/{name}" for name in changed)
    return changed


def converge(repo: Path, client: KazooClient) -> None:
    run = cli(repo, "apply", "--auto-approve", timeout=90)
    assert run.code == 0, run
    assert changed_topics(client) == set(NAMES)  # every change exactly once, over both runs
    again = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0 and "No changes" in again.stdout, again


# --- reads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "pause"), [
    ("session-expired", "multiread:2"),  # between the listings and the gets
    ("session-expired", "multiread:1:after"),  # the listings' request queued, its answer not read yet
    ("connection-lost", "multiread:2"),
])
def test_plan_survives_faults_during_its_read(
    fault: str, pause: str, repo: Path, zk_server: ZkServer, zk_client: KazooClient
) -> None:
    baseline = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert baseline.code == 2, baseline
    proc, session_file = paused(repo, ["plan", "--detailed-exitcode"], pause)
    expire(zk_server, session_file) if fault == "session-expired" else lose_connection(zk_server)
    proc.resume()
    run = proc.finish(60)
    assert run.code == 2, run
    assert plan_id(run.stdout) == plan_id(baseline.stdout)  # the same plan, read again from scratch
    assert f"Plan: 0 to add, {N} to change, 0 to remove." in run.stdout


# --- writes --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("pause", ["multi:20", "multi:20:after"])
def test_apply_survives_a_lost_connection(
    pause: str, repo: Path, zk_server: ZkServer, zk_client: KazooClient
) -> None:
    """Batch 20 is about to be sent (or sent, reply pending) when ZooKeeper crashes and comes back: the batch
    is verified not committed (or committed) after reconnecting, and sent again only if it was not."""
    proc, _ = paused(repo, ["apply", "--auto-approve"], pause)
    done = len(notification_entities(zk_client))
    assert 0 < done < N
    lose_connection(zk_server)
    proc.resume()
    run = proc.finish(90)
    assert run.code == 0 and f"{N} entities" in run.stderr, run
    assert changed_topics(zk_client) == set(NAMES)  # every change exactly once
    again = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0, again


@pytest.mark.parametrize("pause", ["multi:20", "multi:20:after"])
def test_expired_session_stops_apply_without_the_lock(
    pause: str, repo: Path, zk_server: ZkServer, zk_client: KazooClient
) -> None:
    """The session (and the lock node with it) expires before batch 20 is sent (1-19 answered: faultproc): kazoo
    silently opens a new session, but every batch sets the lock node (at the version the batch before it left)
    in its multi, so nothing more is written; the re-run finishes. The report and the audit entry count exactly
    the batches before the first one refused."""
    proc, session_file = paused(repo, ["apply", "--auto-approve"], pause)
    expire(zk_server, session_file)
    assert zk_client.get_children("/reconciler/lock") == []  # the lock died with the session
    done = changed_topics(zk_client)  # (with "after", batch 20 may have reached the server before the stop)
    proc.resume()
    run = proc.finish(60)
    assert run.code == 1, run
    match = LOCK_GONE.fullmatch(run.stderr.rstrip().splitlines()[-1])
    assert match, run
    refused = int(match.group(1))
    assert refused in ((20,) if pause == "multi:20" else (20, 21)), run
    assert match.group(3) == str(refused - 1), run
    assert changed_topics(zk_client) == done  # nothing after the expiry
    record = json.loads((repo / "audit.jsonl").read_text().splitlines()[-1])
    assert record["result"] == "failed: ZooKeeperError"
    assert record["counts"]["entitiesWritten"] == len(done)
    assert record["counts"]["batches"] == refused - 1  # every batch before the one refused committed
    converge(repo, zk_client)


@pytest.mark.slow
def test_process_paused_beyond_the_session_timeout(repo: Path, zk_client: KazooClient) -> None:
    """A long GC or VM pause: the server expires the session on its own while the process is stopped."""
    proc, _ = paused(repo, ["apply", "--auto-approve"], "multi:20")
    done = changed_topics(zk_client)
    started = time.monotonic()
    assert wait_until(lambda: zk_client.get_children("/reconciler/lock") == [], SESSION_TIMEOUT_S * 4, 0.1)
    assert time.monotonic() - started >= SESSION_TIMEOUT_S / 2  # expired by the server, not by us
    proc.resume()
    run = proc.finish(60)
    assert run.code == 1 and LOCK_GONE.fullmatch(run.stderr.rstrip().splitlines()[-1]), run
    assert changed_topics(zk_client) == done
    converge(repo, zk_client)


def test_expiry_after_taking_the_lock_writes_nothing(
    repo: Path, zk_server: ZkServer, zk_client: KazooClient, tmp_path: Path
) -> None:
    """`apply plan.json`: the session expires between taking the lock and the bulk pre-read; the pre-read
    is redone on the new session, but the first batch finds the lock gone: not one entity is written."""
    plan_file = tmp_path / "plan.json"
    assert cli(repo, "plan", "--out", str(plan_file), timeout=60).code == 0
    before = tree(zk_client)
    proc, session_file = paused(repo, ["apply", str(plan_file), "--auto-approve"], "multiread:1")
    assert len(zk_client.get_children("/reconciler/lock")) == 1
    expire(zk_server, session_file)
    proc.resume()
    run = proc.finish(60)
    assert run.code == 1, run
    match = LOCK_GONE.fullmatch(run.stderr.rstrip().splitlines()[-1])
    assert match and match.group(1) == "1", run
    assert outside_reconciler(tree(zk_client)) == outside_reconciler(before)
    converge(repo, zk_client)
