"""Kafka's config catalog, one per Kafka line: a cluster's `kafkaVersion` picks the line whose own ConfigDefs judge
it (keys, types, validators, defaults, minimums, dynamic and per-broker sets, synonyms, features).

Lines (`reconciler/data/catalog-index.json`): 3.9 (Kafka 3.9.1's ConfigDefs; it serves every 2.x-3.9 cluster,
hiding keys newer than the cluster's release), 4.0 (4.0.1), 4.1 (4.1.1). A version newer than every line is
judged by the newest. Each line's data is read on first use, so a fleet of 3.x clusters never parses the 4.x
files. Asked without a version, lookups answer for any line: the 3.9 line first (every ZooKeeper-era key), then
the newer ones. Standard library only.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from reconciler.catalog.features import METADATA_VERSION, Feature
from reconciler.catalog.keys import (
    BASE_RELEASE,
    QUOTA_KINDS,
    SCRAM_KEYS,
    BrokerKeyInfo,
    ConfigKey,
    Scope,
    Validator,
    available,
    version_tuple,
)
from reconciler.catalog.line import ENTITY_SCOPES, CatalogLine

__all__ = [
    "BASE_RELEASE", "ENTITY_SCOPES", "METADATA_VERSION", "QUOTA_KINDS", "SCRAM_KEYS", "BrokerKeyInfo", "Catalog",
    "CatalogLine", "ConfigKey", "Feature", "Scope", "Validator", "load_catalog", "version_tuple",
]
_DATA = Path(__file__).resolve().parent.parent / "data"


class Catalog:
    """Every line's catalog behind one object (`load_catalog`); the version argument of a lookup picks the line."""

    def __init__(self, index: Mapping[str, Any], read: Callable[[str], Mapping[str, Any]]) -> None:
        self._read = read
        self.base_release: str = index["base_release"]
        lines = sorted(index["lines"].items(), key=lambda kv: version_tuple(kv[0]))
        self.lines: tuple[str, ...] = tuple(name for name, _ in lines)
        self.releases: dict[str, str] = {name: info["release"] for name, info in lines}
        self._zookeeper = tuple(name for name, info in lines if info["zookeeper"])
        self._loaded: dict[str, CatalogLine] = {}
        self._for_version: dict[str | None, CatalogLine] = {}

    # --- lines -----------------------------------------------------------------------------------------

    def line_named(self, name: str) -> CatalogLine:
        line = self._loaded.get(name)
        if line is None:
            line = self._loaded[name] = CatalogLine(self._read(name))
        return line

    def line(self, version: str | None = None) -> CatalogLine:
        """The line that judges Kafka `version`: the first line at or above its major.minor (the newest for a
        version beyond every line); without a version, the newest ZooKeeper-era line."""
        cached = self._for_version.get(version)  # hot: every lookup asks
        if cached is None:
            if version is None:
                name = self._zookeeper[-1]
            else:
                asked = version_tuple(version)[:2]
                name = next((n for n in self.lines if asked <= version_tuple(n)[:2]), self.lines[-1])
            cached = self._for_version[version] = self.line_named(name)
        return cached

    def _other_lines(self) -> Iterator[CatalogLine]:
        """Version-less lookups after the default line: the other lines, newest first."""
        default = self.line()
        for name in reversed(self.lines):
            if name != default.line:
                yield self.line_named(name)

    @property
    def source_version(self) -> str:
        """The release of the default (newest ZooKeeper-era) line, e.g. "3.9.1"."""
        return self.line().source_version

    def supported_releases(self) -> tuple[str, ...]:
        """The Kafka releases a cluster's `kafkaVersion` may name: every major.minor from the oldest release the
        catalog knows (2.0) to the newest ZooKeeper-era line, as that line's MetadataVersion list has them, then
        each KRaft-only line (4.0, 4.1)."""
        default = self.line()
        low, high = version_tuple(self.base_release)[:2], version_tuple(default.source_version)[:2]
        releases = {version_tuple(v.split("-", 1)[0])[:2] for v in default.metadata_versions}
        older = [".".join(map(str, r)) for r in sorted(r for r in releases if low <= r <= high)]
        return (*older, *(n for n in self.lines if version_tuple(n)[:2] > high))

    # --- lookups (see CatalogLine) ---------------------------------------------------------------------

    def topic(self, name: str, version: str | None = None) -> ConfigKey | None:
        key = self.line(version).topic(name, version)
        if key is not None or version is not None:
            return key
        return next((k for line in self._other_lines() if (k := line.topic(name)) is not None), None)

    def broker(self, name: str, version: str | None = None) -> ConfigKey | None:
        key = self.line(version).broker(name, version)
        if key is not None or version is not None:
            return key
        return next((k for line in self._other_lines() if (k := line.broker(name)) is not None), None)

    def entity_key(self, scope: str, name: str, version: str | None = None) -> ConfigKey | None:
        key = self.line(version).entity_key(scope, name, version)
        if key is not None or version is not None:
            return key
        return next((k for line in self._other_lines() if (k := line.entity_key(scope, name)) is not None), None)

    def cluster_level_listener_configs(self, version: str | None = None) -> frozenset[str]:
        return self.line(version).cluster_level_listener_configs(version)

    def resolve_broker(self, name: str, version: str | None = None) -> BrokerKeyInfo:
        info = self.line(version).resolve_broker(name, version)
        if info.base is not None or version is not None:
            return info
        return next((i for line in self._other_lines() if (i := line.resolve_broker(name)).base is not None), info)

    def quota(self, kind: str, name: str, version: str | None = None) -> ConfigKey | None:
        return self.line(version).quota(kind, name)

    def removed(self, scope: str, name: str, version: str) -> tuple[str, str] | None:
        return self.line(version).removed(scope, name, version)

    def is_password(self, name: str) -> bool:
        return self.line().is_password(name)

    def config_key(self, scope: str, name: str) -> ConfigKey | None:
        """The entry for `name` at `scope` (an `EntityRef.quota_kind`) in any Kafka version of any line."""
        key = self.line().config_key(scope, name)
        if key is not None:
            return key
        return next((k for line in self._other_lines() if (k := line.config_key(scope, name)) is not None), None)

    def is_sensitive(self, name: str, scope: str = "brokers") -> bool:
        """Must the value of `name` at `scope` (an `EntityRef.quota_kind`: brokers, topics, clients, users,
        user-clients, ips, groups, client-metrics) never be stored or shown? The one predicate every output
        asks (plans' removals, the inventory, `describe`, `import`, the impact reports).

        Kafka's `DescribeConfigs` hides a value when `KafkaConfig.maybeSensitive(configType)` holds:
        "If we can't determine the config entry type, treat it as a sensitive config to be safe" --
        `configType.isEmpty || configType.contains(ConfigDef.Type.PASSWORD)` (kafka.server.KafkaConfig; used by
        ConfigHelper.createBrokerConfigEntry and createTopicConfigEntry, with `KafkaConfig.configType` /
        `LogConfig.configType`). So: Kafka's password suffix rule (`isPasswordConfig`), a PASSWORD-typed key
        (`password.encoder.secret`, `delegation.token.secret.key`, ... listener-prefixed or not), SCRAM
        credentials, and every key whose type the catalog does not know (`ldap.bind.pw`,
        `rsm.config.s3.secret.access.key`: custom keys a plugin reads). Version-less: whether a key exists
        in a given Kafka version does not change whether its value is a secret."""
        if self.is_password(name) or name in SCRAM_KEYS:
            return True
        key = self.config_key(scope, name)
        return key is None or key.password

    def names(self, scope: str, version: str | None = None) -> tuple[str, ...]:
        return self.line(version).names(scope, version)

    def suggest(self, name: str, scope: str, version: str | None = None) -> str | None:
        return self.line(version).suggest(name, scope, version)

    def first_release(self, scope: str, name: str, version: str) -> str | None:
        """The first release that has `name` (scope "topic", "broker", "group" or "client-metrics") when Kafka
        `version` does not but a newer release does (for "needs Kafka X or later"); else None."""
        start = self.lines.index(self.line(version).line)
        for line_name in self.lines[start:]:
            line = self.line_named(line_name)
            if scope == "topic":
                key = line.topic(name)
            elif scope == "broker":
                key = line.resolve_broker(name).base or line.quota("brokers", name)
            else:
                key = line.entity_key(scope, name)
            if key is not None:
                return None if available(key.since, version) else key.since
        return None

    def features(self, version: str) -> dict[str, Feature]:
        """The features a cluster of Kafka `version` may finalize, with their levels."""
        return self.line(version).features

    def feature_since(self, name: str, version: str) -> str | None:
        """The first newer line ("4.0") whose release has feature `name`, when Kafka `version`'s does not."""
        start = self.lines.index(self.line(version).line)
        return next((n for n in self.lines[start + 1:] if name in self.line_named(n).features), None)


def _read_line(name: str) -> Mapping[str, Any]:
    data: Mapping[str, Any] = json.loads((_DATA / f"catalog-{name}.json").read_text(encoding="utf-8"))
    return data


@functools.cache
def load_catalog() -> Catalog:
    # Beside this package, as package data is installed (importlib.resources costs ~25 ms of imports).
    index = json.loads((_DATA / "catalog-index.json").read_text(encoding="utf-8"))
    return Catalog(index, _read_line)
