"""Who holds the apply lock and when it is provably dead (reconciler.holder), on real processes: a child
that still runs, one that has exited but is not reaped (a zombie), one that is gone; and the lock wait's
defaults and durations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from reconciler.apply import duration_seconds, lock_wait_seconds
from reconciler.cli.main import run
from reconciler.holder import Holder, ProcessId, claim, death, start_ticks
from reconciler.zk.lock import default_lock_wait

HERE = ProcessId.current()
pytestmark = pytest.mark.skipif(HERE is None, reason="needs Linux /proc (boot id, PID namespace)")


def holder_of(process: ProcessId, **fields: object) -> Holder:
    body = {"version": 1, "user": "ops@ci", "host": "ci-7", "pid": process.pid, "planId": "p-1",
            "since": "2025-01-01T00:00:00Z", "process": process.to_json(), **fields}
    return Holder.parse("abc__lock__0000000001", json.dumps(body).encode(), 0x1234)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def child_id(proc: subprocess.Popen[bytes]) -> ProcessId:
    assert HERE is not None
    ticks = start_ticks(proc.pid)
    assert ticks is not None
    return replace(HERE, pid=proc.pid, start_ticks=ticks)


def test_a_claim_names_this_process_and_parses_back() -> None:
    data = claim("alice@ci", "3f2a9c", "2025-01-01T10:00:00Z")
    holder = Holder.parse("x__lock__0000000007", data, 0xABC)
    assert (holder.user, holder.pid, holder.plan_id, holder.since) == ("alice@ci", os.getpid(), "3f2a9c",
                                                                        "2025-01-01T10:00:00Z")
    assert holder.process == HERE
    assert holder.describe().startswith("alice@ci (host ") and holder.describe().endswith(
        f", pid {os.getpid()}, plan 3f2a9c, since 2025-01-01T10:00:00Z)")
    assert death(holder, HERE) is None  # ourselves
    assert holder.audit("why")["session"] == "0xabc"


def test_a_live_process_on_this_machine_is_alive(sleeper: subprocess.Popen[bytes]) -> None:
    assert death(holder_of(child_id(sleeper)), HERE) is None


def test_a_gone_process_is_dead(sleeper: subprocess.Popen[bytes]) -> None:
    process = child_id(sleeper)
    sleeper.kill()
    sleeper.wait(10)  # reaped: the pid no longer exists
    assert death(holder_of(process), HERE) == f"process {process.pid} no longer exists on ci-7"


def test_an_exited_but_unreaped_process_is_dead(sleeper: subprocess.Popen[bytes]) -> None:
    process = child_id(sleeper)
    sleeper.kill()
    deadline = time.monotonic() + 10
    while start_ticks(sleeper.pid) is not None and time.monotonic() < deadline:  # until it is a zombie
        time.sleep(0.01)
    assert death(holder_of(process), HERE) == f"process {process.pid} on ci-7 has exited (a zombie not yet reaped)"


def test_a_reused_pid_is_not_the_holder(sleeper: subprocess.Popen[bytes]) -> None:
    """The pid runs, but a process that started at another time than the holder's: the holder is gone."""
    earlier = replace(child_id(sleeper), start_ticks=child_id(sleeper).start_ticks - 1)
    assert death(holder_of(earlier), HERE) == (
        f"process {sleeper.pid} on ci-7 exited; the pid now belongs to another process"
    )


def test_no_proof_from_another_machine_or_namespace_or_an_old_claim(sleeper: subprocess.Popen[bytes]) -> None:
    process = child_id(sleeper)
    sleeper.kill()
    sleeper.wait(10)  # dead here; but these claims do not say it was *here*
    assert death(holder_of(replace(process, boot_id="another-kernel")), HERE) is None
    assert death(holder_of(replace(process, pid_namespace="pid:[1]")), HERE) is None
    assert death(holder_of(process), None) is None  # we cannot tell who we are (no /proc)
    old = Holder.parse("n__lock__0000000001", f"bob@elsewhere pid {process.pid} plan p-9".encode(), 1)
    assert old.describe() == f"bob@elsewhere pid {process.pid} plan p-9" and death(old, HERE) is None


@pytest.mark.parametrize("pid", [0, -1, True, "42", None])
def test_a_claim_with_a_strange_pid_names_no_process(pid: object) -> None:
    """kill(0) or kill(-1) would address process groups: such a claim is never judged."""
    assert HERE is not None
    assert holder_of(HERE, pid=pid).process is None


def test_a_hostile_claim_is_shown_escaped() -> None:
    holder = Holder.parse("n__lock__0000000001", b"\x1b[2Jevil\nline", 1)
    assert holder.describe() == "\\x1b[2Jevil\\nline"
    assert HERE is not None
    shown = holder_of(HERE, user="x\x1b]0;t\x07", host="h\u202e").describe()
    assert "\x1b" not in shown and "\u202e" not in shown and "\\x1b]0;t\\x07" in shown


def test_the_default_wait_outlasts_a_crashed_holders_session() -> None:
    assert default_lock_wait(30) == 50  # ZooKeeper's default session timeout
    assert default_lock_wait(4) == 11  # the tests' minimum (2 ticks of 2 s)


def test_lock_wait_durations() -> None:
    assert [lock_wait_seconds(t) for t in ("0", "0s", "90", "1m30s", "1.5m", "2h")] == [0, 0, 90, 90, 90, 7200]
    for bad in ("", "-1", "soon", "5 m", "1d", "nan"):
        with pytest.raises(ValueError):
            lock_wait_seconds(bad)
    assert duration_seconds("1d") == 86400


@pytest.mark.parametrize("command", ["apply", "reconcile"])
def test_lock_timeout_option_must_be_a_duration(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("soon", "-5s", "2d"):
        assert run([command, "--lock-timeout", bad]) == 1  # refused before anything is read
        err = capsys.readouterr().err
        assert "--lock-timeout" in err and repr(bad) in err, err
