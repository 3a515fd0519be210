"""The catalog's value types (a config key, its validator, a broker key as DynamicBrokerConfig resolves it) and
Kafka version arithmetic. Standard library only."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["read-only", "per-broker", "cluster-wide"]
QUOTA_KINDS = ("brokers", "clients", "ips", "user-clients", "users")
BASE_RELEASE = "2.0.0"  # oldest release the catalog knows; keys without a `since` exist in all of them
# SCRAM credentials share the users/<user> znode with quotas (`ScramMechanism` names); never shown.
SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})


@dataclass(frozen=True, slots=True)
class Validator:
    """A Kafka ConfigDef validator. kind: range, one_of, one_of_ci, each_of, throttled_replicas, gzip_level
    (range or the single `allowed` value), message_format_version (`allowed` = every accepted string),
    non_empty_string, share_offset_reset (`allowed` words or `by_duration:<ISO-8601 duration>`), custom (a lambda
    we cannot reproduce: read-only keys only, never enforced)."""

    kind: str
    min: float | None = None  # ints stay ints: Kafka prints the bound as written ("at least 1")
    max: float | None = None
    allowed: tuple[str, ...] = ()
    text: str = ""  # Kafka's own toString of the validator


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: str  # BOOLEAN STRING INT SHORT LONG DOUBLE LIST CLASS PASSWORD
    default: str | None
    validator: Validator | None
    since: str  # first release whose sources have the name
    scope: str  # broker: read-only / per-broker / cluster-wide; "topic"; "quota"; "group"; "client-metrics"
    listener_prefix_only: bool = False  # bare ssl keystore/truststore keys: dynamic only with listener prefix
    password: bool = False  # PASSWORD type
    synonyms: tuple[str, ...] = ()  # topic: broker synonyms; broker: its synonym group (incl. itself)
    topic_key: str | None = None  # broker key that is a topic default -> that topic key
    synonym_factor: int = 1  # ms per unit for hours/minutes synonyms
    dynamic_since: str | None = None  # release from which `scope` applies (read-only before)
    dynamic_only: bool = False  # ZooKeeper-only key (broker quota rates), never in server.properties


@dataclass(frozen=True, slots=True)
class BrokerKeyInfo:
    """A (possibly listener-prefixed) broker key as `DynamicBrokerConfig` sees it."""

    name: str
    base: ConfigKey | None  # None = unknown/custom key (or newer than the version asked for)
    listener: str | None  # as written in listener.name.<l>.…; Kafka only reads lower-case ones
    mechanism: str | None  # listener.name.<l>.<mechanism>.<ListenerMechanismConfigs key>
    scope: str  # effective: prefixed keys are per-broker unless the base is a cluster-level listener config
    password: bool  # encoded in ZooKeeper (Kafka's isPasswordConfig suffix rule)


@functools.lru_cache(maxsize=1024)  # hot: `Catalog.removed` asks twice per config key of a 4.x cluster
def version_tuple(v: str) -> tuple[int, ...]:
    """Leading numeric dot-separated parts: "3.6" -> (3, 6); "3.9.0-rc3" -> (3, 9, 0)."""
    parts: list[int] = []
    for part in v.strip().split("."):
        m = re.match(r"\d+", part)
        if m is None:
            break
        parts.append(int(m.group()))
        if m.end() != len(part):
            break
    if not parts:
        raise ValueError(f"not a Kafka version: {v!r}")
    return tuple(parts)


@functools.lru_cache(maxsize=1024)  # hot: every lookup asks; the (since, version) pairs are few
def available(since: str, version: str | None) -> bool:
    if version is None:
        return True
    want, have = version_tuple(since), version_tuple(version)
    width = max(len(want), len(have), 3)
    return have + (0,) * (width - len(have)) >= want + (0,) * (width - len(want))


def metadata_version_validator(versions: tuple[str, ...], source_version: str) -> Validator:
    """MetadataVersion accepts every "3.6-IV2" and a release name "3.6" (of released versions only)."""
    releases = [v.split("-", 1)[0] for v in versions]
    newest = version_tuple(source_version)[:2]
    accepted = [*versions, *(r for r in releases if version_tuple(r)[:2] <= newest)]
    text = "[" + ", ".join(versions) + "]"
    return Validator("message_format_version", allowed=tuple(dict.fromkeys(accepted)), text=text)


def _validator(raw: Mapping[str, Any] | None, metadata_version: Validator) -> Validator | None:
    if raw is None:
        return None
    if raw["kind"] == metadata_version.kind:
        return metadata_version
    return Validator(raw["kind"], raw.get("min"), raw.get("max"), tuple(raw.get("allowed", ())), raw["text"])


def config_key(name: str, e: Mapping[str, Any], scope: str, metadata_version: Validator) -> ConfigKey:
    """One entry of a catalog data file as a ConfigKey."""
    return ConfigKey(
        name=name,
        type=e["type"],
        default=e.get("default"),
        validator=_validator(e.get("validator"), metadata_version),
        since=e.get("since", BASE_RELEASE),
        scope=e.get("scope", scope),
        listener_prefix_only=e.get("listener_prefix_only", False),
        password=e["type"] == "PASSWORD",
        synonyms=tuple(e.get("synonyms", (name,) if scope == "broker" else ())),
        topic_key=e.get("topic_key"),
        synonym_factor=e.get("factor", 1),
        dynamic_since=e.get("dynamic_since"),
        dynamic_only=e.get("dynamic_only", False),
    )
