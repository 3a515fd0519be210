"""Per-broker listener keys read back into one Listeners document (the inverse of its compilation).

Kafka allows `listeners`, `advertised.listeners`, `listener.security.protocol.map` and `listener.name.*` only
per broker, so they are stored once per broker; the manifest states them once: the protocol map (the same
on every broker, as the Listeners kind compiles it), each broker's listeners, and `listenerConfigs` for the
prefixed keys that are equal on every broker. A password is equal when its plaintext is (each broker's
encoding is salted differently): that needs the encoder secret, so without it passwords stay per broker.
Anything that does not fit stays in the brokers' BrokerConfig as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

LISTENERS, ADVERTISED, PROTOCOL_MAP = "listeners", "advertised.listeners", "listener.security.protocol.map"
PREFIX = "listener.name."


@dataclass
class Compiled:
    document: dict[str, Any] | None  # the Listeners document, None when the keys do not fit one
    remaining: dict[int, dict[str, str]]  # per-broker keys the document does not cover
    notes: list[str] = field(default_factory=list)


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def parse_protocol_map(value: str) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in _split(value):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip():
            return None
        out[name.strip().upper()] = protocol.strip()
    return out or None


def compile_listeners(
    brokers: Mapping[int, Mapping[str, str]],
    same_secret: Callable[[list[str]], bool],
    is_password: Callable[[str], bool],
    sealed: Callable[[str], Any],
) -> Compiled:
    """`same_secret(encoded values)`: do they decode to one plaintext (False when unknown).
    `sealed(value)`: how a password is written in the manifest ({encoded: …})."""
    remaining = {b: dict(cfg) for b, cfg in brokers.items()}
    members = sorted(b for b, cfg in brokers.items() if LISTENERS in cfg)
    if not members:
        return Compiled(None, remaining)
    maps = {b: parse_protocol_map(brokers[b].get(PROTOCOL_MAP, "")) for b in members}
    first = maps[members[0]]
    if first is None or any(m != first for m in maps.values()):
        note = ("listener keys stay per broker in brokers.yaml: the brokers' listener.security.protocol.map "
                "is missing or differs between them, and a Listeners document states one map for all")
        return Compiled(None, remaining, [note])
    names = {name.lower(): name for name in first}
    shared: dict[str, dict[str, Any]] = {}
    keys = sorted({k for b in members for k in brokers[b] if k.startswith(PREFIX)})
    for key in keys:
        listener, _, rest = key[len(PREFIX):].partition(".")
        values = [brokers[b].get(key) for b in members]
        if listener not in names or not rest or any(v is None for v in values):
            continue
        present = [v for v in values if v is not None]
        if is_password(key):
            if not same_secret(present):
                continue
            value: Any = sealed(present[0])
        elif len(set(present)) == 1:
            value = present[0]
        else:
            continue
        shared.setdefault(names[listener], {})[rest] = value
        for b in members:
            del remaining[b][key]
    spec_brokers: dict[str, Any] = {}
    for b in members:
        cfg = remaining[b]
        entry: dict[str, Any] = {"listeners": _split(cfg.pop(LISTENERS))}
        if ADVERTISED in cfg:
            entry["advertised"] = _split(cfg.pop(ADVERTISED))
        cfg.pop(PROTOCOL_MAP, None)
        spec_brokers[str(b)] = entry
    spec: dict[str, Any] = {"securityProtocolMap": dict(first), "brokers": spec_brokers}
    if shared:
        spec["listenerConfigs"] = {name: dict(sorted(cfg.items())) for name, cfg in sorted(shared.items())}
    document = {"apiVersion": "reconciler/v1", "kind": "Listeners", "meta": {}, "spec": spec}
    return Compiled(document, remaining)
