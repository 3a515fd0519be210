"""Execute a plan on a KRaft cluster through its Admin API: the same plan a ZooKeeper cluster gets, written
with the requests Kafka's own tools send in KRaft mode (`kafka-configs.sh` / `kafka-topics.sh` /
`kafka-acls.sh`: `Admin.incrementalAlterConfigs`, `createTopics`, `createPartitions`, `deleteTopics`,
`alterClientQuotas`, `createAcls` / `deleteAcls`, `alterUserScramCredentials`).

First every request Kafka can validate without writing is sent with `validateOnly` (IncrementalAlterConfigs,
CreateTopics, CreatePartitions, AlterClientQuotas: the brokers' and controllers' own validation,
`ConfigAdminManager.validateBrokerConfigChange`, `ReplicationControlManager.createTopics`, ...): a refusal is
an error naming the entity and Kafka's message, and nothing is written. Then the writes, in the order a
topic's config needs it: topics created (with their config), partitions added, configs, quotas, SCRAM
credentials, ACLs, topics deleted. A refusal during the writes stops there and says what was written.

No lock: KRaft's controllers serialise the writes; no versions: what the plan saw is read again first
(`stale_changes`, exit 3 when the cluster changed since), and a plan applied twice sets the same values
(IncrementalAlterConfigs SET/DELETE are idempotent). The audit entry goes to the local audit log only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import Diagnostic, ReconcilerError, RefusedError, clip, printable
from reconciler.kraft.admin import (
    BROKER,
    DELETE,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    SET,
    TOPIC,
    KraftAdmin,
    Refusal,
)
from reconciler.kraft.passwords import fingerprints
from reconciler.kraft.read import QUOTA_TYPES, dynamic_values
from reconciler.model import DEFAULT_ENTITY, ClusterSpec, EntityRef, Secret
from reconciler.plan import Change, EntityPlan, Plan
from reconciler.secrets.fingerprint import password_key
from reconciler.secrets.scram import MECHANISMS
from reconciler.units import counted

SecretFor = Callable[[Change, EntityRef], Secret]
_QUOTA_ENTITY = {v: k for k, v in QUOTA_TYPES.items()}  # our entity types -> ClientQuotaEntity types


class KraftApplyError(ReconcilerError):
    """The cluster refused part of a plan (validateOnly or the write itself)."""


def plaintext_password_problem(plan: Plan, cluster: ClusterSpec) -> str | None:
    """Why this plan may not send passwords over this connection, or None: IncrementalAlterConfigs carries
    them in plaintext and the controllers store them as they are (no encoder), so the admin connection must be
    TLS (SSL, SASL_SSL) unless spec.kraft.allowPlaintextPasswords says the operator accepts it."""
    kraft = cluster.kraft
    if kraft is None or kraft.allow_plaintext_passwords or kraft.admin.security_protocol in ("SSL", "SASL_SSL"):
        return None
    sent = [f"{e.ref.display} {c.key}" for e in plan.entities for c in e.changes
            if c.sensitive and c.op != "-" and c.iterations is None]
    if not sent:
        return None
    return (f"cluster {plan.cluster}: the plan sends {len(sent)} password(s) ({printable(', '.join(sent[:5]))}) over "
            f"a {kraft.admin.security_protocol} connection: KRaft stores them as sent, in plaintext on the wire; use "
            "kraft.securityProtocol SSL or SASL_SSL, or set kraft.allowPlaintextPasswords: true")


@dataclass
class Operations:
    """The plan as Admin API requests."""

    configs: list[tuple[int, str, list[tuple[str, int, str | None]]]] = field(default_factory=list)
    quotas: list[tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]] = field(default_factory=list)
    scram: list[Any] = field(default_factory=list)
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    partitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    acl_creates: list[Any] = field(default_factory=list)
    acl_deletes: list[Any] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    passwords: dict[str, dict[str, str]] = field(default_factory=dict)  # fingerprints for the audit entry


def _quota_entity(ref: EntityRef) -> list[tuple[str, str | None]]:
    def name(n: str) -> str | None:
        return None if n == DEFAULT_ENTITY else n

    entity = [(_QUOTA_ENTITY[ref.entity_type], name(ref.name))]
    if ref.client is not None:
        entity.append(("client-id", name(ref.client)))
    return entity


def operations(plan: Plan, secret_for: SecretFor | None) -> Operations:
    """`secret_for`: resolves a sensitive change's value; None (a plan-time check) leaves sensitive keys out."""
    from kafka.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion

    ops = Operations()
    for entity in plan.entities:
        ref = entity.ref
        if ref.entity_type in ("brokers", "topics"):
            name = "" if ref.name == DEFAULT_ENTITY else ref.name
            writes = [op for op in (_config_op(entity, c, secret_for, ops) for c in entity.changes) if op]
            if writes:
                ops.configs.append((BROKER if ref.entity_type == "brokers" else TOPIC, name, writes))
            continue
        quota_ops = []
        for change in entity.changes:
            if change.key in MECHANISMS:  # users/<u> SCRAM-SHA-256/512
                if change.op == "-":
                    ops.scram.append(UserScramCredentialDeletion(ref.name, change.key))
                elif secret_for is not None:
                    password = secret_for(change, ref)
                    ops.scram.append(UserScramCredentialUpsertion(ref.name, change.key, password.reveal(),
                                                                  iterations=change.iterations))
                    if change.secret is not None:
                        ops.passwords[password_key(ref, change.key)] = fingerprints(ref, change.key, change.secret,
                                                                                    password)
                continue
            value = 0.0 if change.op == "-" else float(change.after or 0)
            quota_ops.append((change.key, value, change.op == "-"))
        if quota_ops:
            ops.quotas.append((_quota_entity(ref), quota_ops))
    for t in plan.topics_to_create:
        ops.topics[t.name] = {"assignments": {p: list(r) for p, r in sorted(t.assignment.items())},
                              "configs": dict(t.config)}
    for p in plan.partition_increases:
        ops.partitions[p.name] = {"count": p.target,
                                  "assignments": [list(p.new_assignment[i]) for i in sorted(p.new_assignment)]}
    _acls(plan, ops)
    ops.deletes = [t.name for t in plan.topics_to_delete]
    return ops


