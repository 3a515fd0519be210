"""Several apply batches in flight on one ZooKeeper session, chained so that what commits is always a prefix.

Batch n's multi sets the apply lock's node (to the data it holds already) at version n-1, where batch n-1 left
it. ZooKeeper processes one session's requests in order and a failed multi changes nothing, so when batch k
fails (a stale version, the controller changed, the lock gone), every batch after it fails its lock op: the
batches that commit are always 1..j, as when they were sent one at a time. Up to `WINDOW` batches are on
their way at once; the server logs and syncs them together, so small batches (64 KiB: ZooKeeper's heap,
`write.ApplyOptions`) cost what large ones did (bench/apply.py; docs/performance.md).

After a lost connection or a timeout, the lock node's version (read on the same session, so after every batch
sent before it) says exactly how many committed; the rest are sent again, at most `txn.COMMIT_ATTEMPTS` times
each. A batch sent again cannot commit twice: it carries the same lock version, which its first commit
would have moved on. If the lock node is gone (the session expired), each batch's first written znode is read
back to count what committed, and the apply stops: another apply may hold the lock now.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, KazooException, NoNodeError
from kazoo.retry import KazooRetry, RetryFailedError

from reconciler.zk import txn
from reconciler.zk.session import ZooKeeperError, where
from reconciler.zk.txn import AMBIGUOUS, COMMIT_ATTEMPTS, COMMIT_TIMEOUT_S, Op

log = logging.getLogger(__name__)

WINDOW = 4  # batches in flight: 40 multis of 64 KiB took ~0.29 s one at a time, ~0.19 s four at a time


def lock_op(lock_node: str, claim: bytes, number: int) -> Op:
    """Batch `number`'s (from 1) link in the chain: the lock node's data set again, at the previous batch's
    version (the node is created at version 0)."""
    return Op("set", lock_node, claim, number - 1)


@dataclass(slots=True)
class _Sent:
    number: int
    ops: Sequence[Op]
    reply: Any  # kazoo's AsyncResult, or `_Raised`
    attempts: int = 1


class _Raised:
    """A reply that failed before it was queued (kazoo's `_call` raising): it raises when read."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def get(self, timeout: float | None = None) -> Any:
        raise self.exc

    def ready(self) -> bool:
        return True


class Pipeline:
    """The batches of one apply on their way; `wait` returns them committed, in order."""

    def __init__(self, client: KazooClient, lock_node: str, total: int, window: int = WINDOW) -> None:
        self.client, self.lock_node, self.total, self.window = client, lock_node, total, window
        self.sent: deque[_Sent] = deque()

    def room(self) -> bool:
        return len(self.sent) < self.window

    def numbers(self) -> list[int]:
        """The batches sent whose outcome this apply has not read yet."""
        return [s.number for s in self.sent]

    def submit(self, number: int, ops: Sequence[Op]) -> None:
        """Send batch `number`: its ops must start with its `lock_op` (after the controller check). It counts as
        on its way before it is queued, so a signal in between leaves it to `settle`, never uncounted."""
        sent = _Sent(number, ops, _Raised(ConnectionLoss()))
        self.sent.append(sent)
        sent.reply = self._send(ops)

    def wait(self) -> int:
        """Wait for the oldest batch sent; the number of batches now known committed (the oldest and maybe
        more, after a lost connection). ConflictError / ZooKeeperError: the oldest did not commit, nor any
        after it."""
        oldest = self.sent[0]
        try:
            results = oldest.reply.get(timeout=COMMIT_TIMEOUT_S)
        except AMBIGUOUS as exc:
            log.warning("batch %d/%d: %r during commit (attempt %d); reading the apply lock's version to learn "
                        "what committed", oldest.number, self.total, exc, oldest.attempts)
            return self._recover()
        except KazooException as exc:  # refused as a whole (a multi is atomic)
            raise ZooKeeperError(
                f"ZooKeeper refused batch {oldest.number}/{self.total} ({type(exc).__name__}); nothing of it "
                f"was written{txn.earlier(oldest.number)}"
            ) from exc
        if oldest.attempts > 1 and self._lock_refused(oldest.ops, results):  # a first attempt committed after all?
            version = self._lock_version()
            if version is not None and version >= oldest.number:
                self.sent.popleft()
                return 1
        txn.check_results(self.client, oldest.ops, results, oldest.number, self.total, self.lock_node)
        self.sent.popleft()
        return 1

    def settle(self, timeout_s: float) -> int | None:
        """After a second signal: how many of the batches in flight committed, from the lock node's version read
        with a bounded wait (it is answered after all of them); None when ZooKeeper does not say in time."""
        if not self.sent:
            return 0
        try:
            stat = self.client.exists_async(self.lock_node).get(timeout=timeout_s)
        except Exception:  # any failure here means: unknown
            return None
        first = self.sent[0].number
        if stat is None or not first - 1 <= stat.version <= self.sent[-1].number:
            return None
        return int(stat.version) - (first - 1)

    # --- after a lost connection --------------------------------------------------------------------------

    def _recover(self) -> int:
        version = self._lock_version()
        if version is None:
            return self._lock_gone()
        first, last = self.sent[0].number, self.sent[-1].number
        if not first - 1 <= version <= last:
            raise ZooKeeperError(
                f"the apply lock {where(self.client, self.lock_node)} is at version {version}, but batches 1-"
                f"{first - 1} of {self.total} had committed and {last} were sent: something else wrote the "
                f"lock node{txn.earlier(first)}; run `reconciler plan` again"
            )
        committed = version - (first - 1)
        for _ in range(committed):
            self.sent.popleft()
        for again in self.sent:  # verified not committed: sending them again cannot double anything
            again.attempts += 1
            if again.attempts > COMMIT_ATTEMPTS:
                raise ZooKeeperError(
                    f"batch {again.number}/{self.total}: the ZooKeeper connection dropped {COMMIT_ATTEMPTS} "
                    "times during the commit; each time it was verified not committed, so nothing of it was "
                    f"written{txn.earlier(again.number)}. Check the connection and apply again (if it repeats, "
                    "lower max_batch_bytes: the request may exceed the server's jute.maxbuffer)"
                )
            again.reply = self._send(again.ops)
        return committed if committed else self.wait()

    def _lock_version(self) -> int | None:
        """The lock node's version, reconnecting if need be; None when the node is gone."""
        retry = KazooRetry(max_tries=10, delay=0.2, backoff=2, max_delay=3.0, ignore_expire=True)
        try:
            stat = retry(self.client.exists, self.lock_node)
        except (RetryFailedError, *AMBIGUOUS) as exc:
            first = self.sent[0].number if self.sent else 0
            raise ZooKeeperError(
                f"batch {first}/{self.total}: lost the ZooKeeper connection during the commit and could not "
                f"reconnect to check whether it committed{txn.earlier(first)}; run `reconciler plan` when "
                "ZooKeeper is reachable again: it shows what is left to do"
            ) from exc
        return None if stat is None else int(stat.version)

    def _lock_gone(self) -> int:
        """The session expired with the lock: count the batches that committed before, then stop."""
        committed = 0
        for sent in self.sent:
            state = txn.probe(self.client, sent.ops, sent.number, self.total, self.lock_node)
            if state != "committed":
                break
            committed += 1
        if committed:
            for _ in range(committed):
                self.sent.popleft()
            return committed  # the next wait reports the lock gone, for the first batch that did not commit
        number = self.sent[0].number
        raise ZooKeeperError(
            f"the apply lock {where(self.client, self.lock_node)} is gone: the ZooKeeper session expired (or the "
            f"node was deleted), so another apply may hold the lock now; nothing of batch {number}/{self.total} "
            f"was written{txn.earlier(number)}. Run `reconciler plan` and apply again"
        )

    def _lock_refused(self, ops: Sequence[Op], results: list[Any]) -> bool:
        return any(op.path == self.lock_node and isinstance(r, BadVersionError | NoNodeError)
                   for op, r in zip(ops, results, strict=False))

    def _send(self, ops: Sequence[Op]) -> Any:
        try:
            return txn.submit(self.client, ops)
        except (KazooException, *AMBIGUOUS) as exc:
            return _Raised(exc)

