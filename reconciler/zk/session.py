"""Connecting to a cluster's ZooKeeper with kazoo: chroot, bounded timeouts and retries, digest auth, ACLs.

Errors name the connect string and never the credentials. The client uses a cheaper `select` than kazoo's
default handler (see `_SelectHandler`), which halves the cost of large pipelined reads.
"""

from __future__ import annotations

import select
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, KazooException
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.security import ACL, Id, make_digest_acl

from reconciler.errors import ReconcilerError
from reconciler.model import Secret, ZooKeeperSpec
from reconciler.zk.layout import PERM_ALL, AclEntry

_FD_SETSIZE = 1024
# Retry only what a new attempt can fix (connection loss, timeouts); an expired session is never retried
# silently, because ephemeral nodes (the apply lock) died with it.
COMMAND_RETRY: dict[str, Any] = {
    "max_tries": 3,
    "delay": 0.2,
    "backoff": 2,
    "max_delay": 2.0,
    "ignore_expire": False,
}


class ZooKeeperError(ReconcilerError):
    """ZooKeeper is unreachable, timed out or refused the session (names the connect string only)."""


class _SelectHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's handler builds and tears down an epoll selector on every `select` (four per request), which
    dominates pipelined reads. Plain `select.select` on the client's two descriptors is equivalent while
    they are below FD_SETSIZE; above it we fall back to kazoo's selector version."""

    def select(
        self, rlist: list[Any], wlist: list[Any], xlist: list[Any], timeout: float | None = None
    ) -> Any:
        for group in (rlist, wlist, xlist):
            for obj in group:
                if (obj if isinstance(obj, int) else obj.fileno()) >= _FD_SETSIZE:
                    return super().select(rlist, wlist, xlist, timeout)
        return select.select(rlist, wlist, xlist, timeout)


def connect(
    spec: ZooKeeperSpec,
    credentials: Secret | None = None,
    *,
    connect_timeout_s: float = 10.0,
    read_only: bool = False,
) -> KazooClient:
    """A started client on `spec.connect` (chroot included). `credentials` ("user:password" for digest) are
    added to the session and re-sent by kazoo on every reconnect."""
    where = f"ZooKeeper at {spec.connect}"
    # Reconnect attempts (about one a second) until the session would have expired anyway, then give up.
    connection_retry = {
        "max_tries": max(5, int(spec.session_timeout_s) + 5),
        "delay": 0.1,
        "backoff": 2,
        "max_delay": 1.0,
        "ignore_expire": False,
    }
    try:
        client = KazooClient(
            hosts=spec.connect,
            timeout=spec.session_timeout_s,
            handler=_SelectHandler(),
            connection_retry=connection_retry,
            command_retry=COMMAND_RETRY,
            read_only=read_only,
        )
    except (ValueError, KazooException) as exc:
        raise ZooKeeperError(f"invalid ZooKeeper connect string {spec.connect!r}: {exc}") from exc
    try:
        with warnings.catch_warnings():
            # kazoo warns when the chroot does not exist yet; for a fresh cluster that simply reads empty
            warnings.simplefilter("ignore")
            client.start(timeout=connect_timeout_s)
    except KazooTimeoutError as exc:
        close(client)
        raise ZooKeeperError(f"cannot connect to {where} within {connect_timeout_s:g} s") from exc
    except Exception as exc:
        close(client)
        raise ZooKeeperError(f"cannot connect to {where}: {type(exc).__name__}") from exc
    if credentials is not None:
        scheme = spec.auth_scheme or "digest"
        try:
            client.add_auth(scheme, credentials.reveal())
        except (AuthFailedError, KazooException, KazooTimeoutError) as exc:
            close(client)
            # the exception text could echo the credential: name only its type
            raise ZooKeeperError(f"{where} refused {scheme} authentication ({type(exc).__name__})") from None
    return client


def close(client: KazooClient) -> None:
    """Stop and release a client; never raises (used on error paths)."""
    with suppress(Exception):
        client.stop()
    with suppress(Exception):
        client.close()


@contextmanager
def session(
    spec: ZooKeeperSpec, credentials: Secret | None = None, *, connect_timeout_s: float = 10.0
) -> Iterator[KazooClient]:
    """`with session(spec, creds) as client:` connects, and closes the client however the block ends."""
    client = connect(spec, credentials, connect_timeout_s=connect_timeout_s)
    try:
        yield client
    finally:
        close(client)


def kazoo_acls(entries: Iterable[AclEntry]) -> list[ACL]:
    """layout's ACL entries as kazoo ACLs: ("auth", "", ALL) is kazoo's CREATOR_ALL_ACL, ("world",
    "anyone", …) OPEN_ACL_UNSAFE / READ_ACL_UNSAFE; the lists compare equal to kazoo's constants."""
    return [ACL(entry.perms, Id(entry.scheme, entry.id)) for entry in entries]


def digest_acl(credentials: Secret, perms: int = PERM_ALL) -> ACL:
    """An explicit digest ACL for "user:password" (for nodes that must name an identity other than ours)."""
    user, _, password = credentials.reveal().partition(":")
    acl = make_digest_acl(user, password, all=True)
    return ACL(perms, acl.id)
