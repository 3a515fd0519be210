"""Replica placement as code (PURE): the replication factor, rack-aware or explicit placement and drained brokers
of a cluster's manifests, against its live assignment, become the plan's `Reassignment` — the partitions whose
replicas move (minimal: every replica that may stay stays, `placement.py`), what that copies per broker
(`traffic.py`), the throttle (`throttles.py`) and what an earlier pass left in flight (`record.py`).

A partition already moving is planned from where it is going: when that is still the target, the move is listed
as in flight (apply waits for it); a move the reconciler did not start (`kafka-reassign-partitions.sh`, Cruise
Control) is left alone and said. Standard library and the core only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredTopic, InFlightMove, LiveState, SourceRef
from reconciler.plan import PartitionMove, Reassignment
from reconciler.reassign.placement import Placed, PlacementError, TopicPlacement, place
from reconciler.reassign.record import Record, parse
from reconciler.reassign.throttles import BROKER_KEYS, TOPIC_KEYS, throttles

__all__ = ["PlacementError", "facts_needed", "plan_reassignment", "requested_moves"]

FOREIGN_SHOWN = 5


@dataclass(slots=True)
class _Scope:
    """The topics placement looks at and how: declared ones with their settings; with a drain, every other one
    (internal ones too: a drained broker must hold nothing) as it is."""

    topics: dict[str, TopicPlacement] = field(default_factory=dict)
    declared: dict[str, DesiredTopic] = field(default_factory=dict)


def _scope(desired: DesiredState, live: LiveState, moving: Mapping[tuple[str, int], InFlightMove]) -> _Scope:
    """Leaves out a declared topic `place` would find nothing to move in (`_stays`): a fleet's topics, mostly."""
    out = _Scope()
    default = desired.cluster.placement.default
    drain = bool(desired.cluster.placement.drain)
    for name, topic in sorted(live.topics.items()):
        if name in live.topics_being_deleted or not topic.assignment:
            continue
        wanted = desired.topics.get(name)
        if wanted is None and not drain:
            continue
        current = topic.assignment if not moving else {
            p: moving[(name, p)].target if (name, p) in moving else replicas
            for p, replicas in topic.assignment.items()}
        if wanted is not None and not drain and _stays(wanted, current, default):
            continue
        if wanted is not None:
            explicit = None
            if wanted.replicas is not None:  # the partitions it declares that exist (new ones are created so)
                explicit = {p: r for p, r in wanted.replicas.items() if p in current}
            out.topics[name] = TopicPlacement(name, current, wanted.replication_factor,
                                              wanted.placement or default, explicit)
            out.declared[name] = wanted
        elif drain:
            out.topics[name] = TopicPlacement(name, current)
    return out


def _stays(wanted: DesiredTopic, current: Mapping[int, tuple[int, ...]], default: str) -> bool:
    """`place` returns [] for this topic without looking at the brokers (its first check): nothing is drained, no
    replicas are declared, racks are not asked for and every partition has the replication factor wanted (or
    keeps its count)."""
    rf = wanted.replication_factor
    return (wanted.replicas is None and (wanted.placement or default) != "rackAware"
            and (not rf or all(len(r) == rf for r in current.values())))


def requested_moves(desired: DesiredState, live: LiveState,
                    moving: Mapping[tuple[str, int], InFlightMove] | None = None
                    ) -> Iterator[tuple[str, list[Placed] | PlacementError]]:
    """Per topic in scope, the partitions whose replicas change (or why they cannot be placed)."""
    return _requested(_scope(desired, live, moving or {}), desired, live)


def _requested(scope: _Scope, desired: DesiredState, live: LiveState
               ) -> Iterator[tuple[str, list[Placed] | PlacementError]]:
    brokers = {b: reg.rack for b, reg in live.brokers.items()}
    drain = frozenset(desired.cluster.placement.drain)
    for name, topic in scope.topics.items():
        try:
            placed = place(topic, brokers, drain)
        except PlacementError as exc:
            yield name, exc
            continue
        if placed:
            yield name, placed


def facts_needed(desired: DesiredState, live: LiveState) -> bool:
    """Whether a plan needs the live facts of replica placement (moves in flight, partition sizes, the
    reassignment record): some partition would move, or a replication throttle is set (a reassignment in flight,
    or throttles one left). Cheap: no request is made to know it."""
    if any(not isinstance(found, PlacementError) for _, found in requested_moves(desired, live)):
        return True
    throttle_keys = {*BROKER_KEYS, *TOPIC_KEYS}
    return any(not throttle_keys.isdisjoint(e.config) for e in live.entities.values()
               if e.ref.entity_type in ("brokers", "topics"))


