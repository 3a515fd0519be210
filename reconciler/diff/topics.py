"""Topic creation and partition increases (used by `diff.build_plan`).

A declared topic missing live is created with Kafka's replica placement (`assignment.py`, seeded with the
topic name so the plan is reproducible) or its declared `replicas:`; an existing one may only grow. A partition
decrease is an error that explains the manual path. A replication-factor change or another placement is the
plan's reassignment (reconciler/reassign/), not this module's. Drained brokers (spec.placement.drain) receive no
replica of a topic created or grown. Pure: standard library and the core only.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reconciler.assignment import AssignmentError, assign_new_partitions, assign_replicas, broker_default
from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredTopic, LiveState, LiveTopic, SecretRef
from reconciler.plan import PartitionIncrease, TopicCreate, TopicDelete


@dataclass(slots=True)
class TopicPlan:
    creates: list[TopicCreate] = field(default_factory=list)
    increases: list[PartitionIncrease] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def placement_brokers(desired: DesiredState, live: LiveState) -> dict[int, str | None]:
    """The registered brokers with their racks; the declared broker ids (no racks) when none is registered;
    drained brokers (spec.placement.drain) left out."""
    drain = set(desired.cluster.placement.drain)
    if live.brokers:
        return {b: reg.rack for b, reg in sorted(live.brokers.items()) if b not in drain}
    return dict.fromkeys(b for b in sorted(desired.cluster.brokers) if b not in drain)


def plan_topics(desired: DesiredState, live: LiveState, catalog: Catalog) -> TopicPlan:
    out = TopicPlan()
    brokers = placement_brokers(desired, live)
    # Kafka refuses a topic whose name equals an existing one once '.' is read as '_' (new ones count too).
    collisions: dict[str, str] = {name.replace(".", "_"): name for name in live.topics}
    for name, topic in sorted(desired.topics.items()):
        existing = live.topics.get(name)
        if existing is None:
            _create(desired, catalog, topic, brokers, collisions, out)
        else:
            _resize(topic, existing, brokers, out)
    return out


def _create(
    desired: DesiredState,
    catalog: Catalog,
    topic: DesiredTopic,
    brokers: Mapping[int, str | None],
    collisions: dict[str, str],
    out: TopicPlan,
) -> None:
    name = topic.name
    other = collisions.get(name.replace(".", "_"))
    if other is not None:
        out.diagnostics.append(Diagnostic(
            "error",
            f"Topic '{name}' collides with existing topics: {other}. Kafka treats '.' and '_' alike in "
            "metric names, so it refuses such a topic; choose another name",
            topic.source,
        ))
        return
    config: dict[str, str] = {}
    for key, dv in topic.config.items():
        if isinstance(dv.value, SecretRef):
            out.diagnostics.append(Diagnostic(
                "error", f"topic {name}: topic configs cannot be secrets", dv.source, key
            ))
            return
        config[key] = dv.value
    # Unset means "don't care": on creation use the brokers' defaults, as a CreateTopics request would.
    partitions = topic.partitions
    if partitions is None:
        partitions = broker_default(desired, catalog, "num.partitions")[0]
    rf = topic.replication_factor
    if rf is None:
        rf = broker_default(desired, catalog, "default.replication.factor")[0]
    if not brokers:
        out.diagnostics.append(Diagnostic(
            "error",
            f"cannot create topic {name}: no broker is registered in /brokers/ids and the Cluster declares "
            "no brokers; start the brokers (or list them in spec.brokers) and plan again",
            topic.source,
        ))
        return
    if topic.replicas is not None:  # declared: taken as written (validation checked them)
        rf = len(next(iter(topic.replicas.values()), ()))
        out.creates.append(TopicCreate(name, len(topic.replicas), rf, config, dict(topic.replicas), topic.source))
        collisions[name.replace(".", "_")] = name
        return
    try:
        assignment = assign_replicas(brokers, partitions, rf, seed=name)
    except AssignmentError as exc:
        out.diagnostics.append(Diagnostic("error", f"cannot create topic {name}: {exc}", topic.source))
        return
    out.creates.append(TopicCreate(name, partitions, rf, config, assignment, topic.source))
    collisions[name.replace(".", "_")] = name


def _resize(
    topic: DesiredTopic, existing: LiveTopic, brokers: Mapping[int, str | None], out: TopicPlan
) -> None:
    name, current = topic.name, existing.partitions
    target = topic.partitions
    if target is None or target == current:
        return
    if target < current:
        out.diagnostics.append(Diagnostic(
            "error",
            f"topic {name} has {current} partitions but the manifest says {target}: Kafka cannot remove "
            f"partitions. Set partitions: {current}, or create a new topic with {target} partitions and move "
            f"producers and consumers to it (deleting and recreating {name} loses its data and offsets)",
            topic.source,
            "partitions",
        ))
        return
    if existing.version is None:
        out.diagnostics.append(Diagnostic(
            "error", f"topic {name}: the version of /brokers/topics/{name} is unknown; plan again",
            topic.source,
        ))
        return
    try:
        if topic.replicas is not None:
            added = {p: r for p, r in topic.replicas.items() if p >= current}
        else:  # with the replication factor wanted (the reassignment brings the existing partitions to it)
            added = assign_new_partitions(brokers, existing.assignment, target, seed=name,
                                          replication_factor=topic.replication_factor)
    except AssignmentError as exc:
        out.diagnostics.append(
            Diagnostic("error", f"cannot add partitions to topic {name}: {exc}", topic.source, "partitions")
        )
        return
    out.increases.append(PartitionIncrease(name, current, target, existing.version, added, topic.source))


def is_internal(name: str) -> bool:
    """Kafka's internal topics and its reserved `__` prefix (`Topic.isInternal`): never deleted."""
    return name.startswith("__")


