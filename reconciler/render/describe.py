"""`reconciler describe`: effective configs live and as the manifests would make them, as text and JSON.

What is described: one entity, or every entity of the cluster (the brokers and `<default>`, every topic, the
quota entities, live or declared). Its keys: Kafka's for the entity type (the catalog, for the cluster's
Kafka version) and every key set in any of its layers (listener-prefixed, custom). Without a KEY and without
`show_all`, keys at Kafka's default on both sides are left out, as `kafka-configs.sh --describe` leaves out
what is not overridden (`--all` shows them). The values come from `effective.resolve`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.catalog import Catalog
from reconciler.effective import Effective, EntityResolver, Layers, Synonym, quota_fallbacks
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, LiveState
from reconciler.render.access import AccessView, access_json
from reconciler.render.styled import Block, Table, line
from reconciler.units import describe as with_unit
from reconciler.units import parse_int

_TYPE_ORDER = {"brokers": 0, "topics": 1, "users": 2, "clients": 3, "ips": 4, "groups": 5, "client-metrics": 6,
               "features": 7}
_SOURCE_LABEL = {
    "TOPIC_CONFIG": "topic override",
    "DYNAMIC_BROKER_CONFIG": "per-broker",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "cluster default",
    "STATIC_BROKER_CONFIG": "static",
    "DEFAULT_CONFIG": "Kafka default",
    "QUOTA_CONFIG": "quota",
    "DYNAMIC_GROUP_CONFIG": "group config",
    "DYNAMIC_CLIENT_METRICS_CONFIG": "subscription",
    "FINALIZED_FEATURE": "finalized",
}


@dataclass(frozen=True, slots=True)
class KeyView:
    live: Effective
    planned: Effective

    @property
    def differs(self) -> bool:
        return (self.live.value, self.live.sensitive) != (self.planned.value, self.planned.sensitive)


@dataclass(frozen=True, slots=True)
class EntityView:
    ref: EntityRef
    exists: bool  # live: the topic exists / the config znode exists (brokers: always described)
    keys: tuple[KeyView, ...]


def entities_of(desired: DesiredState, live: LiveState) -> list[EntityRef]:
    """Every entity worth describing: brokers (declared, registered or configured), <default>, topics and
    quota entities, live or declared."""
    refs = {EntityRef("brokers", DEFAULT_ENTITY)}
    refs |= {EntityRef("brokers", str(b)) for b in (*desired.cluster.brokers, *live.brokers)}
    refs |= {EntityRef("topics", t) for t in (*desired.topics, *live.topics)}
    refs |= {r for r in (*desired.entities, *live.entities) if r.entity_type != "topics" or r.name in live.topics}
    return sorted(refs, key=lambda r: (_TYPE_ORDER[r.entity_type], _number(r.name), r.name, r.client or ""))


def _number(name: str) -> int:
    number = parse_int(name)  # bounded: a znode name may be anything
    return -1 if number is None else number


def keys_of(catalog: Catalog, version: str, ref: EntityRef, layers: Sequence[Layers]) -> list[str]:
    """Kafka's keys for the entity type and every key set in one of the entity's layers."""
    if ref.entity_type == "topics":
        known = set(catalog.names("topic", version))
        refs = [ref]
    elif ref.entity_type == "brokers":
        known = set(catalog.names("broker", version)) | set(catalog.names("brokers"))
        refs = [EntityRef("brokers", DEFAULT_ENTITY)] + ([ref] if ref.name != DEFAULT_ENTITY else [])
    else:
        known = set(catalog.names(ref.quota_kind))
        refs = [ref, *quota_fallbacks(ref)]
    found = {k for layer in layers for r in refs for k in layer.dynamic(r)}
    if ref.entity_type == "brokers":
        names = [DEFAULT_ENTITY] + ([ref.name] if ref.name != DEFAULT_ENTITY else [])
        found |= {k for layer in layers for n in names for k in layer.static(n)}
    return sorted(known | found)


def entity_view(
    catalog: Catalog, version: str, ref: EntityRef, live: Layers, planned: Layers, *, exists: bool,
    key: str | None = None, show_all: bool = False, broker: str | None = None,
) -> EntityView:
    keys = [key] if key is not None else keys_of(catalog, version, ref, (live, planned))
    before = EntityResolver(live, catalog, ref, version=version, broker=broker)
    after = EntityResolver(planned, catalog, ref, version=version, broker=broker)
    views = []
    for k in keys:
        if key is None and not show_all and before.at_default(k) and after.at_default(k):
            continue
        view = KeyView(before(k), after(k))
        if key is not None or show_all or not (view.live.is_default and view.planned.is_default):
            views.append(view)
    return EntityView(ref, exists, tuple(views))


# --- text -----------------------------------------------------------------------------------------------


def _value(e: Effective) -> str:
    if e.sensitive:
        return "(sensitive)"
    return with_unit(e.key, e.value) if e.value is not None else "(not set)"


def _source(e: Effective) -> str:
    """`topic override`, `cluster default (log.retention.ms)`, `static (log.retention.hours) at FILE:LINE`."""
    head = e.head
    if head is None:
        return _SOURCE_LABEL["DEFAULT_CONFIG"]
    parts = [_SOURCE_LABEL[head.source]]
    if head.source in ("DYNAMIC_BROKER_CONFIG", "QUOTA_CONFIG") or head.layer.startswith("server.properties of"):
        parts.append(head.layer)
    if head.name != e.key:
        parts.append(f"({head.name})")
    if ":" in head.origin and not head.origin.startswith("/"):  # a manifest line, not a znode path
        parts.append(f"at {head.origin}")
    return " ".join(parts)


def _missing(ref: EntityRef) -> str:
    return "topic does not exist yet" if ref.entity_type == "topics" else "no config znode"


def _entity_table(view: EntityView) -> Table:
    title = view.ref.display + ("" if view.exists else f"  ({_missing(view.ref)})")
    rows = tuple(
        ((k.live.key, None), ("~" if k.differs else "", "differs"), (_value(k.live), None),
         (_source(k.live), "muted"), (_value(k.planned), "differs" if k.differs else None),
         (_source(k.planned), "muted"))
        for k in view.keys
    )
    return Table(("KEY", "", "LIVE", "FROM", "MANIFESTS", "FROM"), rows, title)


def _synonyms_table(title: str, synonyms: Iterable[Synonym]) -> Table:
    rows = tuple(((s.source, None), (s.name, None), ("(sensitive)" if s.value is None else s.value, None),
                  (s.layer, None), ("" if s.origin == s.layer else s.origin, "muted")) for s in synonyms)
    return Table(("SOURCE", "NAME", "VALUE", "LAYER", "WHERE"), rows, title)


def describe_blocks(views: Sequence[EntityView], *, synonyms: bool = False) -> list[Block]:
    """One table per entity; with `synonyms`, each key's synonyms list (live, then manifests) after it."""
    blocks: list[Block] = []
    for view in views:
        if blocks:
            blocks.append(line(""))
        if not view.keys:
            missing = "" if view.exists else f"  ({_missing(view.ref)})"
            blocks += [line(view.ref.display + missing, "heading"),
                       line("every key at Kafka's default (--all lists them)")]
            continue
        blocks.append(_entity_table(view))
        for k in view.keys if synonyms else ():
            for side, e in (("live", k.live), ("manifests", k.planned)):
                blocks.append(line(""))
                blocks.append(_synonyms_table(f"{view.ref.display} {k.live.key}: synonyms ({side})", e.synonyms))
    if not blocks:
        blocks.append(line("nothing to describe"))
    return blocks


