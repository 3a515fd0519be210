"""Groups and ClientMetrics documents -> desired config entities `groups/<group id>` and
`client-metrics/<subscription>` (KRaft: ConfigResource.Type GROUP and CLIENT_METRICS), with duplicate declarations
reported. A subscription's `match` mapping becomes Kafka's list `selector=regex,...` in the order written (the order
import reads back), its `metrics` list Kafka's comma-separated list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.convert import layer_config, marker
from reconciler.manifests.desired_parts import Declared
from reconciler.manifests.load import Document
from reconciler.model import EntityRef


def build_groups(documents: Sequence[Document], catalog: Catalog, version: str, declared: Declared,
                 diags: list[Diagnostic]) -> None:
    for doc in documents:
        if doc.data.get("kind") != "Groups":
            continue
        for name, values in ((doc.data.get("spec") or {}).get("groups") or {}).items():
            ref, path = EntityRef("groups", str(name)), ("spec", "groups", str(name))
            lookup = partial(catalog.entity_key, "group", version=version)
            config = layer_config({}, values or {}, marker(doc, *path), lookup, diags, ref.display)
            declared.add_entity(ref, config, doc.mark(path), diags)


def subscription_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A subscription as Kafka's keys: `match` {selector: regex} -> ["selector=regex", ...] (order kept)."""
    out = dict(raw)
    if isinstance(raw.get("match"), Mapping):
        out["match"] = [f"{selector}={regex}" for selector, regex in raw["match"].items()]
    return out


def build_client_metrics(documents: Sequence[Document], catalog: Catalog, version: str, declared: Declared,
                         diags: list[Diagnostic]) -> None:
    for doc in documents:
        if doc.data.get("kind") != "ClientMetrics":
            continue
        for name, raw in ((doc.data.get("spec") or {}).get("subscriptions") or {}).items():
            ref, path = EntityRef("client-metrics", str(name)), ("spec", "subscriptions", str(name))
            lookup = partial(catalog.entity_key, "client-metrics", version=version)
            config = layer_config({}, subscription_config(raw or {}), marker(doc, *path), lookup, diags,
                                  ref.display)
            declared.add_entity(ref, config, doc.mark(path), diags)