def _config_op(entity: EntityPlan, change: Change, secret_for: SecretFor | None,
               ops: Operations) -> tuple[str, int, str | None] | None:
    if change.op == "-":
        return (change.key, DELETE, None)
    if not change.sensitive:
        return (change.key, SET, change.after)
    if secret_for is None:
        return None
    password = secret_for(change, entity.ref)
    if change.secret is not None:
        ops.passwords[password_key(entity.ref, change.key)] = fingerprints(entity.ref, change.key, change.secret,
                                                                           password)
    return (change.key, SET, password.reveal())


def _acls(plan: Plan, ops: Operations) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourceType,
    )

    def upper(name: str) -> str:  # SecurityUtils.operationName's inverse: IdempotentWrite -> IDEMPOTENT_WRITE
        return "".join("_" + ch if ch.isupper() and i else ch for i, ch in enumerate(name)).upper()

    for a in plan.acls:
        pattern = ResourcePattern(ResourceType[upper(a.resource.resource_type)], a.resource.name,
                                  ACLResourcePatternType[a.resource.pattern])
        for entry in a.add:
            ops.acl_creates.append(ACL(entry.principal, entry.host, ACLOperation[upper(entry.operation)],
                                       ACLPermissionType[upper(entry.permission)], pattern))
        for entry in a.remove:
            ops.acl_deletes.append(ACLFilter(entry.principal, entry.host, ACLOperation[upper(entry.operation)],
                                             ACLPermissionType[upper(entry.permission)], pattern))


def stale_changes(admin: KraftAdmin, plan: Plan) -> list[str]:
    """What changed on the cluster since `plan` was made (KRaft has no znode versions to guard writes with, so
    the values the plan saw are read again): a key set or removed meanwhile, another value, a topic created or
    grown meanwhile. Passwords only by presence (their values never come back)."""
    problems: list[str] = []
    topics = [e for e in plan.entities if e.ref.entity_type == "topics"]
    answers = admin.describe_configs(TOPIC, sorted({e.ref.name for e in topics}))
    for entity in plan.entities:
        ref = entity.ref
        if ref.entity_type == "topics":
            if ref.name not in answers:
                continue  # created by this very plan (or deleted meanwhile: CreateTopics/validateOnly says)
            live = dynamic_values(answers[ref.name], DYNAMIC_TOPIC_CONFIG)
        elif ref.entity_type == "brokers":
            name = "" if ref.name == DEFAULT_ENTITY else ref.name
            answer = admin.describe_configs(BROKER, [name], node=int(name) if name else None).get(name, [])
            live = dynamic_values(answer, DYNAMIC_DEFAULT_BROKER_CONFIG if not name else DYNAMIC_BROKER_CONFIG)
        else:
            continue
        for change in entity.changes:
            now = live.get(change.key)
            if change.op == "+" and now is not None:
                problems.append(f"{ref.display} {change.key}: set meanwhile")
            elif change.op != "+" and now is None:
                problems.append(f"{ref.display} {change.key}: removed meanwhile")
            elif change.op != "+" and not change.sensitive and now != change.before:
                problems.append(f"{ref.display} {change.key}: changed meanwhile")
    if plan.topics_to_create or plan.partition_increases:
        layouts = {str(t.get("name") if "name" in t else t.get("topic")): len(t.get("partitions") or ())
                   for t in admin.topics() if t.get("error_code", 0) == 0}
        problems += [f"topic {t.name}: created meanwhile" for t in plan.topics_to_create if t.name in layouts]
        problems += [f"topic {p.name}: has {layouts.get(p.name, 0)} partitions now, the plan saw {p.current}"
                     for p in plan.partition_increases if layouts.get(p.name) != p.current]
    return [printable(line) for line in problems]


