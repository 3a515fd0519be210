"""The Kafka 4.x state of a KRaft cluster beside what kraft/read.py reads: group configs and client-metrics
subscriptions (kraft/groups.py) for the types a plan reads, and the finalized feature levels (kraft/features.py),
always: `LiveState.features` (the ELR rule asks for it) and, when the manifests declare features or prune, the
`features/cluster` entity."""

from __future__ import annotations

from dataclasses import replace

from reconciler.kraft import features, groups
from reconciler.kraft.admin import KraftAdmin
from reconciler.model import DesiredState, LiveState, frozen_map


def with_kafka4_state(admin: KraftAdmin, live: LiveState, desired: DesiredState, types: frozenset[str]) -> LiveState:
    entities = dict(live.entities)
    declared = [ref for ref in desired.entities if ref.entity_type in groups.RESOURCES]
    if declared or types & set(groups.RESOURCES):
        entities.update(groups.read_entities(admin, types, declared))
    try:
        levels = features.finalized_levels(admin)
    except Exception:  # a broker without DescribeFeatures (before 2.7): no features to manage
        levels = None
    if levels is not None and ("features" in types or features.REF in desired.entities):
        entities[features.REF] = features.live_entity(levels)
    return replace(live, entities=frozen_map(entities), features=frozen_map(levels) if levels is not None else None)
