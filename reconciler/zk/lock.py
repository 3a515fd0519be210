"""The guards around an apply: the KRaft-controller check and the per-cluster apply lock.

Both run before anything is written. The lock is kazoo's `Lock` recipe (ephemeral sequential nodes under
`<reconciler_path>/lock`), so a crashed apply's lock disappears with its ZooKeeper session.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout, NoNodeError

from reconciler.errors import ConflictError, RefusedError
from reconciler.zk.layout import CONTROLLER_PATH, decode_controller

log = logging.getLogger(__name__)


def where(client: KazooClient, path: str) -> str:
    """The server-side path (chroot included), as an operator would look it up."""
    return f"{client.chroot or ''}{path}"


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


def lock_identifier(user: str, plan_id: str) -> str:
    """What other appliers see as the holder: user@host, pid and plan id."""
    who = user if "@" in user else f"{user}@{socket.gethostname()}"
    return f"{who} pid {os.getpid()} plan {plan_id}"


@contextmanager
def cluster_lock(
    client: KazooClient, path: str, identifier: str, timeout_s: float, cluster: str
) -> Iterator[str]:
    """Hold the cluster's apply lock for the block; ConflictError (exit 3) naming the holder on timeout.

    Yields the lock's own ephemeral znode: writes must `check` it in their multi, so that nothing commits
    once the lock is gone (its session expired: kazoo silently opens a new session, without the lock).
    The lock path must exist already (created by the caller with the right ACLs).
    """
    lock = client.Lock(path, identifier)
    try:
        acquired = bool(lock.acquire(timeout=timeout_s))
    except LockTimeout:
        acquired = False
    if not acquired:
        raise ConflictError(
            f"cluster {cluster}: another apply holds the lock {where(client, path)} ({_holder(lock)}); "
            f"waited {timeout_s:g} s and wrote nothing. Retry when it has finished; the lock of a crashed "
            "apply disappears when its ZooKeeper session expires"
        )
    try:
        yield f"{path}/{lock.node}"
    finally:
        try:
            lock.release()
        except KazooException as exc:  # the ephemeral node goes with the session anyway
            log.warning("could not release the apply lock %s: %r", where(client, path), exc)


def _holder(lock: object) -> str:
    with suppress(KazooException):
        contenders = lock.contenders()  # type: ignore[attr-defined]
        if contenders:
            return f"held by {contenders[0] or 'an unnamed contender'}"
    return "holder unknown"