def _source(topic: DesiredTopic | None, placed: Placed, desired: DesiredState) -> SourceRef | None:
    spec = desired.cluster.placement
    if topic is None:
        return spec.drain_source
    if topic.replicas is not None:
        return topic.replicas_source or topic.source
    if any(r.startswith("replication factor") for r in placed.reasons):
        return topic.rf_source or topic.source
    if any(r.endswith("drained") for r in placed.reasons):
        return spec.drain_source or topic.source
    return topic.placement_source or spec.source or topic.source


def plan_reassignment(desired: DesiredState, live: LiveState) -> tuple[Reassignment | None, list[Diagnostic]]:
    """The plan's reassignment (None when nothing moves, nothing is in flight and no throttle was left), and the
    problems found (errors: it cannot be planned)."""
    diags: list[Diagnostic] = []
    record = parse(live.reassignment_record)
    in_flight = dict(live.reassignments or {})
    ours = {tp: m for tp, m in in_flight.items() if record is not None and record.started(*tp, m.target)}
    foreign = {tp: m for tp, m in in_flight.items() if tp not in ours}
    scope = _scope(desired, live, in_flight)
    moves: dict[tuple[str, int], PartitionMove] = {}
    sizes = live.partition_sizes or {}
    for name, found in _requested(scope, desired, live):
        topic = scope.declared.get(name)
        if isinstance(found, PlacementError):
            where = (topic.rf_source or topic.source) if topic is not None else desired.cluster.placement.drain_source
            diags.append(Diagnostic("error", f"topic {name}: the replicas cannot be placed: {found}", where,
                                    "replicationFactor" if topic is not None else "drain"))
            continue
        for placed in found:
            tp = (name, placed.partition)
            if tp in foreign:
                continue  # said below, once
            origin = in_flight[tp].origin if tp in in_flight else live.topics[name].assignment[placed.partition]
            moves[tp] = PartitionMove(name, placed.partition, tuple(origin), placed.target, sizes.get(tp),
                                      placed.reasons, False, _source(topic, placed, desired))
    for tp, m in sorted(ours.items()):
        if tp not in moves:
            moves[tp] = PartitionMove(m.topic, m.partition, m.origin, m.target, sizes.get(tp),
                                      ("started by plan " + (record.plan_id if record else "?"),), True)
    if foreign:
        names = ", ".join(f"{t}-{p}" for t, p in sorted(foreign)[:FOREIGN_SHOWN])
        more = f" and {len(foreign) - FOREIGN_SHOWN} more" if len(foreign) > FOREIGN_SHOWN else ""
        diags.append(Diagnostic("warning", f"{len(foreign)} partition(s) are being reassigned by someone else "
                                f"(not by the reconciler): {names}{more}; they are left alone, and apply starts no "
                                "move until they are done (as kafka-reassign-partitions.sh --execute refuses)",
                                desired.cluster.source))
    leftover = record.entities if record is not None else ()
    if not moves and not leftover:
        return None, diags
    if moves and desired.cluster.admin is None and not desired.cluster.is_kraft:
        diags.append(Diagnostic(
            "error", f"cluster {desired.cluster.name}: {len(moves)} partition(s) would move, which needs the "
            "brokers' Admin API: Kafka 2.4+ reassigns partitions through AlterPartitionReassignments, as "
            "kafka-reassign-partitions.sh does; add spec.adminClient (bootstrapServers)", desired.cluster.source,
            "adminClient"))
    spec = desired.cluster.reassignment
    ordered = tuple(moves[tp] for tp in sorted(moves))
    diags.extend(_declared_throttles(desired, ordered))
    return Reassignment(ordered, spec.throttle, spec.max_partitions, spec.max_bytes, leftover,
                        _started_by(record)), diags


def _declared_throttles(desired: DesiredState, moves: tuple[PartitionMove, ...]) -> list[Diagnostic]:
    """A throttle key the manifests declare where the reassignment sets its own (the rates on the brokers it
    involves, the replica lists on its topics) would be overwritten and then removed: an error at the key."""
    th = throttles(moves, desired.cluster.reassignment.throttle)
    brokers, topics = {str(b) for b in th.brokers}, set(th.topics)
    out = []
    for ref, entity in desired.entities.items():
        if ref.entity_type == "brokers" and ref.name in brokers:
            for key in BROKER_KEYS:
                if key in entity.config:
                    out.append(Diagnostic(
                        "error", f"brokers/{ref.name} declares {key}, which the planned reassignment sets on every "
                        "broker it involves (spec.reassignment.throttle) and removes when done: remove the "
                        "declaration while replicas move", entity.config[key].source or entity.source, key))
    for name in sorted(topics & set(desired.topics)):
        for key in TOPIC_KEYS:
            declared = desired.topics[name].config.get(key)
            if declared is not None:
                out.append(Diagnostic(
                    "error", f"topic {name} declares {key}, which the planned reassignment sets to its moving "
                    "replicas and removes when done: remove the declaration while replicas move",
                    declared.source or desired.topics[name].source, key))
    return out


def _started_by(record: Record | None) -> str | None:
    return record.plan_id if record is not None else None
