"""The apply lock after a crash, through the real command line on a real ZooKeeper (issue 16).

* The apply process is SIGKILLed while it holds the lock: a re-run on the same machine proves the holder
  dead (its process is gone) and takes the lock over at once, recording the dead holder in the audit entry.
* A live holder — paused on this machine, or running on "another machine" (a claim naming another kernel)
  — is never broken: the second apply waits, with one line naming the holder, then exits 3 naming it.
* A holder on another machine that crashed cannot be proven dead from here: the default lock wait outlasts
  its ZooKeeper session, so the re-run waits it out and succeeds.
* ZooKeeper and the apply crash together: ZooKeeper restores the apply's session and lock node on restart;
  the re-run takes that lock over at once. (ZooKeeper SIGKILLed during an apply of 3,000 entities that then
  gives up, and a re-run at once: tests/integration/test_reliability_zk_crash.py.)
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.model import ZooKeeperSpec
from reconciler.zk.session import close, connect
from tests.conftest import ZkServer
from tests.integration.reliability import (
    PYTHON,
    Proc,
    cli,
    config_bytes,
    notification_entities,
    seed_topics,
    topic_configs,
    write_repo,
)

N = 120
OLD, NEW = {"retention.ms": "1000"}, {"retention.ms": "2000"}
NAMES = [f"t-{i:04d}" for i in range(N)]
SHORT_SESSION_S = 8  # long enough to outlast a re-run's start on a loaded machine; default lock wait 17 s
FOREIGN_CLAIM = {  # what an apply on another machine writes into its lock node
    "version": 1, "user": "ops@far", "host": "far-host", "pid": 4242, "planId": "feedbeef00000000",
    "since": "2025-01-01T00:00:00Z",
    "process": {"bootId": "00000000-0000-4000-8000-000000000000", "pidNamespace": "pid:[1]", "startTicks": 7},
}
FOREIGN = "ops@far (host far-host, pid 4242, plan feedbeef00000000, since 2025-01-01T00:00:00Z)"
WAITING = re.compile(r"cluster c1: the apply lock is held by (.+); waiting up to (\d+) s for it \(a crashed "
                     r"apply's lock goes when its session expires\)")

pytestmark = pytest.mark.timeout(120)  # a safety net: each process inside has its own timeout


@pytest.fixture
def repo(zk_client: KazooClient, zk_connect: str, tmp_path: Path) -> Path:
    """ZooKeeper's default session timeout (30 s): a paused holder keeps its session through the test, and
    a test that does not take over where it should would wait 50 s (and fail on its output)."""
    seed_topics(zk_client, dict.fromkeys(NAMES, OLD))
    return write_repo(tmp_path, zk_connect, topics=dict.fromkeys(NAMES, NEW))


@pytest.fixture
def short_repo(zk_client: KazooClient, zk_connect: str, tmp_path: Path) -> Path:
    """Short sessions, for the tests that wait one out."""
    seed_topics(zk_client, dict.fromkeys(NAMES, OLD))
    return write_repo(tmp_path, zk_connect, topics=dict.fromkeys(NAMES, NEW), session_timeout_s=SHORT_SESSION_S)


def env(repo: Path, **extra: str) -> dict[str, str]:
    return {"RECONCILER_MAX_BATCH_BYTES": "1024", "RECONCILER_AUDIT_LOG": str(repo / "audit.jsonl"), **extra}


def audit_log(repo: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (repo / "audit.jsonl").read_text(encoding="utf-8").splitlines()]


def last_zk_audit(client: KazooClient) -> dict[str, object]:
    entries = sorted(client.get_children("/reconciler/audit"))
    return dict(json.loads(client.get(f"/reconciler/audit/{entries[-1]}")[0]))


def converged(repo: Path, client: KazooClient) -> None:
    """Every topic new, each with exactly one notification (none lost or doubled over both runs); no changes."""
    assert set(topic_configs(client, NAMES).values()) == {config_bytes(NEW)}
    assert sorted(notification_entities(client)) == [f"topics/{n}" for n in NAMES]
    again = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0 and "No changes" in again.stdout, again


# --- a holder on "another machine", as a separate process with its own ZooKeeper session -----------------

HOLDER = """
import sys, time
from kazoo.client import KazooClient
client = KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[2]))
client.start(timeout=15)
client.ensure_path("/reconciler/lock")
print(client.create("/reconciler/lock/" + "f" * 32 + "__lock__", sys.argv[3].encode(), ephemeral=True,
                    sequence=True), flush=True)
