"""The operator's allow-list of hosts (ZooKeeper ensembles and, with the same variables, Kafka brokers): where any
command may connect, set outside the repository. Shared by both backends (`zk/session.py`, `brokers/endpoints.py`).

Manifests say where each cluster's ZooKeeper is; a pull request can edit them. An operator pins the hosts a
runner may ever reach with `RECONCILER_ZK_ALLOWED_HOSTS` (comma- or whitespace-separated patterns) and/or
`RECONCILER_ZK_ALLOWED_HOSTS_FILE` (a file with one pattern per line, `#` comments). A pattern is
`HOST[:PORT]` where HOST may use shell wildcards (`*.zk.prod.internal`, `10.1.2.*`) that never cross a dot
(one `*` is one DNS label or one IPv4 octet, as in a TLS wildcard); without a port (or with `:*`) every port
of the host is allowed. IPv6 hosts are written in brackets (`[fd00::1]:2181`) and match only IPv6 hosts.

* Neither variable set: every host is allowed (the repository is trusted, as on a workstation).
* A variable set but naming no host (`RECONCILER_ZK_ALLOWED_HOSTS=""`, which is what an undefined CI
  variable gives, only spaces or commas, an empty file or only comments): every host is refused, with a
  message saying so. An allow-list that is switched on never means "allow all".
* A pattern that is not `HOST[:PORT]` is an error (a typo must not silently narrow or widen the list).

What is matched is what is dialled: the connect string is parsed once (`rules.cluster.parse_connect`, which
reads it exactly as kazoo's `collect_hosts` will and refuses anything it could read another way: userinfo,
queries, fragments, bare IPv6, numeric IPv4 shorthands, empty hosts, whitespace), every parsed host must
match, and `zk/session.py` gives kazoo the connect string rebuilt from that parse.
"""

from __future__ import annotations

import fnmatch
import os
import re

from reconciler.errors import ReconcilerError, clip, printable
from reconciler.rules.cluster import ConnectString, parse_connect

ALLOWED_HOSTS_ENV = "RECONCILER_ZK_ALLOWED_HOSTS"
ALLOWED_HOSTS_FILE_ENV = "RECONCILER_ZK_ALLOWED_HOSTS_FILE"
MAX_FILE_BYTES = 64 * 1024
_PATTERN = re.compile(r"(?:\[(?P<v6>[0-9a-f:.*?]+)\]|(?P<host>[a-z0-9.*?-]+))(?::(?P<port>[0-9]{1,5}|\*))?")


class NotAllowedError(ReconcilerError):
    """A connect string names a host outside the operator's allow-list (or cannot be checked against it)."""


class Pattern:
    """One allow-list entry: a host glob (per DNS label / IPv4 octet, or over a whole IPv6 address) and a port
    (None: any)."""

    def __init__(self, text: str, where: str = f"{ALLOWED_HOSTS_ENV} / {ALLOWED_HOSTS_FILE_ENV}") -> None:
        match = _PATTERN.fullmatch(text.strip().lower())
        if match is None:
            raise ReconcilerError(f"allow-list pattern {printable(clip(text, 100))!r} ({where}) is not HOST[:PORT], "
                                  "*.DOMAIN[:PORT] or [IPv6][:PORT]")
        self.text = text
        self.v6 = match.group("v6") is not None
        self.host = match.group("v6") or match.group("host") or ""
        port = match.group("port")
        self.port = None if port in (None, "*") else int(port)

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.v6 or ":" in host:
            return self.v6 and ":" in host and fnmatch.fnmatchcase(host, self.host)
        labels, wanted = host.split("."), self.host.split(".")
        return len(labels) == len(wanted) and all(
            fnmatch.fnmatchcase(label, want) for label, want in zip(labels, wanted, strict=True))


def _patterns_of(text: str) -> list[str]:
    return [p for p in re.split(r"[,\s]+", text) if p]


def allowed_patterns(env: str = ALLOWED_HOSTS_ENV, file_env: str = ALLOWED_HOSTS_FILE_ENV) -> list[Pattern] | None:
    """The operator's patterns in `env` (a list) and `file_env` (a file of them): ZooKeeper's by default, Spark
    Connect's (impact/connect.py) with its own variables; None when no allow-list is configured (neither variable
    set), [] when one is set but names no host (then nothing is allowed)."""
    patterns: list[str] = []
    configured = False
    raw = os.environ.get(env)
    if raw is not None:  # set, even to "": the operator switched the allow-list on
        configured = True
        patterns += _patterns_of(raw)
    file = os.environ.get(file_env)
    if file is not None:
        configured = True
        if file.strip():
            patterns += _read_file(file, file_env)
    return [Pattern(p, f"{env} / {file_env}") for p in patterns] if configured else None


def _read_file(file: str, file_env: str) -> list[str]:
    shown = printable(clip(file, 200))
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ReconcilerError(f"{file_env}={shown}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ReconcilerError(f"{file_env}={shown}: larger than {MAX_FILE_BYTES} bytes")
    out: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        out += _patterns_of(line.split("#", 1)[0])
    return out


def host_allowed(host: str, port: int, patterns: list[Pattern]) -> bool:
    return any(p.matches(host, port) for p in patterns)


def checked_connect(connect: str) -> ConnectString:
    """`connect` parsed as kazoo will read it, every host checked against the operator's allow-list (if any).

    Raises NotAllowedError when the string cannot be parsed unambiguously (whether or not an allow-list is
    set: kazoo would dial something other than what it says) or a host is not allowed. Connect to
    `result.text`, never to `connect`: that is the string that was checked."""
    shown = printable(clip(connect, 200))
    try:
        parsed = parse_connect(connect)
    except ValueError as exc:
        raise NotAllowedError(f"ZooKeeper connect string {shown!r} is refused: {exc}; refusing to connect") from None
    patterns = allowed_patterns()
    if patterns is None:
        return parsed
    if not patterns:
        raise NotAllowedError(
            f"the operator's allow-list ({ALLOWED_HOSTS_ENV} / {ALLOWED_HOSTS_FILE_ENV}) is set but names no "
            f"host, so every ZooKeeper host is refused ({shown!r}); list the allowed hosts, or unset the "
            "variable to allow any host"
        )
    refused = [f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in parsed.hosts if not host_allowed(h, p, patterns)]
    if refused:
        raise NotAllowedError(
            f"ZooKeeper host(s) {', '.join(printable(clip(r, 100)) for r in refused)} are not in the "
            f"operator's allow-list ({ALLOWED_HOSTS_ENV} / {ALLOWED_HOSTS_FILE_ENV}); refusing to connect"
        )
    return parsed


def enforce_allowlist(connect: str) -> None:
    """Raise NotAllowedError unless every host of `connect` matches the operator's allow-list (if any)."""
    checked_connect(connect)


__all__ = ["ALLOWED_HOSTS_ENV", "ALLOWED_HOSTS_FILE_ENV", "NotAllowedError", "Pattern", "allowed_patterns",
           "checked_connect", "enforce_allowlist", "host_allowed"]
