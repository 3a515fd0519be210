"""Connecting to a cluster's ZooKeeper with kazoo: chroot, bounded timeouts and retries, TLS, digest or SASL
auth, ACLs, and the operator's allow-list of ZooKeeper hosts.

Transport security follows what Kafka's own ZooKeeper client supports (KIP-515): TLS with a trusted CA, an
optional client certificate and hostname verification (Kafka's `zookeeper.ssl.*`), and SASL DIGEST-MD5
(the JAAS `Client` section) besides ZooKeeper's `digest` addAuth. Errors name the connect string and never
the credentials; kazoo logs through a logger that drops its debug records (they print requests and
responses: auth data, written payloads with encoded passwords). The client uses a cheaper `select` than
kazoo's default handler (see `_SelectHandler`), which halves the cost of large pipelined reads.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, KazooException
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.security import ACL, Id, make_digest_acl

from reconciler.allowlist import ALLOWED_HOSTS_ENV, ALLOWED_HOSTS_FILE_ENV, checked_connect
from reconciler.errors import ReconcilerError
from reconciler.model import Secret, ZooKeeperSpec
from reconciler.rules.cluster import ConnectString, chroot_problem
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


class ConnectError(ZooKeeperError):
    """No session within the connect timeout (or the connection failed): `checks` are what the operator
    should look at, one per line (the caller adds the manifest line the connect string came from)."""

    def __init__(self, message: str, checks: Iterable[str]) -> None:
        super().__init__(message)
        self.checks = tuple(checks)


CONNECT_NOTICE_S = 0.5  # a session is usually up within milliseconds: say what we wait for after this long


def connect_checks(spec: ZooKeeperSpec, parsed: ConnectString) -> list[str]:
    """What to check when no session comes: where, that ZooKeeper runs there, the allow-list, TLS and SASL."""
    hosts = ", ".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in parsed.hosts)
    checks = [
        f"the connect string {parsed.text!r} (spec.zookeeper.connect): host, port and chroot of the cluster's "
        "zookeeper.connect",
        f"that ZooKeeper runs at {hosts} and this machine reaches it (firewall, DNS, VPN; e.g. `nc -vz HOST PORT`)",
    ]
    if os.environ.get(ALLOWED_HOSTS_ENV) is not None or os.environ.get(ALLOWED_HOSTS_FILE_ENV) is not None:
        checks.append(f"the allow-list ({ALLOWED_HOSTS_ENV} / {ALLOWED_HOSTS_FILE_ENV}) admitted these hosts: if "
                      "they are the wrong ones, correct the manifest, not the allow-list")
    else:
        checks.append(f"the allow-list: {ALLOWED_HOSTS_ENV} and {ALLOWED_HOSTS_FILE_ENV} are not set, so any host "
                      "is dialled (set them on shared runners)")
    if spec.tls is not None:
        checks.append("TLS (spec.zookeeper.tls is set): the port must be ZooKeeper's secureClientPort, its "
                      "certificate signed by caFile and (verifyHostname) naming the host")
    else:
        checks.append("TLS: spec.zookeeper.tls is not set, so this is a plaintext connection; a TLS-only port "
                      "(secureClientPort) never answers it")
    if spec.auth_scheme == "sasl":
        checks.append("SASL (spec.zookeeper.auth scheme sasl): the server must accept SASL DIGEST-MD5 "
                      "(authProvider.sasl) for these credentials")
    return checks


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


def where(client: KazooClient, path: str) -> str:
    """The server-side path (chroot included), as an operator would look it up."""
    return f"{client.chroot or ''}{path}"


class _SharedHandler(_SelectHandler):
    """One handler for every client of a process: its two worker threads (watch callbacks, completions) are
    started once instead of once per client, and a client's `stop` leaves them running for the next one.
    A handler holds no session state (no connection, no credentials, no requests: each client has its own);
    the callbacks it runs are ours (a lock's watch sets an event) and kazoo's own. Keyed by process, as a
    forked worker inherits none of its parent's threads."""

    def stop(self) -> None:
        """Clients share this handler: a client's stop (or kazoo's atexit hook) leaves it running."""


_HANDLERS: dict[int, _SharedHandler] = {}
_HANDLERS_LOCK = threading.Lock()


def shared_handler() -> _SelectHandler:
    """This process's handler (created on first use)."""
    pid = os.getpid()
    with _HANDLERS_LOCK:
        if (handler := _HANDLERS.get(pid)) is None:
            _HANDLERS.clear()  # a parent's entry: its threads do not exist in this (forked) process
            handler = _HANDLERS[pid] = _SharedHandler()
        return handler


class QuietLibraryLog(logging.Filter):
    """A client library's DEBUG (and lower) records print whole requests and responses — kazoo's `Auth(…
    'user:pw')` and the data of every znode (encoded passwords), kafka-python's SASL exchanges. They never pass,
    whatever `-v` asks for; records at INFO and above keep only plain arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return False
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(a if isinstance(a, str | int | float | bool) or a is None else type(a).__name__
                                for a in record.args)
        return True


KAZOO_LOG = logging.getLogger("kazoo.reconciler")  # under "kazoo": the CLI sets its level (quiet without -v)
KAZOO_LOG.addFilter(QuietLibraryLog())


@dataclass(frozen=True)
class TlsFiles:
    """The TLS settings of `ZooKeeperSpec.tls` resolved to checked files (see workflow.cluster_client)."""

    ca: Path | None = None
    certificate: Path | None = None
    key: Path | None = None
    key_password: Secret | None = None
    verify_hostname: bool = True


def _security_options(spec: ZooKeeperSpec, credentials: Secret | None, tls: TlsFiles | None) -> dict[str, Any]:
    """KazooClient arguments for TLS and SASL (digest addAuth is sent after the session starts)."""
    options: dict[str, Any] = {}
    if spec.tls is not None:
        files = tls or TlsFiles(verify_hostname=spec.tls.verify_hostname)
        options.update(
            use_ssl=True, verify_certs=True, check_hostname=files.verify_hostname,
            ca=str(files.ca) if files.ca else None,
            certfile=str(files.certificate) if files.certificate else None,
            keyfile=str(files.key) if files.key else None,
            keyfile_password=files.key_password.reveal() if files.key_password else None,
        )
    if spec.auth_scheme == "sasl":
        if credentials is None:
            raise ZooKeeperError(f"ZooKeeper at {spec.connect}: SASL needs credentials (\"user:password\")")
        user, _, password = credentials.reveal().partition(":")
        options["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    return options


def _client(
    spec: ZooKeeperSpec, parsed: ConnectString, where: str, credentials: Secret | None, tls: TlsFiles | None,
    read_only: bool,
) -> KazooClient:
    """An unstarted client on `parsed.text`, whose own reading of it (hosts, chroot) must equal `parsed`."""
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
            hosts=parsed.text,
            timeout=spec.session_timeout_s,
            handler=shared_handler(),
            connection_retry=connection_retry,
            command_retry=COMMAND_RETRY,
            read_only=read_only,
            logger=KAZOO_LOG,
            **_security_options(spec, credentials, tls),
        )
    except (ValueError, KazooException) as exc:
        raise ZooKeeperError(f"invalid ZooKeeper connect string {parsed.text!r} ({type(exc).__name__})") from None
    if [tuple(h) for h in client.hosts] != list(parsed.hosts) or (client.chroot or "") != parsed.chroot:
        close(client)
        raise ZooKeeperError(f"{where}: kazoo reads this connect string differently; refusing to connect")
    return client


def connect(
    spec: ZooKeeperSpec,
    credentials: Secret | None = None,
    *,
    connect_timeout_s: float = 10.0,
    read_only: bool = False,
    tls: TlsFiles | None = None,
    connecting: Callable[[float], None] | None = None,
) -> KazooClient:
    """A started client on `spec.connect` (chroot included), if the operator's allow-list admits its hosts.
    `connecting(timeout_s)` is called once when no session is up after CONNECT_NOTICE_S (so an unreachable
    ZooKeeper is not a silent wait); a timeout raises ConnectError, naming what to check.
    `credentials` ("user:password") authenticate the session: SASL DIGEST-MD5 when `spec.auth_scheme` is
    "sasl", else ZooKeeper's digest scheme (re-sent by kazoo on every reconnect). `tls`: the checked files of
    `spec.tls` (without them, TLS trusts the system's CAs)."""
    # Parsed once as kazoo reads it and checked against the operator's allow-list; kazoo gets the string
    # rebuilt from that parse, and its own reading of it is compared, so what was checked is what is dialled.
    parsed = checked_connect(spec.connect)
    where = f"ZooKeeper at {parsed.text}"
    if (problem := chroot_problem(parsed.chroot)) is not None:  # also a validation error, at its line
        raise ZooKeeperError(f"{where}: {problem}; refusing to connect")
    client = _client(spec, parsed, where, credentials, tls, read_only)
    try:
        # `client.start` less its last step, an `exists` of the chroot: one more round trip only to warn that
        # it does not exist yet (for a fresh cluster that simply reads empty). With SASL it stays: kazoo says
        # "connected" before the SASL exchange, and that request is the first to wait for its outcome.
        started = time.monotonic()
        live = client.start_async()
        notice = min(CONNECT_NOTICE_S, connect_timeout_s)
        if connecting is not None and not live.wait(timeout=notice) and not client.connected:
            connecting(connect_timeout_s)
        live.wait(timeout=max(0.0, connect_timeout_s - (time.monotonic() - started)))
        if not client.connected:
            raise KazooTimeoutError("Connection time-out")
        if spec.auth_scheme == "sasl":
            client.exists("/")
    except KazooTimeoutError as exc:
        close(client)
        raise ConnectError(f"cannot connect to {where} within {connect_timeout_s:g} s",
                           connect_checks(spec, parsed)) from exc
    except Exception as exc:
        close(client)
        raise ConnectError(f"cannot connect to {where}: {type(exc).__name__}", connect_checks(spec, parsed)) from None
    if credentials is not None and spec.auth_scheme != "sasl":
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
    spec: ZooKeeperSpec, credentials: Secret | None = None, *, connect_timeout_s: float = 10.0,
    tls: TlsFiles | None = None,
) -> Iterator[KazooClient]:
    """`with session(spec, creds) as client:` connects, and closes the client however the block ends."""
    client = connect(spec, credentials, connect_timeout_s=connect_timeout_s, tls=tls)
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
