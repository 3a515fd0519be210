"""PURE: (DesiredState, LiveState) -> Plan. Ownership, canonical comparison, secrets, topics (SPEC §3, §5).

* Every declared entity (and the config of every declared topic) is the complete desired set: live keys not
  declared are removed, except `policy.ignoreKeys`, the replication throttles that kafka-reassign-partitions
  sets and SCRAM credentials in users/<user> (the last two unless declared). Those are counted in `ignored`.
* Live entities that no manifest declares are unmanaged: listed, never touched, unless `policy.prune`
  (brokers/clients/users/ips/groups/client-metrics only; topics are never pruned nor deleted, feature levels
  never lowered because no manifest names them).
* Quota entities left without config and without children are deleted, as Kafka's `tryCleanQuotaNodes`
  does; broker and topic znodes are kept as `{"version":1,"config":{}}`.
Linear in the number of entities and keys. Every change is planned with risk "safe"; `risk.annotate`
rates them afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reconciler.catalog import SCRAM_KEYS, Catalog, load_catalog
from reconciler.diff.acls import plan_acls
from reconciler.diff.config import Comparer, ConfigDiffer
from reconciler.diff.topics import plan_deletions, plan_topics
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredValue, EntityRef, LiveEntity, LiveState, SecretState, SourceRef
from reconciler.plan import EntityPlan, Plan
from reconciler.reassign import plan_reassignment

__all__ = ["build_plan", "entity_sort_key"]

QUOTA_TYPES = frozenset({"clients", "users", "ips"})
PRUNABLE_TYPES = frozenset({"brokers", "clients", "users", "ips", "groups", "client-metrics"})
_NO_SECRETS: Mapping[tuple[EntityRef, str], SecretState] = MappingProxyType({})

_Target = tuple[EntityRef, Mapping[str, DesiredValue], SourceRef | None]


def entity_sort_key(ref: EntityRef) -> tuple[str, str, str]:
    """The plan's entity order: (type, name, client); a users/<u> parent sorts before its clients."""
    return (ref.entity_type, ref.name, ref.client or "")


def _exists(entity: LiveEntity | None) -> bool:
    return entity is not None and entity.version is not None


def build_plan(
    desired: DesiredState,
    live: LiveState,
    *,
    secret_states: Mapping[tuple[EntityRef, str], SecretState] = _NO_SECRETS,
    revision: str | None = None,
    created_at: str | None = None,
    catalog: Catalog | None = None,
    with_id: bool = True,
) -> tuple[Plan, list[Diagnostic]]:
    """The plan that makes `live` match `desired`, and the problems found (errors mean: do not apply).

    `with_id=False` leaves `plan_id` empty, for a caller that changes the plan further and hashes it once
    at the end (hashing a 10,000-topic plan takes tens of milliseconds)."""
    catalog = catalog if catalog is not None else load_catalog()
    policy = desired.cluster.policy
    differ = ConfigDiffer(
        Comparer(catalog, desired.cluster.kafka_version), frozenset(policy.ignore_keys), secret_states,
        prune_scram=policy.prune_scram_users,
    )
    topics = plan_topics(desired, live, catalog)
    deletions, deletion_problems = plan_deletions(desired, live)
    targets, unmanaged = _targets(desired, live, differ)
    for gone in deletions:  # deleted, so no longer "left untouched"
        unmanaged.discard(f"topics/{gone.name}")

    plans, ignored = _entity_plans(targets, live, differ)
    plans.sort(key=lambda p: entity_sort_key(p.ref))
    acl_plans, unmanaged_acls = plan_acls(desired.acls, live.acls, policy.prune_acls)
    reassignment, placement_problems = plan_reassignment(desired, live)
    unread = []  # "not read" must never read as "nothing to do"
    if live.acls is None and (desired.acls or policy.prune_acls):
        unread.append(Diagnostic("error", f"cluster {desired.cluster.name}: its ACLs were not read, so this plan "
                                 "cannot say what apply would do to them", desired.cluster.source))
    plan = Plan(
        cluster=desired.cluster.name,
        entities=tuple(plans),
        topics_to_create=tuple(topics.creates),
        partition_increases=tuple(topics.increases),
        topics_to_delete=tuple(deletions),
        acls=tuple(acl_plans),
        unmanaged_acls=tuple(unmanaged_acls),
        unmanaged=tuple(sorted(unmanaged)),
        ignored=ignored,
        warnings=tuple(sorted(set(differ.warnings))),
        revision=revision if revision is not None else desired.revision,
        created_at=created_at,
        kafka_version=desired.cluster.kafka_version,
        backend="kraft" if desired.cluster.is_kraft else "zookeeper",
        reassignment=reassignment,
    )
    return plan.with_id() if with_id else plan, [*topics.diagnostics, *deletion_problems, *differ.diagnostics,
                                                 *unread, *placement_problems]


