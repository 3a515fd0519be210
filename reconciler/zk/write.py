"""Apply a Plan to ZooKeeper exactly as Kafka's own tooling writes it (ground truth §1, SPEC §6).

KRaft guard -> cluster lock -> pipelined pre-read of every planned znode (a stale version is reported
before anything is written; passwords are encoded here) -> missing parents created empty, like Kafka's
createRecursive -> byte-bounded multis (`txn.py`): each entity's write and its change notification in the
same multi, every write version-checked, with `check(/controller)` like Kafka's own guard -> audit entry.
Apply executes the plan's changes on the live config read back; it never re-diffs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import InvalidACLError, NoAuthError, NodeExistsError

from reconciler.errors import ConflictError, ReconcilerError, SecretError
from reconciler.model import EntityRef, Secret, sanitize
from reconciler.passwords import EncoderParams, encode
from reconciler.plan import Change, EntityPlan, PartitionIncrease, Plan
from reconciler.zk import txn
from reconciler.zk.audit import AuditInfo, audit_record, write_audit
from reconciler.zk.layout import (
    CONTROLLER_PATH,
    NOTIFICATION_PREFIX,
    decode_entity_config,
    decode_topic_assignment,
    default_acls,
    encode_entity_config,
    encode_notification,
    encode_topic_assignment,
    entity_path,
    topic_path,
)
from reconciler.zk.lock import cluster_lock, lock_identifier, refuse_kraft, where
from reconciler.zk.session import kazoo_acls
from reconciler.zk.txn import Group, Op

__all__ = ["ApplyOptions", "ApplyResult", "AuditInfo", "SecretResolver", "apply_plan"]

log = logging.getLogger(__name__)

SecretResolver = Callable[[Change, EntityRef], Secret]
EncoderLookup = Callable[[EntityRef], EncoderParams | None]
READ_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class ApplyOptions:
    max_batch_bytes: int = 512 * 1024  # bounded multi-transactions (jute.maxbuffer is 1 MiB by default)
    lock_timeout_s: float = 10.0
    secure_acls: bool = False  # Kafka's ZkData.defaultAcls(isSecure=True) for every node created
    reconciler_path: str = "/reconciler"  # lock + audit live here (inside the chroot)

    def __post_init__(self) -> None:
        if self.max_batch_bytes < 1024:
            raise ValueError(f"max_batch_bytes must be at least 1024, not {self.max_batch_bytes}")
        if not self.reconciler_path.startswith("/") or not self.reconciler_path.strip("/"):
            raise ValueError(f"reconciler_path must be an absolute znode path, not {self.reconciler_path!r}")


@dataclass(frozen=True, slots=True)
class ApplyResult:
    entities_written: int
    notifications: int
    topics_created: int
    partitions_added: int
    batches: int
    audit_path: str | None


@dataclass(slots=True)
class _Done:
    """What the committed batches wrote (for the result and the audit entry)."""

    entities: int = 0
    notifications: int = 0
    topics: int = 0
    partitions: int = 0
    batches: int = 0

    def add(self, batch: Iterable[Group]) -> None:
        for group in batch:
            self.entities += group.entities
            self.notifications += group.notifications
            self.topics += group.topics
            self.partitions += group.partitions
        self.batches += 1


class _Acls:
    """kazoo ACL lists per path, as Kafka's `ZkData.defaultAcls` sets them (three distinct lists, cached)."""

    def __init__(self, secure: bool) -> None:
        self.secure = secure
        self._cache: dict[tuple[Any, ...], list[Any]] = {}

    def __call__(self, path: str) -> list[Any]:
        entries = default_acls(self.secure, path)
        if entries not in self._cache:
            self._cache[entries] = kazoo_acls(entries)
        return self._cache[entries]


