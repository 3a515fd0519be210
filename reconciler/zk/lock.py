"""The guards around an apply: the KRaft-controller check and the per-cluster apply lock.

Both run before anything is written. The lock is the classic ZooKeeper lock recipe, in kazoo's `Lock` node
format so that older versions and this one queue together: an ephemeral sequential node
`<uuid>__lock__NNNNNNNNNN` per contender under `<reconciler_path>/lock`, the lowest sequence holds it, each
contender watches the node just ahead of it. A crashed apply's node disappears when its ZooKeeper session
expires; until then the next apply waits (by default a little longer than the session timeout), unless the
holder is provably dead (`holder.py`: same machine, its process gone), in which case its node is deleted at
once and the takeover is recorded in the audit entry.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from reconciler.errors import ConflictError, RefusedError
from reconciler.holder import Holder, ProcessId, death
from reconciler.rules.cluster import kafka_namespace_problem
from reconciler.zk.layout import CONTROLLER_PATH, decode_controller
from reconciler.zk.session import where

log = logging.getLogger(__name__)


def refuse_kraft(client: KazooClient, cluster: str) -> int | None:
    """Kafka 3.7.1+'s guard (KAFKA-16539): no direct writes while a KRaft controller owns the metadata.

    Returns the controller znode's version, to check in every batch as Kafka does (None when there is no
    controller: a cluster whose brokers are down can still be configured, as `kafka-configs.sh` allows).
    """
    try:
        data, stat = client.retry(client.get, CONTROLLER_PATH)
    except NoNodeError:
        return None
    controller = decode_controller(data, where(client, CONTROLLER_PATH), stat.version)
    if controller.is_kraft:
        raise RefusedError(
            f"cluster {cluster}: refusing to write: {where(client, CONTROLLER_PATH)} shows "
            f"kraftControllerEpoch {controller.kraft_controller_epoch}: a KRaft controller owns the metadata "
            "and ZooKeeper is only a dual-write copy; change configs through the Kafka Admin API "
            "(kafka-configs.sh --bootstrap-server)"
        )
    return int(stat.version)


NODE_NAME = "__lock__"  # kazoo's Lock: <uuid hex>__lock__<sequence>, ordered by the sequence alone
_SEQUENCE = re.compile(r"__lock__(-?\d{10})$")
RECHECK_S = 1.0  # while waiting, how often a same-machine holder's process is looked at again
Notify = Callable[[str], None]


def default_lock_wait(session_timeout_s: float) -> float:
    """How long apply waits for the lock by default: long enough for a crashed holder's session to expire.

    ZooKeeper expires a session between `timeout` and `timeout + tickTime` after its last contact (expiry is
    checked once per tick), and the server negotiates at least two ticks, so tickTime <= timeout / 2; a
    restarted server re-arms every restored session for a full timeout. 1.5 x the timeout covers both,
    plus 5 s for a server still starting and for scheduling.
    """
    return 1.5 * session_timeout_s + 5.0


@dataclass(frozen=True, slots=True)
class HeldLock:
    """The lock's own ephemeral znode (writes `check` it) and the dead holders whose locks were taken over."""

    node: str
    taken_over: tuple[Mapping[str, Any], ...] = ()


def refuse_kafka_namespace(client: KazooClient, path: str) -> None:
    """RefusedError when the reconciler's own znode `path` would be, on the server, inside a Kafka namespace of
    any chroot (`rules.cluster.kafka_namespace_problem` over the client's chroot + `path`). Validation refuses
    such a reconcilerPath or chroot at its manifest line; this holds whatever reached the writer."""
    problem = kafka_namespace_problem(path, client.chroot or "")
    if problem is not None:
        raise RefusedError(f"refusing to create {where(client, path)}: {problem}")


@contextmanager
def cluster_lock(
    client: KazooClient, path: str, claim: bytes, timeout_s: float, cluster: str, notify: Notify | None = None
) -> Iterator[HeldLock]:
    """Hold the cluster's apply lock for the block; ConflictError (exit 3) naming the holder on timeout.

    `claim` is this contender's node data (`holder.claim`). `notify` gets one line when the wait starts
    (naming the holder) and one per takeover. The yielded node must be `check`ed in every write multi, so
    that nothing commits once the lock is gone (its session expired: kazoo silently opens a new session,
    without the lock). The lock path must exist already (created by the caller with the right ACLs).
    """
    refuse_kafka_namespace(client, path)
    queue = _Queue(client, path, cluster, notify or (lambda _line: None))
    node = queue.enter(claim)
    try:
        node, taken = queue.wait(node, claim, timeout_s)
    except BaseException:
        queue.leave(node)
        raise
    try:
        yield HeldLock(f"{path}/{node}", taken)
    finally:
        queue.leave(node)


