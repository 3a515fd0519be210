"""The operator's allow-list of ZooKeeper hosts: where any command may connect, set outside the repository.

Manifests say where each cluster's ZooKeeper is; a pull request can edit them. An operator pins the hosts a
runner may ever reach with `RECONCILER_ZK_ALLOWED_HOSTS` (comma- or whitespace-separated patterns) and/or
`RECONCILER_ZK_ALLOWED_HOSTS_FILE` (a file with one pattern per line, `#` comments). A pattern is
`HOST[:PORT]` where HOST may use shell wildcards (`*.zk.prod.internal`, `10.1.2.*`); without a port every
port of the host is allowed. IPv6 hosts are written in brackets (`[fd00::1]:2181`). When neither variable is
set, every host is allowed (the repository is trusted, as on a workstation). Every host of a connect string
must match, or nothing is connected to.
"""

from __future__ import annotations

import fnmatch
import os
import re

from reconciler.errors import ReconcilerError, clip, printable

ALLOWED_HOSTS_ENV = "RECONCILER_ZK_ALLOWED_HOSTS"
ALLOWED_HOSTS_FILE_ENV = "RECONCILER_ZK_ALLOWED_HOSTS_FILE"
MAX_FILE_BYTES = 64 * 1024
_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:]+))(?::(?P<port>[0-9]+|\*))?$")


class NotAllowedError(ReconcilerError):
    """A connect string names a host outside the operator's allow-list."""


def _split(hostport: str) -> tuple[str, str | None]:
    match = _HOST_PORT.match(hostport.strip())
    if match is None:
        raise ValueError(hostport)
    host = (match.group("v6") or match.group("host") or "").lower()
    return host, match.group("port")


def allowed_patterns() -> list[str] | None:
    """The operator's patterns, None when no allow-list is configured."""
    patterns: list[str] = []
    configured = False
    raw = os.environ.get(ALLOWED_HOSTS_ENV)
    if raw is not None and raw.strip():
        configured = True
        patterns += [p for p in re.split(r"[,\s]+", raw) if p]
    file = os.environ.get(ALLOWED_HOSTS_FILE_ENV)
    if file:
        configured = True
        try:
            with open(file, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ReconcilerError(f"{ALLOWED_HOSTS_FILE_ENV}={file}: cannot read it ({exc.strerror})") from None
        if len(data) > MAX_FILE_BYTES:
            raise ReconcilerError(f"{ALLOWED_HOSTS_FILE_ENV}={file}: larger than {MAX_FILE_BYTES} bytes")
        for line in data.decode("utf-8", "replace").splitlines():
            patterns += [p for p in re.split(r"[,\s]+", line.split("#", 1)[0]) if p]
    return patterns if configured else None


def connect_hosts(connect: str) -> list[tuple[str, str]]:
    """The (host, port) pairs of a ZooKeeper connect string `h1:p1,h2:p2/chroot` (port default 2181)."""
    hosts = connect.split("/", 1)[0]
    out: list[tuple[str, str]] = []
    for part in hosts.split(","):
        if not part.strip():
            continue
        host, port = _split(part)
        out.append((host, port or "2181"))
    return out


def host_allowed(host: str, port: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        try:
            want_host, want_port = _split(pattern)
        except ValueError:
            continue
        if fnmatch.fnmatchcase(host, want_host) and want_port in (None, "*", port):
            return True
    return False


def enforce_allowlist(connect: str) -> None:
    """Raise NotAllowedError unless every host of `connect` matches the operator's allow-list (if any)."""
    patterns = allowed_patterns()
    if patterns is None:
        return
    shown = printable(clip(connect))
    try:
        hosts = connect_hosts(connect)
    except ValueError:
        raise NotAllowedError(f"ZooKeeper connect string {shown!r} cannot be checked against the allow-list "
                              f"({ALLOWED_HOSTS_ENV}); refusing to connect") from None
    refused = [f"{h}:{p}" for h, p in hosts if not host_allowed(h, p, patterns)]
    if refused or not hosts:
        raise NotAllowedError(
            f"ZooKeeper host(s) {', '.join(printable(clip(r, 100)) for r in refused) or shown} are not in the "
            f"operator's allow-list ({ALLOWED_HOSTS_ENV} / {ALLOWED_HOSTS_FILE_ENV}); refusing to connect"
        )


__all__ = ["ALLOWED_HOSTS_ENV", "ALLOWED_HOSTS_FILE_ENV", "NotAllowedError", "enforce_allowlist"]
