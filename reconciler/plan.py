"""The Plan: a frozen, versioned, JSON round-trippable value; the contract between `plan` and `apply`.

Apply executes exactly a plan and never re-diffs. Sensitive values never appear: a change to a password
carries only its `Redacted` state and the *reference* to resolve at apply time (env name, file path or a
sealed Kafka-encoded value), never plaintext.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from reconciler.errors import Diagnostic, clip
from reconciler.model import (
    RISK_ORDER,
    AclEntry,
    AclResource,
    ChangeOp,
    EntityRef,
    Redacted,
    RedactedState,
    Risk,
    SecretRef,
    SourceRef,
)

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Change:
    """One key of one entity: `+` set a new key, `~` change a value, `-` remove a key."""

    key: str
    op: ChangeOp
    before: str | None = None  # None for sensitive values and for `+`
    after: str | None = None  # None for sensitive values and for `-`
    sensitive: bool = False
    redacted: RedactedState | None = None  # set iff sensitive
    secret: SecretRef | None = None  # what apply resolves and encodes (sensitive `+`/`~` only)
    reencode: bool = False  # value unchanged but must be re-encoded (old secret / undecodable)
    rotation: bool = False  # re-encoded from passwordEncoder.oldSecret to the new secret (needs a flag to apply)
    # a SCRAM credential (users/<user> SCRAM-SHA-256/512): the iterations apply derives it with from the
    # resolved `secret` and a fresh salt; in JSON only when set (other plans keep their ids)
    iterations: int | None = None
    risk: Risk = "safe"
    reasons: tuple[str, ...] = ()
    source: SourceRef | None = None

    @property
    def shown_before(self) -> str | None:
        return str(Redacted(self.redacted or "unknown")) if self.sensitive and self.op != "+" else self.before

    @property
    def shown_after(self) -> str | None:
        return str(Redacted(self.redacted or "unknown")) if self.sensitive and self.op != "-" else self.after


@dataclass(frozen=True, slots=True)
class EntityPlan:
    """Changes to one `/config/<entity>` znode, guarded by the znode version read at plan time."""

    ref: EntityRef
    base_version: int | None  # None: the znode did not exist (apply creates it, failing if it appeared)
    changes: tuple[Change, ...]
    delete_entity: bool = False  # quota entity whose config becomes empty (Kafka deletes such nodes)

    @property
    def max_risk(self) -> Risk:
        # over the distinct risks (most entities have one): apply's guard asks this of 10,000s of entities
        return max({c.risk for c in self.changes}, key=RISK_ORDER.__getitem__, default="safe")


@dataclass(frozen=True, slots=True)
class TopicCreate:
    """A topic to create: config znode first, then `/brokers/topics/<name>` (as Kafka's AdminZkClient)."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str]
    assignment: Mapping[int, tuple[int, ...]]
    source: SourceRef | None = None
    # what it is created with, rated by risk/topics.py (durability: one replica, min.insync.replicas above the
    # replication factor); set by risk.annotate, written in the plan file when not safe
    risk: Risk = "safe"
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionIncrease:
    name: str
    current: int
    target: int
    base_version: int  # version of /brokers/topics/<name> read at plan time
    new_assignment: Mapping[int, tuple[int, ...]]  # only the added partitions
    source: SourceRef | None = None

    # Always disruptive, for the reason Kafka's TopicCommand (kafka-topics.sh --alter --partitions) warns
    # of: producers that key their records hash each key onto the new partition count, so a key's records
    # land on another partition from then on (per-key ordering across the change is lost).
    @property
    def risk(self) -> Risk:
        return "disruptive"

    @property
    def reasons(self) -> tuple[str, ...]:
        return (f"partition count raised from {self.current} to {self.target}: keyed producers map keys to "
                "other partitions (\"the partition logic or ordering of the messages will be affected\", "
                "kafka-topics.sh)",)


@dataclass(frozen=True, slots=True)
class TopicDelete:
    """A live topic to delete, because the cluster's `policy.deleteTopics` names it (never by default): as
    Kafka's `AdminZkClient.deleteTopic`, a `/admin/delete_topics/<name>` znode the controller acts on, guarded
    by the version of `/brokers/topics/<name>` read at plan time. Always destructive."""

    name: str
    partitions: int
    replication_factor: int
    base_version: int
    matched: str  # the policy.deleteTopics entry that names it (a name or a pattern)

    @property
    def risk(self) -> Risk:
        return "destructive"

    @property
    def reasons(self) -> tuple[str, ...]:
        return (f"topic deleted ({self.partitions} partitions × {self.replication_factor} replicas): every record "
                f"it holds is lost; policy.deleteTopics entry {self.matched!r}",)


@dataclass(frozen=True, slots=True)
class AclPlan:
    """The entries of one ACL resource pattern to add and remove. Apply writes `after` (the complete set; empty:
    the znode is deleted, as AclAuthorizer.updateResourceAcls does) guarded by the version read at plan time,
    with its change notification, in one transaction. `pruned`: declared by no manifest (policy.pruneAcls)."""

    resource: AclResource
    base_version: int | None  # None: no znode (apply creates it)
    add: tuple[AclEntry, ...]
    remove: tuple[AclEntry, ...]
    after: tuple[AclEntry, ...]
    pruned: bool = False
    source: SourceRef | None = None
    # What the entries added grant, rated by risk/acls.py's table (broad grants: `User:*`, `All`, every topic,
    # the Cluster): set by risk.annotate, written in the plan file
    grant_risk: Risk = "safe"
    grant_reasons: tuple[str, ...] = ()

    @property
    def losing(self) -> tuple[str, ...]:
        """Principals that may lose access: a removed Allow or an added Deny (Deny wins over Allow in Kafka)."""
        hit = {e.principal for e in self.remove if e.permission == "Allow"}
        hit |= {e.principal for e in self.add if e.permission == "Deny"}
        return tuple(sorted(hit))

    @property
    def risk(self) -> Risk:
        # `losing` is not empty exactly when one of these holds (asked of each of 10,000s of patterns)
        losing = (any(e.permission == "Allow" for e in self.remove)
                  or any(e.permission == "Deny" for e in self.add))
        return max("disruptive" if losing else "safe", self.grant_risk, key=RISK_ORDER.__getitem__)

    @property
    def reasons(self) -> tuple[str, ...]:
        return (*self.grant_reasons, *self.losing_reasons)

    @property
    def losing_reasons(self) -> tuple[str, ...]:
        out = []
        for e in sorted(self.remove):
            if e.permission == "Allow":
                out.append(f"{e.principal} loses {e.operation} on {self.resource.display} (Allow removed)")
        for e in sorted(self.add):
            if e.permission == "Deny":
                out.append(f"{e.principal} is denied {e.operation} on {self.resource.display} (a Deny wins over "
                           "every Allow)")
        return tuple(out)


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """One partition's replica set changed by a reassignment: from `current` (at plan time; for a move already in
    flight, where it came from) to `target` (preferred leader first), as `kafka-reassign-partitions.sh --execute`
    moves it. `size_bytes`: the partition's size on its leader (DescribeLogDirs), None when not known."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int | None = None
    reasons: tuple[str, ...] = ()  # why it moves: the replication factor, a drained broker, racks, declared replicas
    in_flight: bool = False  # already moving to `target` (an earlier apply started it): apply waits for it
    source: SourceRef | None = None

    @property
    def adding(self) -> tuple[int, ...]:
        """Brokers that receive a new replica (they copy the whole partition from its leader)."""
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class Reassignment:
    """The replica moves of a plan, run as Kafka's own tool runs them (reconciler/reassign/): throttled at
    `throttle` bytes/s on the brokers involved, at most `max_partitions` partitions (and `max_bytes` bytes) moving
    at once, the throttles removed when every move is done. `leftover`: entities (`brokers/1`, `topics/orders`)
    whose throttles an earlier reassignment of the reconciler set and did not remove yet (`started_by`: its plan
    id). Disruptive at least: replication traffic, and leaders move when a preferred leader changes."""

    moves: tuple[PartitionMove, ...] = ()
    throttle: int = 0
    max_partitions: int = 1
    max_bytes: int | None = None
    leftover: tuple[str, ...] = ()
    started_by: str | None = None
    risk: Risk = "disruptive"
    reasons: tuple[str, ...] = ()

    @property
    def pending(self) -> tuple[PartitionMove, ...]:
        """The moves apply still has to start."""
        return tuple(m for m in self.moves if not m.in_flight)


@dataclass(frozen=True, slots=True)
class PlanCounts:
    add: int
    change: int
    remove: int
    topics_created: int
    partitions_added: int
    topics_deleted: int = 0
    acl_entries: int = 0  # ACL entries added plus removed
    partitions_moved: int = 0  # partitions whose replicas a reassignment moves (or waits for)

    @property
    def total(self) -> int:
        return (self.add + self.change + self.remove + self.topics_created + self.partitions_added
                + self.topics_deleted + self.acl_entries + self.partitions_moved)


@dataclass(frozen=True, slots=True)
class Plan:
    cluster: str
    entities: tuple[EntityPlan, ...] = ()
    topics_to_create: tuple[TopicCreate, ...] = ()
    partition_increases: tuple[PartitionIncrease, ...] = ()
    topics_to_delete: tuple[TopicDelete, ...] = ()  # written to JSON only when present (older ids unchanged)
    acls: tuple[AclPlan, ...] = ()  # ACL resource patterns to change; in JSON only when present
    unmanaged_acls: tuple[str, ...] = ()  # live ACL resource patterns no manifest declares (left alone)
    unmanaged: tuple[str, ...] = ()  # entity display names present live but declared by no manifest
    ignored: int = 0  # live keys left alone because of policy.ignoreKeys / replication throttles
    warnings: tuple[str, ...] = ()
    # Warnings with their manifest line and key (validation and plan-time rules: "if you meant 7d, write
    # 604800000", "Kafka refuses it ..."): part of the plan so that every rendering of it (the PR comment, `show`)
    # says them; only warnings, since a plan with errors is never made. Written to JSON only when present, so
    # plans without them keep their ids and older plan files read unchanged.
    diagnostics: tuple[Diagnostic, ...] = ()
    # (password key, reference fingerprint, stored fingerprint) of passwords this plan verified unchanged with
    # the encoder secret: apply records them, so that a later plan without the secret can tell they are
    # untouched (secrets/fingerprint.py). Digests of non-secret values only.
    verified_passwords: tuple[tuple[str, str, str], ...] = ()
    revision: str | None = None
    created_at: str | None = None  # ISO-8601 UTC; excluded from the plan id
    kafka_version: str | None = None
    # "kraft": applied through the Admin API (no znodes, so no versions to show); in JSON only then
    backend: str = "zookeeper"
    # replica moves (replication factor, placement, drained brokers) and their throttles; in JSON only when present
    reassignment: Reassignment | None = None
    format_version: int = FORMAT_VERSION
    plan_id: str = field(default="")

    @property
    def is_empty(self) -> bool:
        return not (self.entities or self.topics_to_create or self.partition_increases or self.topics_to_delete
                    or self.acls or self.reassignment is not None)

    @property
    def counts(self) -> PlanCounts:
        ops = [c.op for e in self.entities for c in e.changes]
        return PlanCounts(
            add=ops.count("+"),
            change=ops.count("~"),
            remove=ops.count("-"),
            topics_created=len(self.topics_to_create),
            partitions_added=sum(p.target - p.current for p in self.partition_increases),
            topics_deleted=len(self.topics_to_delete),
            acl_entries=sum(len(a.add) + len(a.remove) for a in self.acls),
            partitions_moved=len(self.reassignment.moves) if self.reassignment is not None else 0,
        )

    @property
    def max_risk(self) -> Risk:
        # the distinct risks only ("safe" is the least, and the default of an entity without changes): apply's
        # guard asks this of plans of 10,000s of changes
        risks = {c.risk for e in self.entities for c in e.changes}
        risks.update(p.risk for p in self.partition_increases)
        risks.update(t.risk for t in self.topics_to_create)
        risks.update(t.risk for t in self.topics_to_delete)
        risks.update(a.risk for a in self.acls)
        if self.reassignment is not None:
            risks.add(self.reassignment.risk)
        return max(risks, key=RISK_ORDER.__getitem__, default="safe")

    def with_id(self) -> Plan:
        return replace(self, plan_id=compute_plan_id(self))


# --- JSON -----------------------------------------------------------------------------------------------


def _ref_to_json(ref: EntityRef) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ref.entity_type, "name": ref.name}
    if ref.client is not None:
        out["client"] = ref.client
    return out


def _source_to_json(src: SourceRef | None) -> list[Any] | None:
    return None if src is None else [src.file, src.line, src.column]


def _source_from_json(raw: Any) -> SourceRef | None:
    return None if raw is None else SourceRef(str(raw[0]), int(raw[1]), int(raw[2]))


def _secret_to_json(ref: SecretRef | None) -> dict[str, str] | None:
    if ref is None:
        return None
    if ref.env is not None:
        return {"env": ref.env}
    if ref.file is not None:
        return {"file": ref.file}
    return {"encoded": ref.encoded or ""}


def _assignment_to_json(a: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(a.items())}


def _assignment_from_json(raw: Mapping[str, Sequence[int]]) -> dict[int, tuple[int, ...]]:
    return {int(p): tuple(int(b) for b in r) for p, r in raw.items()}


def _change_to_json(c: Change) -> dict[str, Any]:
    return {
        "key": c.key,
        "op": c.op,
        "before": c.before,
        "after": c.after,
        "sensitive": c.sensitive,
        "redacted": c.redacted,
        "secret": _secret_to_json(c.secret),
        "reencode": c.reencode,
        **({"rotation": True} if c.rotation else {}),
        **({"iterations": c.iterations} if c.iterations is not None else {}),
        "risk": c.risk,
        "reasons": list(c.reasons),
        "source": _source_to_json(c.source),
    }


def _change_from_json(raw: Mapping[str, Any]) -> Change:
    # positional, in Change's field order, and each key looked up once: a plan file holds 10,000s of changes
    get = raw.get
    secret, iterations, source = get("secret"), get("iterations"), get("source")
    return Change(
        raw["key"], raw["op"], get("before"), get("after"), bool(get("sensitive", False)), get("redacted"),
        SecretRef(**secret) if secret else None, bool(get("reencode", False)), bool(get("rotation", False)),
        None if iterations is None else int(iterations), get("risk", "safe"), tuple(get("reasons", ())),
        None if source is None else SourceRef(str(source[0]), int(source[1]), int(source[2])),
    )


def _diagnostic_to_json(d: Diagnostic) -> dict[str, Any]:
    return {"severity": d.severity, "message": d.message, "key": d.key, "source": _source_to_json(d.source)}


def _diagnostic_from_json(raw: Mapping[str, Any]) -> Diagnostic:
    return Diagnostic(raw["severity"], raw["message"], _source_from_json(raw.get("source")), raw.get("key"))


def with_diagnostics(plan: Plan, diagnostics: Sequence[Diagnostic]) -> Plan:
    """`plan` carrying the warnings among `diagnostics` too (each once, in source order); its id recomputed
    when it had one. Errors are not kept: a plan is not made when there are any."""
    found = {*plan.diagnostics, *(d for d in diagnostics if d.severity == "warning")}
    kept = tuple(sorted(found, key=Diagnostic.sort_key))
    if kept == plan.diagnostics:
        return plan
    out = replace(plan, diagnostics=kept)
    return out.with_id() if plan.plan_id else out


def cluster_warnings(
    diagnostics: Iterable[Diagnostic], cluster_dir: str, cluster_dirs: Iterable[str]
) -> list[Diagnostic]:
    """The validation warnings that concern the cluster whose manifests are in `cluster_dir` (`clusters/c1`):
    those at its own files, and those at files of no cluster in `cluster_dirs` (fleet.yaml: shared)."""
    def under(file: str, folder: str) -> bool:
        return file.startswith(folder.rstrip("/") + "/")

    dirs = list(cluster_dirs)
    return [d for d in diagnostics if d.severity == "warning" and (
        d.source is None or under(d.source.file, cluster_dir) or not any(under(d.source.file, o) for o in dirs))]


def _acl_entries_to_json(entries: Sequence[AclEntry]) -> list[dict[str, str]]:
    return [{"principal": e.principal, "host": e.host, "operation": e.operation, "permission": e.permission}
            for e in entries]


def _acl_entries_from_json(raw: Sequence[Mapping[str, str]],
                           known: dict[tuple[str, str, str, str], AclEntry] | None = None) -> tuple[AclEntry, ...]:
    """`known`: the entries read so far, shared (they are immutable): a plan's patterns repeat the same entries in
    their `after` lists (10,000 patterns of 6 entries, a few thousand distinct)."""
    out = []
    for e in raw:
        key = (str(e["principal"]), str(e["host"]), str(e["operation"]), str(e["permission"]))
        if known is None:
            out.append(AclEntry(*key))
        elif (entry := known.get(key)) is not None:
            out.append(entry)
        else:
            out.append(known.setdefault(key, AclEntry(*key)))
    return tuple(out)


def _acl_plan_to_json(a: AclPlan) -> dict[str, Any]:
    r = a.resource
    return {"resource": {"type": r.resource_type, "pattern": r.pattern, "name": r.name},
            "baseVersion": a.base_version, "add": _acl_entries_to_json(a.add),
            "remove": _acl_entries_to_json(a.remove), "after": _acl_entries_to_json(a.after),
            "pruned": a.pruned, "source": _source_to_json(a.source),
            **({"grantRisk": a.grant_risk, "grantReasons": list(a.grant_reasons)} if a.grant_reasons else {})}


def _acl_plan_from_json(raw: Mapping[str, Any],
                        known: dict[tuple[str, str, str, str], AclEntry] | None = None) -> AclPlan:
    r = raw["resource"]
    version = raw.get("baseVersion")
    return AclPlan(AclResource(str(r["type"]), str(r["pattern"]), str(r["name"])),
                   None if version is None else int(version), _acl_entries_from_json(raw["add"], known),
                   _acl_entries_from_json(raw["remove"], known), _acl_entries_from_json(raw["after"], known),
                   bool(raw.get("pruned", False)), _source_from_json(raw.get("source")),
                   raw.get("grantRisk", "safe"), tuple(str(r) for r in raw.get("grantReasons", ())))


def _move_to_json(m: PartitionMove) -> dict[str, Any]:
    return {"topic": m.topic, "partition": m.partition, "current": list(m.current), "target": list(m.target),
            "sizeBytes": m.size_bytes, "reasons": list(m.reasons), **({"inFlight": True} if m.in_flight else {}),
            "source": _source_to_json(m.source)}


def _move_from_json(raw: Mapping[str, Any]) -> PartitionMove:
    size = raw.get("sizeBytes")
    return PartitionMove(str(raw["topic"]), int(raw["partition"]), tuple(int(b) for b in raw["current"]),
                         tuple(int(b) for b in raw["target"]), None if size is None else int(size),
                         tuple(str(r) for r in raw.get("reasons", ())), bool(raw.get("inFlight", False)),
                         _source_from_json(raw.get("source")))


def _reassignment_to_json(r: Reassignment) -> dict[str, Any]:
    return {"moves": [_move_to_json(m) for m in r.moves], "throttle": r.throttle, "maxPartitions": r.max_partitions,
            "maxBytes": r.max_bytes, "leftover": list(r.leftover), "startedBy": r.started_by, "risk": r.risk,
            "reasons": list(r.reasons)}


def _reassignment_from_json(raw: Mapping[str, Any]) -> Reassignment:
    most = raw.get("maxBytes")
    return Reassignment(tuple(_move_from_json(m) for m in raw.get("moves", ())), int(raw["throttle"]),
                        int(raw["maxPartitions"]), None if most is None else int(most),
                        tuple(str(e) for e in raw.get("leftover", ())),
                        None if raw.get("startedBy") is None else str(raw["startedBy"]),
                        raw.get("risk", "disruptive"), tuple(str(r) for r in raw.get("reasons", ())))


def plan_to_dict(plan: Plan, *, include_id: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "formatVersion": plan.format_version,
        "cluster": plan.cluster,
        "kafkaVersion": plan.kafka_version,
        **({"backend": plan.backend} if plan.backend != "zookeeper" else {}),
        "revision": plan.revision,
        "createdAt": plan.created_at,
        "entities": [
            {
                "entity": _ref_to_json(e.ref),
                "path": e.ref.path,
                "baseVersion": e.base_version,
                "deleteEntity": e.delete_entity,
                "changes": [_change_to_json(c) for c in e.changes],
            }
            for e in plan.entities
        ],
        "topicsToCreate": [
            {
                "name": t.name,
                "partitions": t.partitions,
                "replicationFactor": t.replication_factor,
                "config": dict(sorted(t.config.items())),
                "assignment": _assignment_to_json(t.assignment),
                "source": _source_to_json(t.source),
                **({"risk": t.risk, "reasons": list(t.reasons)} if t.risk != "safe" else {}),
            }
            for t in plan.topics_to_create
        ],
        "partitionIncreases": [
            {
                "name": p.name,
                "current": p.current,
                "target": p.target,
                "baseVersion": p.base_version,
                "newAssignment": _assignment_to_json(p.new_assignment),
                "source": _source_to_json(p.source),
            }
            for p in plan.partition_increases
        ],
        **({"topicsToDelete": [
            {"name": t.name, "partitions": t.partitions, "replicationFactor": t.replication_factor,
             "baseVersion": t.base_version, "matched": t.matched}
            for t in plan.topics_to_delete]} if plan.topics_to_delete else {}),
        **({"acls": [_acl_plan_to_json(a) for a in plan.acls]} if plan.acls else {}),
        **({"unmanagedAcls": list(plan.unmanaged_acls)} if plan.unmanaged_acls else {}),
        "unmanaged": list(plan.unmanaged),
        "ignored": plan.ignored,
        "warnings": list(plan.warnings),
        **({"diagnostics": [_diagnostic_to_json(d) for d in plan.diagnostics]} if plan.diagnostics else {}),
        **({"verifiedPasswords": [list(v) for v in plan.verified_passwords]} if plan.verified_passwords else {}),
        **({"reassignment": _reassignment_to_json(plan.reassignment)} if plan.reassignment is not None else {}),
    }
    if include_id:
        out["planId"] = plan.plan_id
    return out


def _entity_from_json(raw: Mapping[str, Any]) -> EntityPlan:
    ref = raw["entity"]
    return EntityPlan(EntityRef(ref["type"], ref["name"], ref.get("client")), raw.get("baseVersion"),
                      tuple([_change_from_json(c) for c in raw["changes"]]), bool(raw.get("deleteEntity", False)))


def plan_from_dict(raw: Mapping[str, Any]) -> Plan:
    version = raw.get("formatVersion")
    if version != FORMAT_VERSION:
        raise ValueError(f"unsupported plan format version {version!r} (this reconciler reads {FORMAT_VERSION})")
    known: dict[tuple[str, str, str, str], AclEntry] = {}  # ACL entries, each distinct one built once
    return Plan(
        format_version=FORMAT_VERSION,
        plan_id=raw.get("planId", ""),
        cluster=raw["cluster"],
        kafka_version=raw.get("kafkaVersion"),
        backend=str(raw.get("backend", "zookeeper")),
        revision=raw.get("revision"),
        created_at=raw.get("createdAt"),
        entities=tuple(_entity_from_json(e) for e in raw.get("entities", ())),
        topics_to_create=tuple(
            TopicCreate(
                name=t["name"],
                partitions=int(t["partitions"]),
                replication_factor=int(t["replicationFactor"]),
                config=dict(t.get("config", {})),
                assignment=_assignment_from_json(t["assignment"]),
                source=_source_from_json(t.get("source")),
                risk=t.get("risk", "safe"),
                reasons=tuple(str(r) for r in t.get("reasons", ())),
            )
            for t in raw.get("topicsToCreate", ())
        ),
        partition_increases=tuple(
            PartitionIncrease(
                name=p["name"],
                current=int(p["current"]),
                target=int(p["target"]),
                base_version=int(p["baseVersion"]),
                new_assignment=_assignment_from_json(p["newAssignment"]),
                source=_source_from_json(p.get("source")),
            )
            for p in raw.get("partitionIncreases", ())
        ),
        topics_to_delete=tuple(
            TopicDelete(name=t["name"], partitions=int(t["partitions"]), replication_factor=int(t["replicationFactor"]),
                        base_version=int(t["baseVersion"]), matched=str(t["matched"]))
            for t in raw.get("topicsToDelete", ())
        ),
        acls=tuple(_acl_plan_from_json(a, known) for a in raw.get("acls", ())),
        unmanaged_acls=tuple(str(a) for a in raw.get("unmanagedAcls", ())),
        unmanaged=tuple(raw.get("unmanaged", ())),
        ignored=int(raw.get("ignored", 0)),
        warnings=tuple(raw.get("warnings", ())),
        diagnostics=tuple(_diagnostic_from_json(d) for d in raw.get("diagnostics", ())),
        verified_passwords=tuple((str(k), str(r), str(st)) for k, r, st in raw.get("verifiedPasswords", ())),
        reassignment=_reassignment_from_json(raw["reassignment"]) if raw.get("reassignment") is not None else None,
    )


def compute_plan_id(plan: Plan) -> str:
    """Hash of the canonical content (creation time and the id itself excluded): same plan, same id."""
    return _content_id(plan_to_dict(plan, include_id=False))


def _content_id(body: Mapping[str, Any]) -> str:
    """The id of a plan's JSON object: sorted, compact JSON without `planId` and `createdAt`, hashed."""
    content = {k: v for k, v in body.items() if k not in ("planId", "createdAt")}
    return hashlib.sha256(canonical_json(content)).hexdigest()[:16]


def canonical_json(content: Any) -> bytes:
    """`json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` in UTF-8, made by
    orjson (8x faster: a 10,000-entity plan in ~0.01 s). The bytes are the same for what a plan holds
    (strings, 64-bit integers, booleans, null; no floats): tests/unit/test_plan_id.py compares them. What
    orjson refuses (an integer beyond 64 bits, a lone surrogate, read from a hand-edited file) goes to json."""
    try:
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def plan_to_json(plan: Plan) -> str:
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False) + "\n"


