"""Bootstrap servers checked before anything dials them: `host:port` each, parsed strictly (a name, an IPv4
address or a bracketed IPv6 address; a port 1-65535; no userinfo, no scheme, no blanks), then matched
against the operator's allow-list (`zk.allowlist`: the same variables and patterns as ZooKeeper hosts,
since they say where this runner may connect at all). What is matched is what kafka-python is given."""

from __future__ import annotations

import re
from collections.abc import Sequence

from reconciler.errors import clip, printable
from reconciler.zk.allowlist import NotAllowedError, allowed_patterns, host_allowed

_SERVER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?))"
                     r":(?P<port>[0-9]{1,5})")


def parse_server(text: str) -> tuple[str, int]:
    match = _SERVER.fullmatch(text)
    port = int(match.group("port")) if match else 0
    if match is None or not 1 <= port <= 65535:
        raise NotAllowedError(f"bootstrap server {printable(clip(text, 100))!r} is not HOST:PORT; "
                              "refusing to connect")
    host = match.group("v6") or match.group("host")
    if match.group("host") and re.fullmatch(r"[0-9.]+", host) and not re.fullmatch(r"(\d{1,3}\.){3}\d{1,3}", host):
        raise NotAllowedError(f"bootstrap server {printable(clip(text, 100))!r}: not a dotted-quad IPv4 address; "
                              "refusing to connect")
    return host.lower(), port


def checked_servers(servers: Sequence[str]) -> list[tuple[str, int]]:
    """Every bootstrap server parsed and allowed, or NotAllowedError naming the first that is not."""
    parsed = [parse_server(s) for s in servers]
    if not parsed:
        raise NotAllowedError("no bootstrap servers; refusing to connect")
    patterns = allowed_patterns()
    if patterns is None:
        return parsed
    for (host, port), text in zip(parsed, servers, strict=True):
        if not host_allowed(host, port, patterns):
            raise NotAllowedError(f"bootstrap server {printable(clip(text, 100))} is not in the operator's "
                                  "allow-list (RECONCILER_ZK_ALLOWED_HOSTS); refusing to connect")
    return parsed


def server_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
