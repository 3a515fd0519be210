"""A cluster as a policy sees it: its entities with their effective values, in one of three views (PURE).

* `desired_view`: the manifests alone (`validate`): the entities they declare, values resolved with
  `effective.DesiredLayers` (server.properties, `brokers/<default>`, Kafka's defaults, quota fallbacks).
* `planned_view`: ZooKeeper once a plan is applied (`plan`, the PR comment): the declared entities with
  `effective.PlannedLayers`, and the value each had before (`LiveLayers`) for the rules on the size of a change.
* `live_view`: ZooKeeper as it is (`reconcile`'s drift): every live topic and config entity.

Values are read as Kafka's DescribeConfigs would report them (`effective.EntityResolver`: ConfigHelper's
precedence), with a topic described with `broker=None` (the value on every broker without an override of its
own). A value's position is the manifest line of the layer it comes from, when it comes from a manifest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reconciler.catalog import Catalog
from reconciler.effective import DesiredLayers, EntityResolver, Layers, LiveLayers, PlannedLayers
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, LiveState, SourceRef, frozen_map
from reconciler.plan import Plan

_ORIGIN = re.compile(r"(.+):(\d+)")  # effective.origin_of: "file:line"


@dataclass(frozen=True, slots=True)
class Value:
    """A value as a policy reads it: its text (None: sensitive, or nothing anywhere), where it is written (a
    manifest line, or None), where it comes from in words, and whether anything but Kafka's default sets it."""

    text: str | None
    source: SourceRef | None = None
    origin: str = "Kafka default"
    is_set: bool = False


NONE = Value(None)


@dataclass(frozen=True)
class Subject:
    """One entity: its reference, where it is declared, its values after the change and before it (None: no
    before, as in `validate`), and whether the plan changes it."""

    ref: EntityRef
    source: SourceRef | None
    after: Callable[[str], Value]
    before: Callable[[str], Value] | None = None
    changed: bool = True  # the plan changes it (a planned view); a manifest or live view: always judged as changed

    @property
    def name(self) -> str:
        return self.ref.name if self.ref.client is None else f"{self.ref.name}/clients/{self.ref.client}"


@dataclass(frozen=True)
class ClusterView:
    """A cluster's name, labels and entities; `population`: the names of every entity of each kind after the
    change (the count limits read it: a plan judges the declared topics but counts the live ones too)."""

    name: str
    labels: Mapping[str, str]
    subjects: Sequence[Subject]
    population: Mapping[str, Sequence[str]] = field(default_factory=frozen_map)
    source: SourceRef | None = None  # the Cluster document (count limits point at it)
    live: bool = False  # values read from ZooKeeper as it is (drift), not from a change


def source_of(origin: str) -> SourceRef | None:
    """The manifest line an effective value's origin names (`clusters/a/topics.yaml:12`); None for a znode or
    Kafka's default."""
    match = _ORIGIN.fullmatch(origin)
    return SourceRef(match.group(1), int(match.group(2))) if match else None


def _reader(layers: Layers, catalog: Catalog, ref: EntityRef, version: str | None,
            settings: Callable[[str], Value | None]) -> Callable[[str], Value]:
    """The entity's values, each resolved once, its layers looked up on the first read (most entities are
    read by a few rules, many by none: a 10,000-topic cluster builds no resolver for an unselected kind)."""
    resolver: list[EntityResolver] = []
    seen: dict[str, Value] = {}

    def read(key: str) -> Value:
        found = seen.get(key)
        if found is not None:
            return found
        special = settings(key)
        if special is None:
            if not resolver:
                resolver.append(EntityResolver(layers, catalog, ref, version=version))
            eff = resolver[0](key)
            head = eff.head
            origin = head.origin if head is not None else "Kafka default"
            special = Value(eff.value, source_of(origin), origin,
                            head is not None and head.source != "DEFAULT_CONFIG")
        seen[key] = special
        return special

    return read


def _broker_default(layers: Layers, catalog: Catalog, key: str, version: str | None) -> Value:
    eff = EntityResolver(layers, catalog, EntityRef("brokers", DEFAULT_ENTITY), version=version)(key)
    origin = eff.head.origin if eff.head is not None else "Kafka default"
    return Value(eff.value, source_of(origin), origin, False)


def _topic_settings(layers: Layers, catalog: Catalog, version: str | None, partitions: int | None,
                    rf: int | None, partitions_at: SourceRef | None, rf_at: SourceRef | None,
                    origin: str) -> Callable[[str], Value | None]:
    """partitions / replicationFactor: the topic's own, else the brokers' num.partitions /
    default.replication.factor (what Kafka creates a topic with when the request leaves them out)."""
    def settings(key: str) -> Value | None:
        if key == "partitions":
            if partitions is not None:
                return Value(str(partitions), partitions_at, origin if partitions_at is None else str(partitions_at),
                             True)
            return _broker_default(layers, catalog, "num.partitions", version)
        if key == "replicationFactor":
            if rf is not None:
                return Value(str(rf), rf_at, origin if rf_at is None else str(rf_at), True)
            return _broker_default(layers, catalog, "default.replication.factor", version)
        return None
    return settings