def plan_from_json(text: str) -> Plan:
    return plan_from_dict(json.loads(text))


def plans_from_json(text: str | bytes, parsed: Any = None) -> list[Plan]:
    """Read a plan file (the JSON renderer's output: {"formatVersion", "plans": [...]}, or one plan); `parsed`:
    `text` already parsed (and checked against the plan-file schema: `manifests.planfile.read_plans`).

    Every plan's id is recomputed: an accidental or careless edit is refused rather than applied. The id is an
    unkeyed hash, not a signature: whoever can write the file can recompute it. What apply resolves is
    therefore never taken from the file alone: every secret reference must be the one the manifests name
    for that key at apply time (`secrets.check.unnamed_secrets`).
    """
    raw = json.loads(text) if parsed is None else parsed
    items = raw.get("plans", [raw]) if isinstance(raw, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError("not a plan file: expected an object with a 'plans' list of plans")
    plans: list[Plan] = []
    for item in items:
        plan = plan_from_dict(item)
        # The file's own JSON is what `plan --out` hashed, so it is checked first (a third of the cost of
        # rebuilding the canonical form); the canonical form still accepts a file whose JSON is laid out
        # differently (an optional field written out, numbers as 3.0) but means the same plan. The id is an
        # integrity check against accidental edits, not a signature: either way the content decides what is
        # applied, and apply checks its secret references against the manifests.
        if plan.plan_id != _content_id(item) and plan.plan_id != compute_plan_id(plan):
            raise ValueError(
                f"plan for cluster {clip(plan.cluster)} does not match its id {clip(plan.plan_id, 64)!r}: the file "
                "was edited after planning; run `reconciler plan` again"
            )
        plans.append(plan)
    return plans
