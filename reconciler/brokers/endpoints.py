"""Every broker address checked before anything dials it. Bootstrap servers: each parsed strictly
(`rules.cluster.parse_bootstrap_server`, also a validation error at its manifest line), then matched against the
operator's allow-list (`allowlist`: the same variables and patterns as ZooKeeper hosts, since they say where
this runner may connect at all). What is matched is what kafka-python is given.

The addresses the cluster's metadata advertises are dialled too (a request for broker 2 goes to broker 2's
advertised listener), and they are the cluster's word, not the operator's: a KRaft node advertising another port,
or a ZooKeeper-mode broker whose `advertised.listeners` a merged manifest changed, would make the client dial
anywhere. `checked_address` is called for every connection kafka-python opens (`brokers.admin`), bootstrap and
advertised alike (issue 38, finding 10)."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.allowlist import NotAllowedError, allowed_patterns, host_allowed
from reconciler.errors import clip, printable
from reconciler.rules.cluster import parse_bootstrap_server


def parse_server(text: str) -> tuple[str, int]:
    try:
        return parse_bootstrap_server(text)
    except ValueError as exc:
        raise NotAllowedError(f"bootstrap server {printable(clip(text, 100))!r} is refused: {exc}; "
                              "refusing to connect") from None


def checked_servers(servers: Sequence[str]) -> list[tuple[str, int]]:
    """Every bootstrap server parsed and allowed, or NotAllowedError naming the first that is not."""
    parsed = [parse_server(s) for s in servers]
    if not parsed:
        raise NotAllowedError("no bootstrap servers; refusing to connect")
    patterns = allowed_patterns()
    if patterns is None:
        return parsed
    if not patterns:
        raise NotAllowedError("the operator's allow-list (RECONCILER_ZK_ALLOWED_HOSTS) is set but names no host: "
                              "every host is refused, brokers included")
    for (host, port), text in zip(parsed, servers, strict=True):
        if not host_allowed(host, port, patterns):
            raise NotAllowedError(f"bootstrap server {printable(clip(text, 100))} is not in the operator's "
                                  "allow-list (RECONCILER_ZK_ALLOWED_HOSTS); refusing to connect")
    return parsed


def checked_address(host: str, port: int) -> None:
    """An address the client is about to dial (bootstrap or advertised by the cluster's metadata): allowed, or
    NotAllowedError naming it."""
    patterns = allowed_patterns()
    if patterns is None:
        return
    if not patterns or not host_allowed(host.lower(), port, patterns):
        shown = printable(clip(server_text(host, port), 100))
        raise NotAllowedError(f"the cluster's metadata names the broker address {shown}, which is not in the "
                              "operator's allow-list (RECONCILER_ZK_ALLOWED_HOSTS); refusing to connect to it")


def server_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