def apply_plan(
    client: KazooClient,
    plan: Plan,
    *,
    encoder_for: EncoderLookup,
    resolve_secret: SecretResolver,
    audit: AuditInfo,
    options: ApplyOptions = ApplyOptions(),  # frozen: a shared default is safe
    audit_log: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ApplyResult:
    """Execute exactly `plan`. An empty plan writes nothing (no lock, no notification, no audit entry).

    Raises RefusedError (KRaft controller), ConflictError (exit 3: lock held, or a znode changed since the
    plan; nothing of the failing batch is written), SecretError, LiveStateError, ZooKeeperError.
    `progress(done, total)` is called after each batch, counting entities/topics.
    """
    if plan.is_empty:
        return ApplyResult(0, 0, 0, 0, 0, None)
    version = refuse_kraft(client, plan.cluster)  # of /controller
    acls = _Acls(options.secure_acls)
    root = "/" + options.reconciler_path.strip("/")
    ensure_paths(client, [root, f"{root}/lock"], acls)
    done = _Done()
    with cluster_lock(client, f"{root}/lock", lock_identifier(audit.user, plan.plan_id),
                      options.lock_timeout_s, plan.cluster):
        try:
            builder = _Builder(client, plan, acls, encoder_for, resolve_secret)
            groups = builder.build(txn.read_all(client, builder.paths(), READ_TIMEOUT_S))
            ensure_paths(client, _missing_parents(groups), acls)
            # Kafka's KAFKA-16539 guard: the write fails if the controller changed (e.g. a KRaft migration)
            prefix = [] if version is None else [Op("check", CONTROLLER_PATH, version=version)]
            budget = options.max_batch_bytes - txn.size(prefix, client) - txn.MULTI_END
            batches = txn.pack(groups, budget, client)
            for number, batch in enumerate(batches, 1):
                txn.commit(client, [*prefix, *(op for g in batch for op in g.ops)], number, len(batches))
                done.add(batch)
                if progress is not None:
                    progress(sum(len(b) for b in batches[:number]), len(groups))
        except BaseException as exc:
            _audit_failure(client, root, audit, plan, done, exc, acls, audit_log)
            raise
        record = audit_record(audit, _counts(plan, done), "applied")
        path = write_audit(client, root, record, acls, audit_log)
    return ApplyResult(done.entities, done.notifications, done.topics, done.partitions, done.batches, path)


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _missing_parents(groups: Sequence[Group]) -> list[str]:
    """Ancestors of every created node that the transactions do not create themselves."""
    created = {op.path for g in groups for op in g.ops if op.kind == "create" and not op.sequential}
    needed = {a for g in groups for op in g.ops if op.kind == "create" for a in _ancestors(op.path)}
    return sorted(needed - created)


def ensure_paths(client: KazooClient, paths: Iterable[str], acl_for: Callable[[str], list[Any]]) -> None:
    """Create those of `paths` that are missing, with empty data and Kafka's ACL for each.

    `paths` must list ancestors too. Existence is checked first (creating an existing node needs CREATE on
    its parent under secure ACLs); creates are pipelined parent-first, as one session's requests are
    processed in order.
    """
    wanted = sorted(set(paths), key=lambda p: (p.count("/"), p))
    exists = txn.read_all(client, wanted, READ_TIMEOUT_S, exists=True)
    pending = [(p, client.create_async(p, b"", acl_for(p))) for p in wanted if exists[p] is None]
    for path, result in pending:
        try:
            result.get(timeout=READ_TIMEOUT_S)
        except NodeExistsError:
            pass  # created concurrently; it is only a parent
        except (NoAuthError, InvalidACLError) as exc:
            raise txn.auth_error(client, path, exc, "nothing was written") from None


class _Builder:
    """Turns the plan and the znodes read back into transaction groups; refuses a stale plan."""

    def __init__(
        self,
        client: KazooClient,
        plan: Plan,
        acls: _Acls,
        encoder_for: EncoderLookup,
        resolve: SecretResolver,
    ) -> None:
        self.client, self.plan, self.acls = client, plan, acls
        self.encoder_for, self.resolve = encoder_for, resolve

    def paths(self) -> list[str]:
        out = [entity_path(e.ref) for e in self.plan.entities]
        for t in self.plan.topics_to_create:
            out += [entity_path(EntityRef("topics", t.name)), topic_path(t.name)]
        return out + [topic_path(p.name) for p in self.plan.partition_increases]

    def build(self, current: Mapping[str, Any]) -> list[Group]:
        self._refuse_stale(current)
        groups: list[Group] = []
        for t in self.plan.topics_to_create:  # config first, then the assignment; no notification (Kafka)
            cfg, asg = entity_path(EntityRef("topics", t.name)), topic_path(t.name)
            ops = [Op("create", cfg, encode_entity_config(t.config), acl=self.acls(cfg)),
                   Op("create", asg, encode_topic_assignment(t.assignment), acl=self.acls(asg))]
            groups.append(Group(f"topics/{t.name}", ops, topics=1))
        groups += [self._partitions(p, current[topic_path(p.name)]) for p in self.plan.partition_increases]
        families: dict[tuple[str, str, str], list[EntityPlan]] = {}
        for e in self.plan.entities:  # users/<u> with its users/<u>/clients/<c>: one unit
            client_part = "" if e.ref.entity_type == "users" else e.ref.client or ""
            families.setdefault((e.ref.entity_type, e.ref.name, client_part), []).append(e)
        return groups + [self._family(members, current) for members in families.values()]

    def _refuse_stale(self, current: Mapping[str, Any]) -> None:
        stale: list[str] = []
        versions = [(entity_path(e.ref), e.base_version) for e in self.plan.entities]
        versions += [(topic_path(p.name), p.base_version) for p in self.plan.partition_increases]
        for path, base in versions:
            item = current[path]
            now = None if item is None else item[1].version
            if now != base:
                name = where(self.client, path)
                stale.append(f"{name} changed since the plan (version {_v(base)}, now {_v(now)})")
        for t in self.plan.topics_to_create:
            cfg, asg = entity_path(EntityRef("topics", t.name)), topic_path(t.name)
            if current[asg] is not None:
                stale.append(f"topic {t.name} was created since the plan ({where(self.client, asg)} exists)")
            elif current[cfg] is not None:
                stale.append(
                    f"{where(self.client, cfg)} exists without {where(self.client, asg)} (left over from a "
                    "deleted topic?); check it, delete it if it is stale"
                )
        if stale:
            more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
            raise ConflictError(
                f"stale plan: {stale[0]}{more}; nothing was written; run `reconciler plan` again"
            )

    def _partitions(self, p: PartitionIncrease, item: tuple[bytes, Any]) -> Group:
        """The live assignment plus the new partitions; all else (topic_id, reassignments) kept as is."""
        path = topic_path(p.name)
        decode_topic_assignment(p.name, item[0], where(self.client, path), item[1].version)  # validates
        obj = json.loads(item[0])
        for partition, replicas in sorted(p.new_assignment.items()):
            if str(partition) in obj["partitions"]:
                raise ReconcilerError(f"malformed plan: topic {p.name} already has partition {partition}")
            obj["partitions"][str(partition)] = list(replicas)
        data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return Group(f"topics/{p.name}", [Op("set", path, data, version=p.base_version)],
                     partitions=p.target - p.current)

    def _family(self, members: list[EntityPlan], current: Mapping[str, Any]) -> Group:
        parent = next((e for e in members if e.ref.client is None), None)
        children = [e for e in members if e is not parent]
        group = Group(members[0].ref.display)
        if parent is not None and parent.delete_entity:  # children first, so the parent can go
            deleted = {sanitize(c.ref.client or "") for c in children if c.delete_entity}
            for child in children:
                self._entity(group, child, current)
            self._entity(group, parent, current, deleted)
            return group
        if parent is not None:
            self._entity(group, parent, current)
            if parent.base_version is None and any(c.base_version is None for c in children):
                container = entity_path(parent.ref) + "/clients"  # inside the multi: its parent is new
                group.ops.append(Op("create", container, acl=self.acls(container)))
        for child in children:
            self._entity(group, child, current)
        return group

    def _entity(
        self, group: Group, e: EntityPlan, current: Mapping[str, Any], deleted_clients: set[str] | None = None
    ) -> None:
        path = entity_path(e.ref)
        item = current[path]
        live = decode_entity_config(item[0], where(self.client, path)) if item is not None else {}
        config = self._changed(e, live)
        if e.delete_entity:
            if item is None or e.base_version is None:
                raise ReconcilerError(f"malformed plan: it deletes {e.ref.display}, which did not exist")
            if item[1].numChildren == 0:
                group.ops.append(Op("delete", path, version=e.base_version))
            elif self._only_deleted_clients(path, deleted_clients):
                group.ops += [Op("delete", path + "/clients"), Op("delete", path, version=e.base_version)]
            else:  # Kafka keeps a quota node that has children and writes its empty config
                group.ops.append(Op("set", path, encode_entity_config(config), version=e.base_version))
        elif e.base_version is None:
            group.ops.append(Op("create", path, encode_entity_config(config), acl=self.acls(path)))
        else:
            group.ops.append(Op("set", path, encode_entity_config(config), version=e.base_version))
        notification = encode_notification(e.ref)
        group.ops.append(Op("create", NOTIFICATION_PREFIX, notification, acl=self.acls(NOTIFICATION_PREFIX),
                            sequential=True))
        group.entities += 1
        group.notifications += 1

    def _only_deleted_clients(self, path: str, deleted: set[str] | None) -> bool:
        """Is the only child the `clients` container, holding only clients this multi deletes?"""
        if deleted is None or self.client.get_children(path) != ["clients"]:
            return False
        return set(self.client.get_children(path + "/clients")) <= deleted

    def _changed(self, e: EntityPlan, live: Mapping[str, str]) -> dict[str, str]:
        """The live config with exactly the plan's changes; every other key is kept as stored."""
        config = dict(live)
        for change in e.changes:
            if change.op == "-":
                config.pop(change.key, None)
            elif change.sensitive:
                config[change.key] = self._encode(change, e.ref)
            elif change.after is None:
                raise ReconcilerError(f"malformed plan: {e.ref.display} {change.key}: no value to set")
            else:
                config[change.key] = change.after
        return config

    def _encode(self, change: Change, ref: EntityRef) -> str:
        params = self.encoder_for(ref)
        if params is None:
            raise SecretError(
                f"{change.key} of {ref.display}: no password encoder secret for this cluster; set "
                "passwordEncoder (the brokers' password.encoder.secret) in the cluster manifest"
            )
        return encode(self.resolve(change, ref), params)


def _v(version: int | None) -> str:
    return "absent" if version is None else str(version)


def _counts(plan: Plan, done: _Done) -> dict[str, int]:
    counts = plan.counts
    return {
        "add": counts.add, "change": counts.change, "remove": counts.remove,
        "topicsCreated": done.topics, "partitionsAdded": done.partitions,
        "entitiesWritten": done.entities, "notifications": done.notifications,
        "batches": done.batches,
    }


def _audit_failure(
    client: KazooClient, root: str, audit: AuditInfo, plan: Plan, done: _Done, exc: BaseException,
    acls: _Acls, audit_log: Path | None,
) -> None:
    """Record what a failed apply committed; only the error's class (a message might quote anything)."""
    try:
        record = audit_record(audit, _counts(plan, done), f"failed: {type(exc).__name__}")
        write_audit(client, root, record, acls, audit_log)
    except Exception as audit_exc:  # never hide the original error
        log.warning("could not record the failed apply in the audit trail: %r", audit_exc)