def _said(refusals: Sequence[Refusal], what: str) -> list[str]:
    return [printable(clip(f"{what} {r.what or '<default>'}: {r.error}: {r.message}", 400)) for r in refusals]


def as_errors(lines: Sequence[str]) -> list[Diagnostic]:
    return [Diagnostic("error", line) for line in lines]


def validate(admin: KraftAdmin, ops: Operations) -> list[str]:
    """Every request Kafka validates without writing, sent with validateOnly; the refusals, each naming its
    entity and Kafka's message (which names the key)."""
    problems: list[str] = []
    for rtype, name, writes in ops.configs:
        refusal = admin.alter_configs(rtype, name, writes, validate_only=True)
        if refusal is not None:
            problems += _said([refusal], "brokers" if rtype == BROKER else "topics")
    if ops.topics:
        problems += _said(admin.create_topics(ops.topics, validate_only=True), "create topic")
    if ops.partitions:
        problems += _said(admin.create_partitions(ops.partitions, validate_only=True), "add partitions to")
    problems += _said(admin.alter_client_quotas(ops.quotas, validate_only=True), "quota entity")
    return problems


@dataclass(frozen=True)
class Written:
    entities: int
    topics_created: int
    partitions_added: int


def write(admin: KraftAdmin, plan: Plan, ops: Operations) -> Written:
    """The writes, in order; KraftApplyError at the first refusal, saying what was written before it."""
    done: list[str] = []

    def check(refusals: Sequence[Refusal], what: str, step: str) -> None:
        if refusals:
            raise KraftApplyError(f"cluster {plan.cluster}: the cluster refused {step}"
                                  + (f" (written before: {', '.join(done)})" if done else " (nothing written)"),
                                  as_errors(_said(refusals, what)))
        done.append(step)

    if ops.topics:
        check(admin.create_topics(ops.topics, validate_only=False), "create topic", f"{len(ops.topics)} topic(s)")
    if ops.partitions:
        check(admin.create_partitions(ops.partitions, validate_only=False), "add partitions to",
              f"partitions of {len(ops.partitions)} topic(s)")
    for rtype, name, writes in ops.configs:
        refusal = admin.alter_configs(rtype, name, writes, validate_only=False)
        kind = "brokers" if rtype == BROKER else "topics"
        check([refusal] if refusal else [], kind, f"{kind}/{name or DEFAULT_ENTITY}")
    if ops.quotas:
        check(admin.alter_client_quotas(ops.quotas, validate_only=False), "quota entity",
              f"quotas of {len(ops.quotas)} entit(ies)")
    if ops.scram:
        check(admin.alter_scram(ops.scram), "SCRAM credentials of", f"{len(ops.scram)} SCRAM credential(s)")
    if ops.acl_creates:
        check(admin.create_acls(ops.acl_creates), "ACL",
              f"{counted(len(ops.acl_creates), 'ACL entry', 'ACL entries')} added")
    if ops.acl_deletes:
        check(admin.delete_acls(ops.acl_deletes), "ACL",
              f"{counted(len(ops.acl_deletes), 'ACL entry', 'ACL entries')} removed")
    if ops.deletes:
        check(admin.delete_topics(ops.deletes), "delete topic", f"{len(ops.deletes)} topic(s) deleted")
    return Written(len(ops.configs) + len(ops.quotas) + len(ops.scram), len(ops.topics),
                   sum(p.target - p.current for p in plan.partition_increases))


def refuse_plaintext_passwords(plan: Plan, cluster: ClusterSpec) -> None:
    problem = plaintext_password_problem(plan, cluster)
    if problem is not None:
        raise RefusedError(problem)