def policy_match(entries: Sequence[str], name: str) -> str | None:
    """The first `policy.deleteTopics` entry naming `name`: equal to it, or a shell pattern it matches
    (`fnmatchcase`); internal topics included (see `deletion_match`)."""
    return next((e for e in entries if e == name or fnmatch.fnmatchcase(name, e)), None)


def deletion_match(entries: Sequence[str], name: str) -> str | None:
    """The entry that makes an undeclared live topic `name` one to delete, None when none does or the topic is
    internal: the predicate `plan_deletions` applies and the fleet impact job reuses (whether the topic is
    declared, or already being deleted, is the caller's to know)."""
    return None if is_internal(name) else policy_match(entries, name)


def plan_deletions(desired: DesiredState, live: LiveState) -> tuple[list[TopicDelete], list[Diagnostic]]:
    """Undeclared live topics that the cluster's `policy.deleteTopics` names (an exact name, or a shell pattern
    matched with `fnmatchcase`), never by default. Internal topics (`__consumer_offsets`, `__transaction_state`
    and every `__` name, as Kafka's `Topic.isInternal` and its reserved prefix) are never deleted: named
    exactly, an error; matched by a pattern, a warning."""
    entries = desired.cluster.policy.delete_topics
    if not entries:
        return [], []
    where = desired.cluster.source
    out: list[TopicDelete] = []
    diagnostics: list[Diagnostic] = []
    for entry in entries:
        if entry.startswith("__") and not any(ch in entry for ch in "*?["):
            diagnostics.append(Diagnostic("error", f"policy.deleteTopics names the internal topic {entry}: Kafka's "
                                          "internal topics are never deleted", where, "deleteTopics"))
    for name, topic in sorted(live.topics.items()):
        if name in desired.topics or name in live.topics_being_deleted:
            continue  # declared, or already marked for deletion (the controller is deleting it)
        matched = policy_match(entries, name)
        if matched is None:
            continue
        if is_internal(name):
            if matched != name:
                diagnostics.append(Diagnostic("warning", f"policy.deleteTopics pattern {matched!r} matches the "
                                              f"internal topic {name}: never deleted", where, "deleteTopics"))
            continue
        if topic.version is None:
            continue  # no version to guard the deletion with (a topic read without its znode's stat)
        rf = max((len(r) for r in topic.assignment.values()), default=0)
        out.append(TopicDelete(name, topic.partitions, rf, topic.version, matched))
    return out, diagnostics
