"""Who holds an apply lock (ZooKeeper's lock node, KRaft's lease record), and whether that holder is provably dead.

Every contender writes a small JSON claim into its lock node: who (user, host), which process, which plan,
since when. The process is named by its pid, its start time, the kernel's boot id and its PID namespace:
together they identify one process on one machine, even after the pid is reused or in another container.

A holder is *provably dead* only when it ran under this kernel (same boot id) in this PID namespace, and its
pid no longer exists, is a zombie, or now belongs to a process that started at another time (pid reuse).
Anything else is no proof and the lock is waited for: another machine or container, a platform without
/proc, a process whose start time cannot be read, or a claim written by an older version (plain text).

Why not ask ZooKeeper whether the holder's session is alive: the lock node's `ephemeralOwner` is the
holder's session, and ZooKeeper deletes a session's ephemeral nodes in the very transaction that closes or
expires it (DataTree.killSession on the closeSession txn). So while the node exists the server still counts
that session as live; there is no state "node present, session dead" for `cons`/`dump` to reveal. `cons`
lists only the sessions connected to the one server asked, so a live session that is reconnecting, or
connected to another member of the ensemble, is absent from it: its absence proves nothing. (Both
four-letter words are also disabled by default since ZooKeeper 3.5.) The session's end is therefore
observed the only reliable way, by watching the node disappear, within the lock wait.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.render.common import printable

CLAIM_VERSION = 1
_MAX_SHOWN = 200  # characters of an unparsable claim shown to the operator


@dataclass(frozen=True, slots=True)
class ProcessId:
    """One process on one machine: pid plus what makes it unique (start time in clock ticks since boot)."""

    boot_id: str
    pid_namespace: str
    pid: int
    start_ticks: int

    @staticmethod
    def current() -> ProcessId | None:
        """This process, or None where /proc does not tell (then nobody can prove this process dead). Read once
        per process (a fleet pass takes a lock per cluster; a forked worker is another process)."""
        pid = os.getpid()
        if pid not in _CURRENT:
            _CURRENT.clear()
            _CURRENT[pid] = ProcessId._read()
        return _CURRENT[pid]

    @staticmethod
    def _read() -> ProcessId | None:
        try:
            boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
            namespace = os.readlink("/proc/self/ns/pid")
        except OSError:
            return None
        pid = os.getpid()
        ticks = start_ticks(pid)
        return None if ticks is None or not boot_id else ProcessId(boot_id, namespace, pid, ticks)

    def to_json(self) -> dict[str, Any]:
        return {"bootId": self.boot_id, "pidNamespace": self.pid_namespace, "startTicks": self.start_ticks}


_CURRENT: dict[int, ProcessId | None] = {}


def start_ticks(pid: int) -> int | None:
    """The process's start time (field 22 of /proc/PID/stat); None when unreadable or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), None when it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may contain anything
    return fields if len(fields) >= 20 and fields[19].isdigit() else None


def _exists(pid: int) -> bool:
    """Signal 0 checks existence without /proc, so a `hidepid` mount cannot make a live process look dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def claim(user: str, plan_id: str, since: str) -> bytes:
    """The lock node's data for this process: who, where, which plan, since when (never a secret)."""
    me = ProcessId.current()
    body: dict[str, Any] = {
        "version": CLAIM_VERSION, "user": user, "host": socket.gethostname(), "pid": os.getpid(),
        "planId": plan_id, "since": since,
    }
    if me is not None:
        body["process"] = me.to_json()
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Holder:
    """A contender for the lock as its node shows it; `text` is a claim that is not ours (older versions)."""

    node: str  # the lock node, or the lease's token
    session: int | None  # the node's ephemeralOwner (None: a lease, which has no session)
    user: str | None = None
    host: str | None = None
    pid: int | None = None
    plan_id: str | None = None
    since: str | None = None
    process: ProcessId | None = None
    text: str | None = None

    @staticmethod
    def parse(node: str, data: bytes, session: int | None) -> Holder:
        try:
            body = json.loads(data)
            if not isinstance(body, dict) or body.get("version") != CLAIM_VERSION:
                raise ValueError("not a claim")
            pid = body.get("pid")
            return Holder(
                node, session, _text(body.get("user")), _text(body.get("host")),
                pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                _text(body.get("planId")), _text(body.get("since")), _process(body.get("process"), pid),
            )
        except (ValueError, UnicodeDecodeError, RecursionError):
            return Holder(node, session, text=data.decode("utf-8", errors="replace"))

    def describe(self) -> str:
        """One safe line: `alice@ci (host ci-7, pid 4242, plan 3f2a…, since 2025-01-01T10:00:00Z)`."""
        if self.text is not None:
            shown = self.text if len(self.text) <= _MAX_SHOWN else self.text[:_MAX_SHOWN] + "…"
            return printable(shown) or "an unnamed contender"
        details = [f"host {self.host or '?'}", f"pid {self.pid if self.pid is not None else '?'}",
                   f"plan {self.plan_id or '?'}", f"since {self.since or '?'}"]
        return printable(f"{self.user or 'unknown'} ({', '.join(details)})")

    def audit(self, reason: str) -> dict[str, Any]:
        """What the audit entry records of a holder whose lock was taken over."""
        out: dict[str, Any] = {"node": self.node, "reason": reason}
        if self.session is not None:
            out["session"] = f"0x{self.session:x}"
        if self.text is not None:
            out["holder"] = self.text[:_MAX_SHOWN]
        else:
            out.update({"user": self.user, "host": self.host, "pid": self.pid, "planId": self.plan_id,
                        "since": self.since})
        return out


def _text(value: object) -> str | None:
    return value[:_MAX_SHOWN] if isinstance(value, str) else None


def _process(value: object, pid: object) -> ProcessId | None:
    if not isinstance(value, dict) or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None  # pid 0 or -1 would make kill(2) address a process group
    boot, namespace, ticks = value.get("bootId"), value.get("pidNamespace"), value.get("startTicks")
    if isinstance(boot, str) and isinstance(namespace, str) and isinstance(ticks, int) and boot:
        return ProcessId(boot, namespace, pid, ticks)
    return None


def death(holder: Holder, here: ProcessId | None) -> str | None:
    """Why `holder` is provably dead, or None when it may be alive (see the module's doc)."""
    theirs = holder.process
    if theirs is None or here is None or (theirs.boot_id, theirs.pid_namespace) != (
        here.boot_id, here.pid_namespace
    ):
        return None
    if theirs.pid == here.pid and theirs.start_ticks == here.start_ticks:
        return None  # ourselves: alive by definition
    where = f"on {printable(holder.host or 'this host')}"
    if not _exists(theirs.pid):
        return f"process {theirs.pid} no longer exists {where}"
    fields = _stat(theirs.pid)
    if fields is None:
        return None  # it exists but /proc hides it from us (hidepid): no proof
    if fields[0] in ("Z", "X"):
        return f"process {theirs.pid} {where} has exited (a zombie not yet reaped)"
    ticks = int(fields[19])
    if ticks != theirs.start_ticks:
        return f"process {theirs.pid} {where} exited; the pid now belongs to another process"
    return None
