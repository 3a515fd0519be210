"""A plan as the Admin API requests that write it on a KRaft cluster, in the order they are sent, each item
of a request a *unit* the operator can read ("users/alice SCRAM-SHA-512 (set)", "create topic orders") and
the state can record (the keys it wrote, fingerprints of the passwords among them, never a value).

The order (`steps`): first what Kafka cannot validate without writing — SCRAM credentials
(AlterUserScramCredentials has no validateOnly), then ACL entries added and removed (CreateAcls / DeleteAcls
have none either) — then what the `validateOnly` pass has just accepted: topics created, partitions added,
configs, quotas; topic deletions last. So a refusal Kafka could not announce comes before anything else of the
plan was written, and a plan applied again continues from where the cluster stands.

Request shape: Kafka refuses two alterations of one user's credentials in one AlterUserScramCredentials request
(`ControllerApis.alterUserScramCredentials` → "A user credential cannot be altered twice in the same request":
both are refused). A user with SCRAM-SHA-256 and SCRAM-SHA-512, or with one changed and the other removed, gets
one request per alteration: request k holds the k-th alteration of every user, upserts before deletions (the
user keeps a working credential throughout).

Entity kinds are dispatched by type (`_ENTITY_STEPS`), so a new kind adds one function and one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.kraft import features
from reconciler.kraft.admin import BROKER, DELETE, SET, TOPIC
from reconciler.kraft.groups import CLIENT_METRICS, GROUP
from reconciler.kraft.passwords import fingerprints
from reconciler.kraft.read import QUOTA_TYPES
from reconciler.model import DEFAULT_ENTITY, AclEntry, AclResource, EntityRef, Secret
from reconciler.plan import Change, EntityPlan, Plan
from reconciler.secrets.scram import MECHANISMS

SecretFor = Callable[[Change, EntityRef], Secret]
CONFIG_BATCH = 1000  # config resources per IncrementalAlterConfigs request (`_config_steps`)
# The controller refuses a CreateAcls or DeleteAcls writing more than 10,000 records, the whole request
# (QuorumController.MAX_RECORDS_PER_USER_OP; AclControlManager.createAcls / deleteAclsForFilter).
ACL_CREATE_BATCH = 5000
# AclControlManager.deleteAclsForFilter compares each filter with every ACL of the cluster, so a DeleteAcls costs
# filters x ACLs: 10,000 filters on 110,000 ACLs got no answer within 65 s (~117 ms a filter). 50 filters a request
# (~6 s there) keep each within its timeout (admin.DELETE_FILTER_MS) up to ~1.4 million ACLs.
ACL_DELETE_BATCH = 50
PRINCIPAL_FILTER_MIN = 50  # a principal losing this many entries may lose them with one filter (kraft/aclfilters.py)
_QUOTA_ENTITY = {v: k for k, v in QUOTA_TYPES.items()}  # our entity types -> ClientQuotaEntity types
# config entity types -> ConfigResource.Type (groups and client-metrics: Kafka 4.x / 3.7+, kraft/groups.py)
_RESOURCE_TYPES = {"brokers": BROKER, "topics": TOPIC, "groups": GROUP, "client-metrics": CLIENT_METRICS}


@dataclass(frozen=True, slots=True)
class KeyWrite:
    """One key an apply writes, as the reconciler's state records it once written: the value (None when the key
    is removed, or sensitive) and, for a password or SCRAM credential, its fingerprints (never its value)."""

    entity: str  # an entity's display (`brokers/<default>`, `users/alice`), `acls/<resource>`
    key: str  # a config key, a SCRAM mechanism, `(topic)`, `(partitions)`, an ACL entry's display
    value: str | None  # None: removed, or sensitive
    sensitive: bool = False
    fingerprint: Mapping[str, str] | None = None  # {"ref": ..., "stored": ...} of a password written
    removed: bool = False


@dataclass(frozen=True, slots=True)
class Unit:
    """One item of a request: what the operator reads in a report, and the keys it writes."""

    label: str
    writes: tuple[KeyWrite, ...] = ()
    kind: str = "entity"  # entity (configs, quotas, credentials), topic (created), partitions, acl, deletion
    # an ACL entry removed: (resource type, pattern type, name, principal, host, operation, permission)
    acl: tuple[str, str, str, str, str, str, str] | None = None

    @property
    def entity(self) -> int:
        return int(self.kind == "entity")

    @property
    def topic(self) -> int:
        return int(self.kind == "topic")


@dataclass
class Step:
    """One Admin API request (`request` names Kafka's API)."""

    request: str  # AlterUserScramCredentials, CreateAcls, DeleteAcls, CreateTopics, CreatePartitions,
    # IncrementalAlterConfigs, AlterClientQuotas, DeleteTopics
    what: str  # "SCRAM credentials (request 1 of 2)"
    units: list[Unit] = field(default_factory=list)
    payloads: list[Any] = field(default_factory=list)  # one per unit, in the form the request takes
    principal: str | None = None  # DeleteAcls of many of one principal's entries (`_acl_steps`)
    broad: bool = False  # DeleteAcls: payloads is one filter matching every unit (kraft/aclfilters.py)


@dataclass
class Operations:
    """The plan as requests, in the order they are sent."""

    steps: list[Step] = field(default_factory=list)

    def of(self, request: str) -> list[Step]:
        return [s for s in self.steps if s.request == request]

    @property
    def units(self) -> list[Unit]:
        return [u for s in self.steps for u in s.units]

    @property
    def passwords(self) -> dict[str, dict[str, str]]:
        """The fingerprints of every password and credential the plan writes (audit entry form)."""
        return {f"{w.entity}|{w.key}": dict(w.fingerprint) for u in self.units for w in u.writes if w.fingerprint}


def _quota_entity(ref: EntityRef) -> list[tuple[str, str | None]]:
    def name(n: str) -> str | None:
        return None if n == DEFAULT_ENTITY else n

    entity = [(_QUOTA_ENTITY[ref.entity_type], name(ref.name))]
    if ref.client is not None:
        entity.append(("client-id", name(ref.client)))
    return entity


class _Builder:
    def __init__(self, plan: Plan, secret_for: SecretFor | None) -> None:
        self.plan, self.secret_for = plan, secret_for
        self.scram: dict[str, list[tuple[Unit, Any]]] = {}  # user -> alterations in order
        self.configs: list[Step] = []
        self.quotas = Step("AlterClientQuotas", "quotas")

    def secret(self, entity: EntityPlan, change: Change) -> tuple[Secret, Mapping[str, str] | None] | None:
        if self.secret_for is None:
            return None
        password = self.secret_for(change, entity.ref)
        prints = fingerprints(entity.ref, change.key, change.secret, password) if change.secret else None
        return password, prints

    def config_entity(self, entity: EntityPlan) -> None:
        """brokers/, topics/, groups/, client-metrics/: one resource of IncrementalAlterConfigs (SET / DELETE per
        key); `_config_steps` puts the resources in requests."""
        ref = entity.ref
        ops: list[tuple[str, int, str | None]] = []
        writes: list[KeyWrite] = []
        for change in entity.changes:
            if change.op == "-":
                ops.append((change.key, DELETE, None))
                writes.append(KeyWrite(ref.display, change.key, None, change.sensitive, removed=True))
            elif not change.sensitive:
                ops.append((change.key, SET, change.after))
                writes.append(KeyWrite(ref.display, change.key, change.after))
            elif (found := self.secret(entity, change)) is not None:
                ops.append((change.key, SET, found[0].reveal()))
                writes.append(KeyWrite(ref.display, change.key, None, True, found[1]))
        if ops:
            name = "" if ref.name == DEFAULT_ENTITY else ref.name
            rtype = _RESOURCE_TYPES[ref.entity_type]
            self.configs.append(Step("IncrementalAlterConfigs", f"configs of {ref.display}",
                                     [Unit(f"{ref.display} config ({len(ops)} key(s))", tuple(writes))],
                                     [(rtype, name, ops)]))

    def quota_entity(self, entity: EntityPlan) -> None:
        """users/, clients/, ips/: quotas (AlterClientQuotas) and a user's SCRAM credentials."""
        from kafka.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion

        ref = entity.ref
        ops: list[tuple[str, float, bool]] = []
        writes: list[KeyWrite] = []
        for change in entity.changes:
            if change.key in MECHANISMS and ref.entity_type == "users" and ref.client is None:
                if change.op == "-":
                    unit = Unit(f"{ref.display} {change.key} (removed)",
                                (KeyWrite(ref.display, change.key, None, True, removed=True),))
                    self.scram.setdefault(ref.name, []).append((unit, UserScramCredentialDeletion(ref.name,
                                                                                                  change.key)))
                elif (found := self.secret(entity, change)) is not None:
                    unit = Unit(f"{ref.display} {change.key} (set)",
                                (KeyWrite(ref.display, change.key, None, True, found[1]),))
                    upsert = UserScramCredentialUpsertion(ref.name, change.key, found[0].reveal(),
                                                          iterations=change.iterations)
                    self.scram.setdefault(ref.name, []).append((unit, upsert))
                continue
            removed = change.op == "-"
            ops.append((change.key, 0.0 if removed else float(change.after or 0), removed))
            writes.append(KeyWrite(ref.display, change.key, None if removed else change.after, removed=removed))
        if ops:
            self.quotas.units.append(Unit(f"quotas of {ref.display} ({len(ops)} key(s))", tuple(writes)))
            self.quotas.payloads.append((_quota_entity(ref), ops))

    def scram_steps(self) -> list[Step]:
        """Request k: the k-th alteration of every user (upserts before deletions for each user)."""
        for alterations in self.scram.values():
            alterations.sort(key=lambda item: ("removed" in item[0].label, item[0].label))
        rounds = max((len(a) for a in self.scram.values()), default=0)
        steps = []
        for k in range(rounds):
            step = Step("AlterUserScramCredentials", "SCRAM credentials" + (f" (request {k + 1} of {rounds})"
                                                                             if rounds > 1 else ""))
            for user in sorted(self.scram):
                if k < len(self.scram[user]):
                    unit, alteration = self.scram[user][k]
                    step.units.append(unit)
                    step.payloads.append(alteration)
            steps.append(step)
        return steps


_ENTITY_STEPS: dict[str, Callable[[_Builder, EntityPlan], None]] = {
    "brokers": _Builder.config_entity,
    "topics": _Builder.config_entity,
    "users": _Builder.quota_entity,
    "clients": _Builder.quota_entity,
    "ips": _Builder.quota_entity,
    "groups": _Builder.config_entity,
    "client-metrics": _Builder.config_entity,
    "features": lambda _builder, _entity: None,  # one UpdateFeatures for the plan: _feature_steps
}


def operations(plan: Plan, secret_for: SecretFor | None) -> Operations:
    """`secret_for`: resolves a sensitive change's value; None (a plan-time check) leaves sensitive keys out."""
    builder = _Builder(plan, secret_for)
    for entity in plan.entities:
        _ENTITY_STEPS[entity.ref.entity_type](builder, entity)
    ops = Operations()
    ops.steps += builder.scram_steps()
    ops.steps += _acl_steps(plan)
    ops.steps += _feature_steps(plan)
    if plan.topics_to_create:
        ops.steps.append(Step("CreateTopics", "topics created",
                              [Unit(f"create topic {t.name}", (KeyWrite(f"topics/{t.name}", "(topic)", "exists"),
                                                               *(KeyWrite(f"topics/{t.name}", k, v)
                                                                 for k, v in sorted(t.config.items()))), "topic")
                               for t in plan.topics_to_create],
                              [(t.name, {"assignments": {p: list(r) for p, r in sorted(t.assignment.items())},
                                         "configs": dict(t.config)}) for t in plan.topics_to_create]))
    if plan.partition_increases:
        ops.steps.append(Step("CreatePartitions", "partitions added",
                              [Unit(f"topics/{p.name} partitions {p.current} -> {p.target}",
                                    (KeyWrite(f"topics/{p.name}", "(partitions)", str(p.target)),), "partitions")
                               for p in plan.partition_increases],
                              [(p.name, {"count": p.target,
                                         "assignments": [list(p.new_assignment[i]) for i in sorted(p.new_assignment)]})
                               for p in plan.partition_increases]))
    ops.steps += _config_steps(builder.configs)
    if builder.quotas.units:
        ops.steps.append(builder.quotas)
    if plan.topics_to_delete:
        ops.steps.append(Step("DeleteTopics", "topics deleted",
                              [Unit(f"delete topic {t.name}", (KeyWrite(f"topics/{t.name}", "(topic)", None,
                                                                        removed=True),), "deletion")
                               for t in plan.topics_to_delete], [t.name for t in plan.topics_to_delete]))
    return ops


def _config_steps(resources: list[Step]) -> list[Step]:
    """The config resources as Kafka's Admin client sends them (`KafkaAdminClient.incrementalAlterConfigs`): a
    broker's own resource in a request to that broker (which validates what only it can), every other resource
    (topics, the cluster default, groups, client metrics) together, CONFIG_BATCH a request. Each resource is
    still decided on its own, all of its keys or none; one request per resource made 10,000 topic changes
    10,000 round trips. The requests keep the plan's order of their first resource."""
    steps: list[Step] = []
    shared: Step | None = None
    for one in resources:
        rtype, name, _ops = one.payloads[0]
        if rtype == BROKER and name:
            steps.append(one)
            continue
        if shared is None or len(shared.units) >= CONFIG_BATCH:
            shared = Step("IncrementalAlterConfigs", "configs", [], [])
            steps.append(shared)
        shared.units += one.units
        shared.payloads += one.payloads
        shared.what = f"configs of {len(shared.units)} resource(s)"
    return steps


def _feature_steps(plan: Plan) -> list[Step]:
    """Feature levels (kraft/features.py): one UpdateFeatures, validated first like the configs, and sent before
    them, so a config that needs a new level (ELR's cluster-level min.insync.replicas) finds it."""
    wanted = features.updates(plan)
    if not wanted:
        return []
    where = features.REF.display
    return [Step("UpdateFeatures", "feature levels",
                 [Unit(f"{where} {u.feature} -> {u.level}" + (" (downgrade)" if u.downgrade else ""),
                       (KeyWrite(where, u.feature, str(u.level)),)) for u in wanted], list(wanted))]


def kafka_enum(name: str) -> str:  # SecurityUtils.operationName's inverse: IdempotentWrite -> IDEMPOTENT_WRITE
    return "".join("_" + ch if ch.isupper() and i else ch for i, ch in enumerate(name)).upper()


def _acl_steps(plan: Plan) -> list[Step]:
    """ACL entries added, then removed, in requests Kafka takes: CreateAcls of at most ACL_CREATE_BATCH entries;
    DeleteAcls of at most ACL_DELETE_BATCH exact filters (one per entry), one principal's entries together. The
    steps of a principal losing at least PRINCIPAL_FILTER_MIN entries carry its name: `kraft/aclfilters.py` may
    send them as one filter on the principal when the cluster shows that it would match nothing else."""
    creates: list[tuple[Unit, Any]] = []
    removals: dict[str, list[tuple[Unit, Any]]] = {}
    for a in plan.acls:
        pattern = kafka_pattern(a.resource)
        where = f"acls/{a.resource.display}"
        for entry in a.add:
            creates.append((Unit(f"ACL {a.resource.display}: {entry.display} (added)",
                                 (KeyWrite(where, entry.display, "present"),), "acl"),
                            kafka_acl(entry, pattern)))
        for entry in a.remove:
            removals.setdefault(entry.principal, []).append((
                Unit(f"ACL {a.resource.display}: {entry.display} (removed)",
                     (KeyWrite(where, entry.display, None, removed=True),), "acl",
                     acl=(a.resource.resource_type, a.resource.pattern, a.resource.name, entry.principal,
                          entry.host, entry.operation, entry.permission)),
                kafka_acl(entry, pattern, exact_filter=True)))
    steps = _chunked("CreateAcls", "ACL entries added", creates, ACL_CREATE_BATCH)
    for principal, items in removals.items():
        many = len(items) >= PRINCIPAL_FILTER_MIN
        steps += _chunked("DeleteAcls", f"ACL entries of {principal} removed" if many else "ACL entries removed",
                          items, ACL_DELETE_BATCH, principal if many else None)
    return _merged_deletes(steps)


def kafka_pattern(resource: AclResource) -> Any:
    """A resource pattern as kafka-python's ResourcePattern."""
    from kafka.admin import ACLResourcePatternType, ResourcePattern, ResourceType

    return ResourcePattern(ResourceType[kafka_enum(resource.resource_type)], resource.name,
                           ACLResourcePatternType[resource.pattern])


def kafka_acl(entry: AclEntry, pattern: Any, exact_filter: bool = False) -> Any:
    """An ACL entry on `pattern` as kafka-python's ACL (CreateAcls), or the ACLFilter matching just it (DeleteAcls)."""
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType

    kind = ACLFilter if exact_filter else ACL
    return kind(entry.principal, entry.host, ACLOperation[kafka_enum(entry.operation)],
                ACLPermissionType[kafka_enum(entry.permission)], pattern)


def _chunked(request: str, what: str, items: Sequence[tuple[Unit, Any]], size: int,
             principal: str | None = None) -> list[Step]:
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    return [Step(request, what + (f" (request {n} of {len(chunks)})" if len(chunks) > 1 else ""),
                 [u for u, _ in chunk], [p for _, p in chunk], principal) for n, chunk in enumerate(chunks, 1)]


def _merged_deletes(steps: list[Step]) -> list[Step]:
    """The few removals of many principals share requests (up to ACL_DELETE_BATCH filters each)."""
    out: list[Step] = []
    for step in steps:
        last = out[-1] if out else None
        if (step.request == "DeleteAcls" and step.principal is None and last is not None
                and last.request == "DeleteAcls" and last.principal is None
                and len(last.units) + len(step.units) <= ACL_DELETE_BATCH):
            last.units += step.units
            last.payloads += step.payloads
        else:
            out.append(step)
    return out


def labels(units: Sequence[Unit]) -> list[str]:
    return [u.label for u in units]
