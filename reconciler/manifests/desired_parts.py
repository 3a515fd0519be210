"""Listeners, Topics and Quotas documents -> desired entities, with duplicate declarations reported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

from reconciler.catalog import Catalog, ConfigKey
from reconciler.errors import Diagnostic
from reconciler.manifests.convert import inherited_config, layer_config, marker, overlay_config
from reconciler.manifests.fleet import FleetLayer, Layered
from reconciler.manifests.load import Document
from reconciler.model import (
    DEFAULT_ENTITY,
    BrokerListeners,
    ClusterSpec,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    ListenersSpec,
    SourceRef,
    frozen_map,
)


@dataclass
class Declared:
    """Entities declared so far, with who declared each key (to name both sides of a conflict)."""

    configs: dict[EntityRef, dict[str, DesiredValue]] = field(default_factory=dict)
    sources: dict[EntityRef, SourceRef | None] = field(default_factory=dict)

    def add_entity(
        self,
        ref: EntityRef,
        config: Mapping[str, DesiredValue],
        source: SourceRef | None,
        diags: list[Diagnostic],
        *,
        merge: bool = False,
    ) -> None:
        if ref not in self.configs:
            self.configs[ref] = dict(config)
            self.sources[ref] = source
            return
        if not merge and self.sources.get(ref) is not None:
            diags.append(
                Diagnostic(
                    "error",
                    f"{ref.display} is declared twice (first at {self.sources[ref]}); keep one declaration",
                    source,
                    ref.display,
                )
            )
            return
        target = self.configs[ref]
        for key, value in config.items():
            if key in target:
                diags.append(
                    Diagnostic(
                        "error",
                        f"{key!r} for {ref.display} is also set by the Listeners document (at {value.source}); "
                        "listener settings belong in the Listeners document only",
                        target[key].source,
                        key,
                    )
                )
                continue
            target[key] = value
        if self.sources.get(ref) is None:
            self.sources[ref] = source


def _of_kind(documents: Sequence[Document], kind: str) -> list[Document]:
    return [d for d in documents if d.data.get("kind") == kind]


def build_listeners(
    documents: Sequence[Document], cluster: ClusterSpec, catalog: Catalog, declared: Declared, diags: list[Diagnostic]
) -> ListenersSpec | None:
    docs = _of_kind(documents, "Listeners")
    for extra in docs[1:]:
        diags.append(
            Diagnostic(
                "error",
                f"a cluster has at most one Listeners document (first at {docs[0].mark(())})",
                extra.mark(("kind",)),
                "kind",
            )
        )
    if not docs:
        return None
    doc = docs[0]
    spec = doc.data["spec"]
    version = cluster.kafka_version
    protocol_map = {str(k).upper(): str(v) for k, v in spec["securityProtocolMap"].items()}
    map_value = ",".join(f"{k}:{v}" for k, v in protocol_map.items())
    map_source = doc.mark(("spec", "securityProtocolMap"))
    shared: dict[str, DesiredValue] = {"listener.security.protocol.map": DesiredValue(map_value, map_source)}
    for listener, configs in (spec.get("listenerConfigs") or {}).items():
        prefix = f"listener.name.{str(listener).lower()}."
        prefixed = {prefix + k: v for k, v in configs.items()}
        path = ("spec", "listenerConfigs", listener)
        own_marks = {prefix + k: doc.mark((*path, k)) for k in configs}
        values = layer_config(
            {}, prefixed, own_marks.__getitem__, lambda k: catalog.resolve_broker(k, version).base,
            diags, f"listener {listener}",
        )
        shared.update(values)
    brokers: dict[int, BrokerListeners] = {}
    for raw_id, entry in spec["brokers"].items():
        path = ("spec", "brokers", raw_id)
        broker = int(str(raw_id))
        listeners = tuple(str(x) for x in entry["listeners"])
        advertised = tuple(str(x) for x in entry.get("advertised") or ())
        brokers[broker] = BrokerListeners(
            broker, listeners, advertised, doc.mark(path),
            tuple(doc.mark((*path, "listeners", i)) for i in range(len(listeners))),
            tuple(doc.mark((*path, "advertised", i)) for i in range(len(advertised))),
        )
        config = dict(shared)
        config["listeners"] = DesiredValue(",".join(listeners), doc.mark((*path, "listeners")))
        if advertised:
            config["advertised.listeners"] = DesiredValue(",".join(advertised), doc.mark((*path, "advertised")))
        declared.add_entity(EntityRef("brokers", str(broker)), config, doc.mark(path), diags, merge=True)
    return ListenersSpec(
        security_protocol_map=frozen_map(protocol_map),
        inter_broker_listener=str(spec["interBrokerListener"]).upper() if spec.get("interBrokerListener") else None,
        brokers=frozen_map(brokers),
        source=doc.mark(()),
        inter_broker_source=doc.mark(("spec", "interBrokerListener")) if spec.get("interBrokerListener") else None,
    )


def _topic_inherited(
    fleet: FleetLayer, doc: Document, defaults: Mapping[str, Any], diags: list[Diagnostic]
) -> dict[str, Layered]:
    inherited = dict(fleet.topic_config)
    for key, raw in (defaults.get("config") or {}).items():
        source = doc.mark(("spec", "defaults", "config", key))
        if raw is not None:
            inherited[key] = Layered(raw, source)
        elif inherited.pop(key, None) is None:
            diags.append(
                Diagnostic("error", f"null removes an inherited topic default, but {key!r} is not inherited",
                           source, key)
            )
    return inherited


def build_topics(
    documents: Sequence[Document], fleet: FleetLayer, catalog: Catalog, version: str, diags: list[Diagnostic]
) -> dict[str, DesiredTopic]:
    topics: dict[str, DesiredTopic] = {}

    def lookup(key: str) -> ConfigKey | None:
        return catalog.topic(key, version)

    cache: dict[tuple[str, type, Any], str] = {}  # canonical values (topics repeat a few values many times)
    for doc in _of_kind(documents, "Topics"):
        spec = doc.data["spec"]
        defaults = spec.get("defaults") or {}
        inherited = _topic_inherited(fleet, doc, defaults, diags)
        settings = {k: v.raw for k, v in fleet.topic_settings.items()} | {
            k: v for k, v in defaults.items() if k != "config"
        }
        base = inherited_config(inherited, lookup)
        # where a topic that does not set them gets partitions/replicationFactor: the same for all of them
        shared = {key: _setting_source(doc, (), {}, defaults, fleet, key)
                  for key in ("partitions", "replicationFactor", "placement")}
        for name, entry in spec["topics"].items():
            path = ("spec", "topics", name)
            source = doc.mark(path)
            if name in topics:
                diags.append(
                    Diagnostic(
                        "error", f"topic {name!r} is declared twice (first at {topics[name].source})", source, name
                    )
                )
                continue
            entry = entry or {}
            config = dict(base)
            overlay_config(
                config, entry.get("config") or {}, marker(doc, *path, "config"), lookup, diags, f"topic {name}",
                cache,
            )
            partitions = entry.get("partitions", settings.get("partitions"))
            rf = entry.get("replicationFactor", settings.get("replicationFactor"))
            placement = entry.get("placement", settings.get("placement"))
            replicas = entry.get("replicas")
            topics[name] = DesiredTopic(
                name=name,
                partitions=None if partitions is None else int(partitions),
                replication_factor=None if rf is None else int(rf),
                config=MappingProxyType(dict(sorted(config.items()))),  # frozen_map, str keys (unique: no tie)
                source=source,
                partitions_source=doc.mark((*path, "partitions")) if "partitions" in entry else shared["partitions"],
                rf_source=doc.mark((*path, "replicationFactor")) if "replicationFactor" in entry
                else shared["replicationFactor"],
                placement=None if placement is None else str(placement),
                replicas=None if replicas is None else MappingProxyType(
                    {int(k): tuple(int(b) for b in v) for k, v in sorted(replicas.items(), key=lambda kv: int(kv[0]))}),
                placement_source=doc.mark((*path, "placement")) if "placement" in entry else shared["placement"],
                replicas_source=doc.mark((*path, "replicas")) if replicas is not None else None,
            )
    return topics


def _setting_source(
    doc: Document, path: tuple[str, ...], entry: Mapping[str, Any], defaults: Mapping[str, Any], fleet: FleetLayer,
    key: str,
) -> SourceRef | None:
    """Where a topic's partitions/replicationFactor is written: the topic, the document's defaults, fleet.yaml."""
    if key in entry:
        return doc.mark((*path, key))
    if key in defaults:
        return doc.mark(("spec", "defaults", key))
    inherited = fleet.topic_settings.get(key)
    return inherited.source if inherited is not None else None


def _quota_name(raw: str) -> str:
    return DEFAULT_ENTITY if raw in ("default", DEFAULT_ENTITY) else raw


def build_quotas(
    documents: Sequence[Document], catalog: Catalog, declared: Declared, diags: list[Diagnostic]
) -> None:
    for doc in _of_kind(documents, "Quotas"):
        spec = doc.data["spec"]
        items: list[tuple[EntityRef, tuple[str, ...], Mapping[str, Any]]] = []
        for section in ("clients", "users", "ips"):
            for name, values in (spec.get(section) or {}).items():
                items.append((EntityRef(section, _quota_name(name)), ("spec", section, name), values or {}))
        for user, clients in (spec.get("userClients") or {}).items():
            for client, values in (clients or {}).items():
                ref = EntityRef("users", _quota_name(user), _quota_name(client))
                items.append((ref, ("spec", "userClients", user, client), values or {}))
        for ref, path, values in items:
            kind = ref.quota_kind
            config = layer_config(
                {}, values, marker(doc, *path), partial(catalog.quota, kind), diags, ref.display
            )
            declared.add_entity(ref, config, doc.mark(path), diags)
