"""FleetDefaults: layers a cluster inherits by label selector.

Matching documents merge in file order; a key set by two of them with different values is an error that
names both places (never a silent "last one wins").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import Diagnostic
from reconciler.manifests.load import Document
from reconciler.model import SourceRef


@dataclass(frozen=True, slots=True)
class Layered:
    """A raw manifest value with where it was written."""

    raw: Any
    source: SourceRef


@dataclass
class FleetLayer:
    broker_defaults: dict[str, Layered] = field(default_factory=dict)
    topic_config: dict[str, Layered] = field(default_factory=dict)
    topic_settings: dict[str, Layered] = field(default_factory=dict)  # replicationFactor, partitions
    policy: dict[str, Layered] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)  # names of the FleetDefaults that matched


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    wanted = selector.get("labels") or {}
    return all(labels.get(k) == str(v) for k, v in wanted.items())


def _merge(
    target: dict[str, Layered],
    values: Mapping[str, Any],
    doc: Document,
    path: tuple[str, ...],
    what: str,
    diags: list[Diagnostic],
) -> None:
    for key, raw in values.items():
        source = doc.mark((*path, key))
        previous = target.get(key)
        if previous is not None and previous.raw != raw:
            diags.append(
                Diagnostic(
                    "error",
                    f"{what} {key!r} is set to different values by two matching FleetDefaults "
                    f"({previous.source} and {source}); make them agree or narrow a selector",
                    source,
                    key,
                )
            )
            continue
        target[key] = Layered(raw, source)


def fleet_layer(fleet: Sequence[Document], labels: Mapping[str, str]) -> tuple[FleetLayer, list[Diagnostic]]:
    layer = FleetLayer()
    diags: list[Diagnostic] = []
    for doc in fleet:
        if doc.data.get("kind") != "FleetDefaults":
            continue
        spec = doc.data.get("spec") or {}
        if not selector_matches(spec.get("selector") or {}, labels):
            continue
        layer.applied.append(str((doc.data.get("meta") or {}).get("name", "?")))
        _merge(layer.broker_defaults, spec.get("brokerDefaults") or {}, doc,
               ("spec", "brokerDefaults"), "broker default", diags)
        topic = spec.get("topicDefaults") or {}
        _merge(layer.topic_config, topic.get("config") or {}, doc,
               ("spec", "topicDefaults", "config"), "topic default", diags)
        settings = {k: v for k, v in topic.items() if k != "config"}
        _merge(layer.topic_settings, settings, doc, ("spec", "topicDefaults"), "topic default", diags)
        _merge(layer.policy, spec.get("policy") or {}, doc, ("spec", "policy"), "policy", diags)
    return layer, diags