def _entity_plans(
    targets: list[_Target], live: LiveState, differ: ConfigDiffer
) -> tuple[list[EntityPlan], int]:
    """One EntityPlan per target whose config changes, and the count of ignored live keys.

    Children (users/<u>/clients/<c>) are diffed first, so a parent knows whether it keeps any child: a
    quota parent left empty is deleted only when no child survives (Kafka's `tryCleanQuotaNodes`)."""
    children: dict[str, set[str]] = {}
    for ref, live_entity in live.entities.items():
        if ref.entity_type == "users" and ref.client is not None and _exists(live_entity):
            children.setdefault(ref.name, set()).add(ref.client)
    known_children = {user: set(clients) for user, clients in children.items()}
    targets.sort(key=_children_first)

    plans: list[EntityPlan] = []
    ignored = 0
    for ref, config, source in targets:
        entity = live.entities.get(ref)
        exists = _exists(entity)
        result = differ.diff(ref, config, entity.config if entity is not None else {}, source)
        ignored += result.ignored
        delete = False
        if ref.entity_type in QUOTA_TYPES and result.empty_after and entity is not None and exists:
            delete = not _keeps_children(ref, entity, children, known_children)
        if ref.entity_type == "users" and ref.client is not None:
            if delete or (not exists and result.empty_after):
                children.get(ref.name, set()).discard(ref.client)
            elif result.changes:
                children.setdefault(ref.name, set()).add(ref.client)
        if not result.changes:
            continue  # also: declared but absent with an empty desired config -> nothing to write
        version = entity.version if entity is not None else None
        plans.append(EntityPlan(ref, version, tuple(result.changes), delete))
    return plans, ignored


def _children_first(target: _Target) -> tuple[bool, str, str, str]:
    """(client is None, *entity_sort_key): children before parents, then the plan's order (one call each)."""
    ref = target[0]
    return (ref.client is None, ref.entity_type, ref.name, ref.client or "")


def _keeps_children(
    ref: EntityRef, entity: LiveEntity, children: Mapping[str, set[str]], known: Mapping[str, set[str]]
) -> bool:
    if ref.entity_type != "users" or ref.client is not None:
        return entity.has_children
    if children.get(ref.name):
        return True
    # Children we were not shown (the reader may skip them): assume they stay.
    return entity.has_children and not known.get(ref.name)


def _targets(desired: DesiredState, live: LiveState, differ: ConfigDiffer) -> tuple[list[_Target], set[str]]:
    """Entities to diff (declared ones and, with prune, undeclared ones), and the unmanaged display names."""
    declared: dict[EntityRef, tuple[Mapping[str, DesiredValue], SourceRef | None]] = {
        ref: (entity.config, entity.source) for ref, entity in desired.entities.items()
    }
    for name, topic in desired.topics.items():
        declared[EntityRef("topics", name)] = (topic.config, topic.source)
    targets: list[_Target] = []
    for ref, (config, source) in declared.items():
        # A topic that does not exist yet gets its config with the TopicCreate, never as an entity of its own.
        if ref.entity_type == "topics" and ref.name not in live.topics:
            continue
        targets.append((ref, config, source))

    unmanaged = {f"topics/{name}" for name in live.topics if name not in desired.topics}
    empty: Mapping[str, DesiredValue] = MappingProxyType({})
    for ref, entity in live.entities.items():
        if ref in declared or not _exists(entity):
            continue
        if ref.entity_type == "topics":
            if entity.config:
                unmanaged.add(ref.display)  # a config znode whose topic is not declared (or gone)
            continue
        scram = ref.entity_type == "users" and not SCRAM_KEYS.isdisjoint(entity.config)
        if not any(not differ.always_ignored(ref, key) for key in entity.config):
            if scram:  # SCRAM credentials no scramUsers entry declares: say so (policy.pruneScramUsers removes them)
                unmanaged.add(ref.display)
            continue  # nothing we would manage (no keys, or only throttles / SCRAM / ignoreKeys)
        if desired.cluster.policy.prune and ref.entity_type in PRUNABLE_TYPES:
            targets.append((ref, empty, desired.cluster.source))
        elif scram and differ.prune_scram:  # only the credentials go: the rest is kept as it is live
            kept = {k: DesiredValue(v) for k, v in entity.config.items() if k not in SCRAM_KEYS}
            targets.append((ref, MappingProxyType(kept), desired.cluster.source))
            if any(not differ.always_ignored(ref, key) for key in kept):
                unmanaged.add(ref.display)
        else:
            unmanaged.add(ref.display)
    return targets, unmanaged