# --- JSON -----------------------------------------------------------------------------------------------


def _effective_json(e: Effective) -> dict[str, Any]:
    return {
        "value": e.value,
        "source": e.source,
        "sensitive": e.sensitive,
        "synonyms": [{"name": s.name, "value": s.value, "source": s.source, "layer": s.layer, "origin": s.origin}
                     for s in e.synonyms],
    }


def describe_json(cluster: str, version: str, views: Sequence[EntityView],
                  access: Sequence[AccessView] = (), consumers: dict[str, Any] | None = None) -> str:
    doc: dict[str, Any] = {
        "cluster": cluster,
        "kafkaVersion": version,
        "entities": [
            {
                "entity": v.ref.display,
                "existsLive": v.exists,
                "configs": [{"name": k.live.key, "differs": k.differs, "live": _effective_json(k.live),
                             "manifests": _effective_json(k.planned)} for k in v.keys],
            }
            for v in views
        ],
    }
    if access:
        doc["access"] = access_json(access)
    if consumers is not None:  # the topic's groups where the plan lowers its retention (`render.consumers` rows)
        doc["consumers"] = {"groups": consumers["rows"], "readAt": consumers["read_at"],
                            "notRead": consumers["not_read"]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# --- consumers (one topic) ------------------------------------------------------------------------------


def consumer_blocks(rows: Sequence[dict[str, Any]], title: str, read_at: str, not_read: str | None) -> list[Block]:
    """The groups of one topic and what the planned retention makes them lose (`render.consumers` rows)."""
    from reconciler.render import consumers as C

    if not_read is not None:
        return [line(title, "heading"), line(f"consumer offsets not read: {C.name(not_read, 300)}", "muted")]
    if not rows:
        return [line(title, "heading"), line("no consumer group has committed offsets on this topic"),
                line(read_at, "muted")]
    table = Table(("GROUP", "STATE", "LAG", "UNREAD RECORDS DELETED"), tuple(
        ((C.name(r["group"]), None), (C.state(r), None),
         (f"{C.lag(r['lagMs'])} ({r['lagRecords']:,} records)", None),
         (C.records(r["records"]) if r["records"][1] else "none", "differs" if r["records"][1] else None))
        for r in rows), title)
    said = [line(f"{C.BADGE} {C.sentence(r, md=False)}", "differs") for r in rows if r["records"][1]]
    return [table, *said, line(read_at, "muted")]