def _no_settings(key: str) -> Value | None:
    return None


def desired_view(desired: DesiredState, catalog: Catalog) -> ClusterView:
    layers = DesiredLayers(desired)
    version = desired.cluster.kafka_version
    subjects: list[Subject] = []
    for topic in desired.topics.values():
        ref = EntityRef("topics", topic.name)
        settings = _topic_settings(layers, catalog, version, topic.partitions, topic.replication_factor,
                                   topic.partitions_source, topic.rf_source, ref.display)
        subjects.append(Subject(ref, topic.source, _reader(layers, catalog, ref, version, settings)))
    for ref, entity in desired.entities.items():
        subjects.append(Subject(ref, entity.source, _reader(layers, catalog, ref, version, _no_settings)))
    return ClusterView(desired.cluster.name, desired.cluster.labels, subjects, _population(subjects),
                       desired.cluster.source)


def planned_view(desired: DesiredState, live: LiveState, plan: Plan, catalog: Catalog) -> ClusterView:
    """The declared entities once `plan` is applied, with their values before it."""
    after = PlannedLayers(live, plan, desired, catalog)
    before = LiveLayers(live, catalog, desired)
    version = desired.cluster.kafka_version
    created = {t.name: t for t in plan.topics_to_create}
    grown = {g.name: g.target for g in plan.partition_increases}
    touched = {e.ref for e in plan.entities} | {EntityRef("topics", n) for n in (*created, *grown)}
    subjects: list[Subject] = []
    for topic in desired.topics.values():
        ref = EntityRef("topics", topic.name)
        now = live.topics.get(topic.name)
        live_parts = len(now.assignment) if now is not None else None
        live_rf = len(next(iter(now.assignment.values()), ())) if now is not None and now.assignment else None
        new = created.get(topic.name)
        parts = new.partitions if new else grown.get(topic.name, live_parts)
        rf = new.replication_factor if new else live_rf
        at_parts = topic.partitions_source if (new or topic.name in grown) else None
        at_rf = topic.rf_source if new else None
        settings = _topic_settings(after, catalog, version, parts, rf, at_parts or topic.partitions_source,
                                   at_rf or topic.rf_source, ref.display)
        old = _topic_settings(before, catalog, version, live_parts, live_rf, None, None, f"/brokers/topics/{ref.name}")
        subjects.append(Subject(ref, topic.source, _reader(after, catalog, ref, version, settings),
                                _reader(before, catalog, ref, version, old) if now is not None else None,
                                ref in touched))
    for ref, entity in desired.entities.items():
        subjects.append(Subject(ref, entity.source, _reader(after, catalog, ref, version, _no_settings),
                                _reader(before, catalog, ref, version, _no_settings), ref in touched))
    population = dict(_population(subjects))
    population["topics"] = sorted({*live.topics, *created} - {t.name for t in plan.topics_to_delete})
    return ClusterView(desired.cluster.name, desired.cluster.labels, subjects, frozen_map(population),
                       desired.cluster.source)


def live_view(live: LiveState, catalog: Catalog, desired: DesiredState) -> ClusterView:
    """ZooKeeper as it is: every live topic and config entity (and `brokers/<default>`), judged for drift."""
    layers = LiveLayers(live, catalog, desired)
    version = desired.cluster.kafka_version
    subjects: list[Subject] = []
    for name, topic in live.topics.items():
        if name in live.topics_being_deleted:
            continue
        ref = EntityRef("topics", name)
        rf = len(next(iter(topic.assignment.values()), ())) if topic.assignment else None
        settings = _topic_settings(layers, catalog, version, len(topic.assignment), rf, None, None,
                                   f"/brokers/topics/{name}")
        subjects.append(Subject(ref, None, _reader(layers, catalog, ref, version, settings)))
    refs = {ref for ref, e in live.entities.items() if e.version is not None and ref.entity_type != "topics"}
    refs.add(EntityRef("brokers", DEFAULT_ENTITY))
    for ref in sorted(refs, key=lambda r: r.display):
        subjects.append(Subject(ref, None, _reader(layers, catalog, ref, version, _no_settings)))
    return ClusterView(desired.cluster.name, desired.cluster.labels, subjects, _population(subjects),
                       desired.cluster.source, live=True)


def _population(subjects: Sequence[Subject]) -> Mapping[str, Sequence[str]]:
    out: dict[str, list[str]] = {}
    for s in subjects:
        out.setdefault(s.ref.entity_type, []).append(s.name)
    return frozen_map({k: tuple(sorted(v)) for k, v in out.items()})