time.sleep(120)
"""


@pytest.fixture
def foreign_holder(zk_connect: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A process holding the lock with another machine's claim; SIGKILL it to crash that machine's apply."""
    proc = subprocess.Popen([PYTHON, "-c", HOLDER, zk_connect, str(SHORT_SESSION_S), json.dumps(FOREIGN_CLAIM)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        node = proc.stdout.readline().strip()
        assert node.startswith("/reconciler/lock/"), node
        yield proc, node
    finally:
        proc.kill()
        proc.wait(10)


# --- the tests -----------------------------------------------------------------------------------------


def test_apply_killed_holding_the_lock_rerun_takes_it_over_at_once(repo: Path, zk_client: KazooClient) -> None:
    """Issue 16 (2): SIGKILL the apply mid-way; the re-run on this machine takes the lock over without
    waiting for the dead session, and the audit entry names the dead holder."""
    first = Proc(repo, ["apply", "--auto-approve"], module="tests.integration.faultproc",
                 env=env(repo, FAULT_PAUSE="multi:4"))
    first.wait_stopped(30)
    (dead_node,) = zk_client.get_children("/reconciler/lock")
    first.proc.send_signal(signal.SIGKILL)
    assert first.finish(10).code == -signal.SIGKILL
    written = len(notification_entities(zk_client))
    assert 0 < written < N
    assert zk_client.get_children("/reconciler/lock") == [dead_node]  # its session lives on for now

    run = cli(repo, "apply", "--auto-approve", timeout=60, env=env(repo))
    assert run.code == 0 and f"{N - written} entities" in run.stderr, run
    assert not WAITING.search(run.stderr), run  # no wait at all: the holder was proven dead
    host = socket.gethostname()
    assert (f"cluster c1: took over the apply lock of a crashed apply, reliability@test (host {host}, "
            f"pid {first.pid}, plan ") in run.stderr, run
    assert f": process {first.pid} no longer exists on {host}\n" in run.stderr, run

    record = audit_log(repo)[-1]
    assert record["result"] == "applied" and record == last_zk_audit(zk_client)
    (takeover,) = record["lockTakeovers"]  # type: ignore[misc]
    assert takeover["node"] == dead_node and takeover["pid"] == first.pid and takeover["host"] == host
    assert takeover["user"] == "reliability@test" and re.fullmatch(r"[0-9a-f]{16}", takeover["planId"])
    assert takeover["reason"] == f"process {first.pid} no longer exists on {host}"
    assert re.fullmatch(r"0x[0-9a-f]+", takeover["session"]) and takeover["since"].endswith("Z")
    assert zk_client.get_children("/reconciler/lock") == []
    converged(repo, zk_client)


def test_zookeeper_and_apply_crash_together_rerun_takes_over_the_restored_lock(
    zk_client: KazooClient, zk_connect: str, zk_server: ZkServer, tmp_path: Path
) -> None:
    """Both SIGKILLed mid-apply. ZooKeeper comes back with the apply's session and lock node (sessions are
    persisted); the re-run proves the holder dead and does not wait for that session (20 s here)."""
    seed_topics(zk_client, dict.fromkeys(NAMES, OLD))
    repo = write_repo(tmp_path, zk_connect, topics=dict.fromkeys(NAMES, NEW), session_timeout_s=20)
    first = Proc(repo, ["apply", "--auto-approve"], module="tests.integration.faultproc",
                 env=env(repo, FAULT_PAUSE="multi:4"))
    first.wait_stopped(30)
    try:
        zk_server.kill()
        first.proc.send_signal(signal.SIGKILL)
        assert first.finish(10).code == -signal.SIGKILL
    finally:
        zk_server.restart()
    client = connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0), connect_timeout_s=30.0)
    try:
        (restored,) = client.get_children("/reconciler/lock")
        run = cli(repo, "apply", "--auto-approve", timeout=60, env=env(repo))
        assert run.code == 0 and not WAITING.search(run.stderr), run
        assert f"took over the apply lock of a crashed apply, reliability@test (host {socket.gethostname()}, " \
               f"pid {first.pid}, plan " in run.stderr, run
        (takeover,) = audit_log(repo)[-1]["lockTakeovers"]  # type: ignore[misc]
        assert takeover["node"] == restored and takeover["pid"] == first.pid
        converged(repo, client)
    finally:
        close(client)


