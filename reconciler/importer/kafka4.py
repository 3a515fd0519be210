"""A KRaft cluster's Kafka 4.x state -> the Groups, ClientMetrics and Features documents that declare exactly it:
each group's dynamic configs, each client-metrics subscription (its `match` list as a selector mapping in the
order Kafka holds it, its `metrics` as a list), and every finalized feature level (metadata.version by its name,
"4.1-IV1"; features at 0 are not finalized and are left out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reconciler.catalog import Catalog
from reconciler.model import FEATURES_ENTITY, EntityRef, LiveEntity, LiveState

API = "reconciler/v1"


class Writer(Protocol):
    """importer.compose.Writer: live strings -> tidy manifest values."""

    def value(self, scope: str, name: str, live: str) -> Any: ...

    def config(self, scope: str, live: Mapping[str, str]) -> dict[str, Any]: ...


def _doc(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "meta": {}, "spec": spec}


def _of_type(live: LiveState, entity_type: str) -> list[tuple[EntityRef, LiveEntity]]:
    """The entities of one type with config, by name (EntityRefs of other types do not order against them)."""
    return sorted(((r, e) for r, e in live.entities.items() if r.entity_type == entity_type and e.config),
                  key=lambda item: item[0].name)


def groups_doc(live: LiveState, writer: Writer) -> dict[str, Any] | None:
    groups = {ref.name: writer.config("groups", e.config) for ref, e in _of_type(live, "groups")}
    return _doc("Groups", {"groups": groups}) if groups else None


def subscription(config: Mapping[str, str], writer: Writer) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in sorted(config.items()):
        if key == "metrics":
            out[key] = [m for m in value.split(",") if m]
        elif key == "match":
            pairs = (item.partition("=") for item in value.split(",") if item)
            out[key] = {selector: regex for selector, _, regex in pairs}
        else:
            out[key] = writer.value("client-metrics", key, value)
    return out


def client_metrics_doc(live: LiveState, writer: Writer) -> dict[str, Any] | None:
    subs = {ref.name: subscription(e.config, writer) for ref, e in _of_type(live, "client-metrics")}
    return _doc("ClientMetrics", {"subscriptions": subs}) if subs else None


def features_doc(live: LiveState, catalog: Catalog, version: str) -> dict[str, Any] | None:
    entity = live.entities.get(EntityRef("features", FEATURES_ENTITY))
    if entity is None:
        return None
    known = catalog.features(version)
    levels: dict[str, Any] = {}
    for name, text in sorted(entity.config.items()):
        level = int(text)
        feature = known.get(name)
        if level == 0 or feature is None:
            continue
        named = next((n for n, v in feature.named.items() if v == level), None)
        levels[name] = named if named is not None else level
    return _doc("Features", {"features": levels}) if levels else None


def kafka4_files(live: LiveState, writer: Writer, catalog: Catalog, version: str) -> dict[str, list[dict[str, Any]]]:
    """groups.yaml, client-metrics.yaml and features.yaml, each when the cluster has something for it."""
    files = {}
    for name, doc in (("groups.yaml", groups_doc(live, writer)),
                      ("client-metrics.yaml", client_metrics_doc(live, writer)),
                      ("features.yaml", features_doc(live, catalog, version))):
        if doc is not None:
            files[name] = [doc]
    return files
