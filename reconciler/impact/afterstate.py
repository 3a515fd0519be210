"""The "after" side of an impact: the manifests of the changed clusters as small row lists.

What apply would leave in ZooKeeper follows the plan's ownership rules (SPEC §3, `reconciler.diff`), which the job
applies to the inventory's rows on the driver (`after_apply`, used by `brokerside` and `overrides`): a declared
entity's config becomes exactly the declared one, except `policy.ignoreKeys` (live values stay, declared ones
are never written) and the replication throttles (kept unless declared); undeclared entities stay as they are,
unless `policy.prune` removes undeclared broker entities (topics are never pruned). Only brokers and topics
entities matter for effective configs.
Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.catalog import Catalog, load_catalog
from reconciler.impact.inventory import entity_name, static_rows, stored_value
from reconciler.model import REPLICATION_THROTTLE_KEYS, DesiredState, EntityRef


@dataclass
class AfterRows:
    clusters: list[str] = field(default_factory=list)
    # (cluster, entity_type, entity, key, value): declared values, ignoreKeys dropped
    configs: list[tuple[Any, ...]] = field(default_factory=list)
    declared: list[tuple[Any, ...]] = field(default_factory=list)  # (cluster, entity_type, entity), even if empty
    policies: list[tuple[Any, ...]] = field(default_factory=list)  # (cluster, prune, ignore_keys)
    static: list[tuple[Any, ...]] = field(default_factory=list)  # (cluster, broker, key, value)
    # (cluster, topic, partitions, replication_factor): declared topics (creations, increases)
    topics: list[tuple[Any, ...]] = field(default_factory=list)
    # cluster -> its policy.deleteTopics entries (names or shell patterns), for the clusters that opt in
    delete_topics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # (cluster, broker): the broker ids cluster.yaml declares (spec.brokers), registered or not
    brokers: list[tuple[str, int]] = field(default_factory=list)


def after_rows(states: Mapping[str, DesiredState], catalog: Catalog | None = None) -> AfterRows:
    catalog = catalog or load_catalog()
    out = AfterRows()
    for name in sorted(states):
        state = states[name]
        ignore = set(state.cluster.policy.ignore_keys)
        out.clusters.append(name)
        out.policies.append((name, state.cluster.policy.prune, sorted(ignore)))
        out.brokers.extend((name, b) for b in sorted(state.cluster.brokers))
        out.static.extend(static_rows(state, catalog))
        if state.cluster.policy.delete_topics:
            out.delete_topics[name] = tuple(state.cluster.policy.delete_topics)
        declared = [(ref, e.config) for ref, e in state.entities.items() if ref.entity_type == "brokers"]
        for topic in state.topics.values():
            declared.append((EntityRef("topics", topic.name), topic.config))
            out.topics.append((name, topic.name, topic.partitions, topic.replication_factor))
        for ref, config in declared:
            entity = entity_name(ref)
            out.declared.append((name, ref.entity_type, entity))
            for key, dv in sorted(config.items()):
                if key not in ignore:
                    value = stored_value(catalog, ref, key, dv.value)
                    out.configs.append((name, ref.entity_type, entity, key, value))
    return out


def after_apply(live: Iterable[tuple[Any, ...]], after: AfterRows, entity_type: str, *, prunable: bool
                ) -> dict[tuple[str, str, str], str]:
    """(cluster, entity, key) -> value that apply leaves for one entity type, from the live rows (cluster, entity,
    key, value) and the manifests: a declared entity keeps only its declared keys, plus `policy.ignoreKeys` and
    the replication throttles it does not declare; an undeclared one stays unless `policy.prune` (and
    `prunable`: brokers yes, topics never) removes it."""
    declared = {(c, e) for c, t, e in after.declared if t == entity_type}
    desired = {(c, e, k): v for c, t, e, k, v in after.configs if t == entity_type}
    policy = {c: (bool(prune) and prunable, set(ignore or ())) for c, prune, ignore in after.policies}
    result: dict[tuple[str, str, str], str] = {}
    for c, e, k, v in live:
        prune, ignore = policy.get(c, (False, set()))
        if (c, e) not in declared:
            kept = not prune
        else:
            kept = k in ignore or (k in REPLICATION_THROTTLE_KEYS and (c, e, k) not in desired)
        if kept:
            result[(c, e, k)] = v
    return result | desired