class _Queue:
    """The contenders under one lock path, as this contender sees them."""

    def __init__(self, client: KazooClient, path: str, cluster: str, notify: Notify) -> None:
        self.client, self.path, self.cluster, self.notify = client, path, cluster, notify
        self.here = ProcessId.current()
        self.holders: dict[str, Holder] = {}  # a node's data never changes: read each once

    def enter(self, claim: bytes) -> str:
        """Create our node; after a lost connection, find the one the server may have created (uuid prefix)."""
        prefix = uuid.uuid4().hex + NODE_NAME
        tried = False

        def create() -> str:
            nonlocal tried
            if tried:
                mine: list[str] = [c for c in self.client.get_children(self.path) if c.startswith(prefix)]
                if mine:
                    return mine[0]
            tried = True
            created: str = self.client.create(f"{self.path}/{prefix}", claim, ephemeral=True, sequence=True)
            return created.rsplit("/", 1)[1]

        return str(self.client.retry(create))

    def leave(self, node: str) -> None:
        try:
            self.client.retry(self.client.delete, f"{self.path}/{node}")
        except NoNodeError:
            pass
        except KazooException as exc:  # the ephemeral node goes with the session anyway
            log.warning("could not release the apply lock %s: %r", where(self.client, self.path), exc)

    def wait(self, node: str, claim: bytes, timeout_s: float) -> tuple[str, tuple[Mapping[str, Any], ...]]:
        """Until `node` is first in line; dead contenders ahead are removed. Returns our node (re-created if
        our session expired while waiting) and the takeovers."""
        deadline = time.monotonic() + timeout_s
        woken = threading.Event()
        watch = lambda _event: woken.set()  # noqa: E731 (one object: kazoo keeps one watch per function)
        taken: list[Mapping[str, Any]] = []
        announced: set[str] = set()
        while True:
            ahead = self._ahead(node)
            if ahead is None:  # our node died with an expired session: queue again, at the back
                node = self.enter(claim)
                continue
            holders = [h for h in map(self._holder, ahead) if h is not None]
            if not holders:
                return node, tuple(taken)
            if self._take_over_dead(holders, taken):
                continue
            holder = holders[0]
            if timeout_s > 0 and holder.node not in announced:  # the whole wait for the first, then what is left
                left = timeout_s if not announced else max(0.0, deadline - time.monotonic())
                announced.add(holder.node)
                self.notify(f"cluster {self.cluster}: the apply lock is held by {holder.describe()}; waiting up "
                            f"to {_seconds(left)} s for it (a crashed apply's lock goes when its session expires)")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ConflictError(
                    f"cluster {self.cluster}: another apply holds the lock {where(self.client, self.path)} "
                    f"(held by {holder.describe()}); waited {timeout_s:g} s and wrote nothing. Retry when it "
                    "has finished, or wait longer with --lock-timeout; the lock of a crashed apply on another "
                    "host disappears when its ZooKeeper session expires"
                )
            woken.clear()
            if self.client.retry(self.client.exists, f"{self.path}/{holders[-1].node}", watch=watch):
                woken.wait(min(remaining, RECHECK_S))

    def _ahead(self, node: str) -> list[str] | None:
        """The contenders ahead of `node`, first in line first; None when `node` itself is gone."""
        children = self.client.retry(self.client.get_children, self.path)
        if node not in children:
            return None
        ours = _sequence(node)
        if ours is None:
            return []
        ahead = ((s, c) for c in children if (s := _sequence(c)) is not None and s < ours)
        return [c for _, c in sorted(ahead)]

    def _holder(self, node: str) -> Holder | None:
        if node not in self.holders:
            try:
                data, stat = self.client.retry(self.client.get, f"{self.path}/{node}")
            except NoNodeError:
                return None
            self.holders[node] = Holder.parse(node, data, int(stat.ephemeralOwner))
        return self.holders[node]

    def _take_over_dead(self, holders: list[Holder], taken: list[Mapping[str, Any]]) -> bool:
        """Delete the nodes of provably dead contenders; True if there were any."""
        found = False
        for holder in holders:
            reason = death(holder, self.here)
            if reason is None:
                continue
            found = True
            with suppress(NoNodeError):  # another contender took it over first: the same outcome
                self.client.retry(self.client.delete, f"{self.path}/{holder.node}")
            self.holders.pop(holder.node, None)
            taken.append(holder.audit(reason))
            log.info("took over the apply lock node %s: %s", holder.node, reason)
            self.notify(f"cluster {self.cluster}: took over the apply lock of a crashed apply, "
                        f"{holder.describe()}: {reason}")
        return found


def _seconds(value: float) -> str:
    """11, 2, 0.5: whole seconds unless the wait is shorter than ten."""
    return f"{value:.0f}" if value >= 9.95 else f"{value:.1f}".removesuffix(".0")


def _sequence(child: str) -> int | None:
    match = _SEQUENCE.search(child)
    return int(match.group(1)) if match else None