def test_live_holder_on_this_machine_makes_the_next_apply_wait_then_exit_3(
    repo: Path, zk_client: KazooClient
) -> None:
    """Issue 16 (3): a paused (live) apply holds the lock; the second waits with one line naming it, then
    exits 3 naming it, writing nothing. The holder is untouched and finishes afterwards."""
    first = Proc(repo, ["apply", "--auto-approve"], module="tests.integration.faultproc",
                 env=env(repo, FAULT_PAUSE="multi:4"))
    first.wait_stopped(30)
    (node,) = zk_client.get_children("/reconciler/lock")
    written = sorted(notification_entities(zk_client))

    second = cli(repo, "apply", "--auto-approve", "--lock-timeout", "2s", timeout=60, env=env(repo))
    assert second.code == 3, second
    (waiting,) = WAITING.findall(second.stderr)  # exactly one progress line
    holder = f"reliability@test (host {socket.gethostname()}, pid {first.pid}, plan "
    assert waiting[0].startswith(holder) and waiting[1] == "2", second
    assert second.stderr.rstrip().splitlines()[-1].startswith(
        "error: cluster c1: another apply holds the lock /t-"), second
    assert f"/reconciler/lock (held by {holder}" in second.stderr, second
    assert "waited 2 s and wrote nothing" in second.stderr and "took over" not in second.stderr, second
    assert zk_client.get_children("/reconciler/lock") == [node]  # never broken; its own node removed
    assert sorted(notification_entities(zk_client)) == written

    first.resume()
    assert first.finish(60).code == 0
    converged(repo, zk_client)


def test_live_holder_on_another_machine_is_never_broken(
    repo: Path, zk_client: KazooClient, foreign_holder: tuple[subprocess.Popen[str], str]
) -> None:
    """Its pid does not exist here, but its claim names another kernel: no proof, so apply and reconcile
    wait (--lock-timeout; also as RECONCILER_LOCK_TIMEOUT) and exit naming it."""
    _, node = foreign_holder
    for args, extra in ((["--lock-timeout", "1s"], {}), ([], {"RECONCILER_LOCK_TIMEOUT": "1"})):
        run = cli(repo, "apply", "--auto-approve", *args, timeout=60, env=env(repo, **extra))
        assert run.code == 3, run
        assert WAITING.findall(run.stderr) == [(FOREIGN, "1")], run
        assert f"(held by {FOREIGN}); waited 1 s and wrote nothing" in run.stderr, run
    # c1 manages this target already (the scheduled reconcile never first-applies to one that holds state)
    zk_client.create("/reconciler/owner", json.dumps({"cluster": "c1", "claimedBy": "ops@test", "time": ""}).encode())
    reconcile = cli(repo, "reconcile", "--once", "--allow-dirty", "--lock-timeout", "0", timeout=60, env=env(repo))
    assert reconcile.code == 1, reconcile
    assert "c1 failed: cluster c1: another apply holds the lock" in reconcile.stderr, reconcile
    assert f"(held by {FOREIGN}); waited 0 s" in reconcile.stderr, reconcile
    assert zk_client.get_children("/reconciler/lock") == [node.rsplit("/", 1)[1]]
    assert notification_entities(zk_client) == []


@pytest.mark.slow
def test_crashed_holder_on_another_machine_is_waited_out_by_default(
    short_repo: Path, zk_client: KazooClient, foreign_holder: tuple[subprocess.Popen[str], str]
) -> None:
    """Issue 16: the default wait (1.5 x the session timeout + 5 s) outlasts the dead holder's session, so a
    re-run right after that machine's crash succeeds instead of exiting 3; nothing is taken over."""
    holder, _ = foreign_holder
    holder.kill()  # that machine's apply crashes: its session stays until it expires
    holder.wait(10)
    run = cli(short_repo, "apply", "--auto-approve", timeout=60, env=env(short_repo))
    assert run.code == 0 and f"{N} entities" in run.stderr, run
    assert WAITING.findall(run.stderr) == [(FOREIGN, "17")], run
    assert "took over" not in run.stderr and "lockTakeovers" not in audit_log(short_repo)[-1], run
    converged(short_repo, zk_client)
