"""The apply lock of a KRaft cluster: a lease record in the reconciler's state (kraft/statedata.py), taken and
renewed by compare-and-set (kraft/state.py: producer fencing through the cluster's `transactional.id`), so
one applier at a time writes to a cluster, whichever machine it runs on.

* take: free (no lease, or released) -> write a lease with a fresh token and this process's claim (who, where,
  which process and plan, since when: `holder.claim`);
* hold: a heartbeat thread bumps the lease's counter every LEASE_S / 4; when it cannot for 3/4 of the lease,
  or finds the lease taken over, the lease is *lost* and the apply stops before its next write;
* wait: a contender that finds the lease held says who holds it (once), and waits up to the lock timeout
  (`--lock-timeout`, RECONCILER_LOCK_TIMEOUT; default `default_lock_wait`), then exits 3 naming the holder;
* take over: a holder is dead when its heartbeat has not changed for a whole lease *as the contender's own
  clock measures it* (no comparison of two machines' clocks), or at once when it ran on this machine and its
  process is provably gone (`holder.death`). The takeover is recorded in the apply's audit entry.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ConflictError, ReconcilerError
from reconciler.holder import Holder, ProcessId, death
from reconciler.kraft.statedata import LockRecord, State, Store, lock_record, released_record

log = logging.getLogger(__name__)

LEASE_S = 20.0
POLL_S = 1.0
Notify = Callable[[str], None]


def default_lock_wait(lease_s: float = LEASE_S) -> float:
    """Long enough for a killed holder's lease to be seen unrenewed for a whole lease, and then taken."""
    return 2 * lease_s + 5.0


def holder_of(lock: LockRecord) -> Holder:
    return Holder.parse(lock.token, json.dumps(dict(lock.claim)).encode("utf-8"), None)


@dataclass
class Lease:
    token: str
    taken_over: tuple[Mapping[str, Any], ...] = ()
    lost: threading.Event = field(default_factory=threading.Event)
    lost_to: str = ""


class _Changed(Exception):
    """The lease changed between the look and the compare-and-set: look again."""


class _Lost(Exception):
    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


@contextmanager
def apply_lock(store: Store, claim: Mapping[str, Any], timeout_s: float, cluster: str,
               notify: Notify | None = None, lease_s: float = LEASE_S) -> Iterator[Lease]:
    """Hold the cluster's apply lock for the block; ConflictError (exit 3) naming the holder on timeout."""
    token = uuid.uuid4().hex
    lease = Lease(token, _acquire(store, token, claim, timeout_s, cluster, notify, lease_s))
    beat = _Heartbeat(store, lease, claim, lease_s)
    beat.start()
    try:
        yield lease
    finally:
        beat.stop()
        try:
            store.transact(lambda state: [released_record(token)] if state.lock and state.lock.token == token
                           else [])
        except ReconcilerError as exc:  # the lease then runs out by itself
            log.warning("cluster %s: could not release the apply lock in the %s (%s)", cluster, store.where,
                        exc.message)


def _acquire(store: Store, token: str, claim: Mapping[str, Any], timeout_s: float, cluster: str,
             notify: Notify | None, lease_s: float) -> tuple[Mapping[str, Any], ...]:
    deadline = time.monotonic() + timeout_s
    seen: tuple[str, int] | None = None
    seen_since = time.monotonic()
    told = False
    here = ProcessId.current()
    lease_ms = int(lease_s * 1000)
    while True:
        current = store.read().lock
        holder, dead = None, None
        if current is not None:
            if current.version != seen:
                seen, seen_since = current.version, time.monotonic()
            holder = holder_of(current)
            quiet = time.monotonic() - seen_since
            dead = death(holder, here) or (f"its lease was not renewed for {quiet:.0f} s (a lease lasts "
                                           f"{current.lease_ms / 1000:g} s)" if quiet > current.lease_ms / 1000
                                           else None)
        if current is None or dead is not None:
            expected = None if current is None else current.version

            def decide(state: State, expected: tuple[str, int] | None = expected) -> list[Any]:
                if (None if state.lock is None else state.lock.version) != expected:
                    raise _Changed()
                return [lock_record(token, claim, 0, lease_ms)]

            try:
                store.transact(decide)
            except _Changed:
                continue
            if holder is None or dead is None:
                return ()
            if notify is not None:
                notify(f"cluster {cluster}: took over the apply lock of {holder.describe()}: {dead}")
            return (holder.audit(dead),)
        assert holder is not None
        if not told and notify is not None and timeout_s > 0:
            notify(f"cluster {cluster}: waiting up to {timeout_s:g} s for the apply lock ({store.where}), held by "
                   f"{holder.describe()}")
            told = True
        if time.monotonic() >= deadline:
            raise ConflictError(f"cluster {cluster}: another apply holds the lock ({store.where}): "
                                f"{holder.describe()}; waited {timeout_s:g} s (--lock-timeout); nothing was written")
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))


class _Heartbeat(threading.Thread):
    """Renews the lease every lease_s / 4; sets `lease.lost` when it is taken over or cannot be renewed."""

    def __init__(self, store: Store, lease: Lease, claim: Mapping[str, Any], lease_s: float) -> None:
        super().__init__(name="kraft-lease", daemon=True)
        self.store, self.lease, self.claim, self.lease_s = store, lease, claim, lease_s
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)

    def run(self) -> None:
        token, last_ok = self.lease.token, time.monotonic()

        def decide(state: State) -> list[Any]:
            if state.lock is None or state.lock.token != token:
                raise _Lost(holder_of(state.lock).describe() if state.lock else "nobody (the lease was released)")
            return [lock_record(token, self.claim, state.lock.beat + 1, int(self.lease_s * 1000))]

        while not self.stopping.wait(self.lease_s / 4):
            try:
                self.store.transact(decide)
                last_ok = time.monotonic()
            except _Lost as lost:
                self.lease.lost_to = lost.holder
                self.lease.lost.set()
                return
            except Exception as exc:  # a broker down for a moment: try again, until the lease is at risk
                log.info("lease renewal failed (%s)", type(exc).__name__)
                if time.monotonic() - last_ok > 0.75 * self.lease_s:
                    self.lease.lost_to = f"unknown: the lease could not be renewed for {0.75 * self.lease_s:g} s"
                    self.lease.lost.set()
                    return
