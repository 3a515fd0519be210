"""Apply a Plan to ZooKeeper exactly as Kafka's own tooling writes it (ground truth §1, SPEC §6).

KRaft guard -> cluster lock -> bulk pre-read of every planned znode (`bulkread.py`; a stale version is
reported before anything is written; passwords are encoded here) -> missing parents created empty, like
Kafka's createRecursive -> byte-bounded multis (`txn.py`): each entity's write and its change notification
in the same multi, every write version-checked, with `check(/controller)` like Kafka's own guard and a
`check` of the lock's ephemeral node (an expired session writes nothing more) -> audit.
Apply executes the plan's changes on the live config read back; it never re-diffs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from reconciler.backend import ApplyResult
from reconciler.errors import (
    ApplyInterrupted,
    ConflictError,
    Interrupted,
    ReconcilerError,
    RefusedError,
    SecretError,
    clip,
    interrupts_deferred,
)
from reconciler.holder import claim
from reconciler.model import EntityRef, Secret, sanitize
from reconciler.plan import Change, EntityPlan, PartitionIncrease, Plan
from reconciler.rules.cluster import kafka_namespace_problem
from reconciler.secrets import scram
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.secrets.fingerprint import password_key, reference_fingerprint, stored_fingerprint
from reconciler.zk import txn
from reconciler.zk.aclmode import refuse_downgrade
from reconciler.zk.aclwrite import acl_groups
from reconciler.zk.audit import (
    AUDIT_NODE,
    FIRST_UNITS,
    AuditInfo,
    Interruption,
    Written,
    access_changes,
    audit_record,
    counts,
    record_failure,
    write_audit,
)
from reconciler.zk.bulkread import read_all
from reconciler.zk.layout import (
    CONTROLLER_PATH,
    DELETE_TOPICS_PATH,
    NOTIFICATION_PREFIX,
    decode_entity_config,
    decode_topic_assignment,
    encode_entity_config,
    encode_topic_assignment,
    entity_path,
    notification_for,
    topic_path,
)
from reconciler.zk.lock import Notify, cluster_lock, default_lock_wait, refuse_kraft
from reconciler.zk.pipeline import Pipeline, lock_op
from reconciler.zk.session import ZooKeeperError, where
from reconciler.zk.txn import Group, Op

__all__ = ["ApplyOptions", "ApplyResult", "AuditInfo", "SecretResolver", "apply_plan"]

log = logging.getLogger(__name__)

SecretResolver = Callable[[Change, EntityRef], Secret]
EncoderLookup = Callable[[EntityRef], EncoderParams | None]


@dataclass(frozen=True, slots=True)
class ApplyOptions:
    # Bounded multi-transactions. Not jute.maxbuffer (1 MiB) but ZooKeeper's heap is the bound: every server
    # keeps its last 500 committed proposals in memory (ZKDatabase.committedLog; zookeeper.commitLogCount
    # cannot go lower), ~3x their request size. With Kafka's default 512 MB heap, 500 multis of 64 KiB left
    # ~140 MiB live; of 128 KiB ~230 MiB; of 512 KiB the server stopped answering after 228 (full GCs,
    # sessions expired) (bench/zk_heap.py). A busy cluster's own small writes evict them; a quiet one's do not.
    max_batch_bytes: int = 64 * 1024
    lock_timeout_s: float = default_lock_wait(30.0)  # for ZooKeeper's default session timeout
    secure_acls: bool = False  # Kafka's ZkData.defaultAcls(isSecure=True) for every node created
    reconciler_path: str = "/reconciler"  # lock + audit live here (inside the chroot)

    def __post_init__(self) -> None:
        if self.max_batch_bytes < 1024:
            raise ValueError(f"max_batch_bytes must be at least 1024, not {self.max_batch_bytes}")
        problem = kafka_namespace_problem(self.reconciler_path)  # also refused by validation, with its line
        if problem is not None:
            raise ReconcilerError(problem)


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
    notify: Notify | None = None,
    stop: Callable[[], bool] | None = None,
) -> ApplyResult:
    """Execute exactly `plan`. An empty plan writes nothing (no lock, no notification, no audit entry).

    `stop()` is asked before each batch: when true, the apply ends there (ApplyInterrupted, audited as
    "interrupted" with what was and was not committed). The command line passes its signal flag; while the
    batches are written its first signal only sets it (`errors.interrupts_deferred`).

    Raises RefusedError (KRaft controller), ConflictError (exit 3: lock held, or a znode changed since the
    plan; nothing of the failing batch is written), SecretError, LiveStateError, ZooKeeperError.
    `progress(done, total)` is called after each batch, counting entities/topics; `notify(line)` when the
    apply waits for the lock or takes over a dead apply's lock.
    """
    if plan.is_empty:
        return ApplyResult(0, 0, 0, 0, 0, None)
    done = Written()
    try:
        path = _apply(client, plan, encoder_for, resolve_secret, audit, options, audit_log, progress, done,
                      notify, stop)
    except (KazooException, KazooTimeoutError) as exc:  # whatever txn/lock did not already explain
        raise ZooKeeperError(
            f"cluster {plan.cluster}: ZooKeeper failed during apply ({type(exc).__name__}) after "
            f"{done.batches} committed batch(es); run `reconciler plan` to see what is left to do"
        ) from exc
    return ApplyResult(done.entities, done.notifications, done.topics, done.partitions, done.batches, path)


def refuse_missing_chroot(client: KazooClient, cluster: str) -> None:
    """A chroot that does not exist: no broker ever started with this zookeeper.connect (a broker creates its
    chroot, `KafkaZkClient.createChrootIfNecessary`), or the connect string misses the brokers' chroot. Named
    here, rather than surfacing as a bare NoNodeError from the first create."""
    chroot = client.chroot or ""
    if not chroot:
        return
    if client.exists("/") is None:  # under a chroot, "/" is the chroot itself
        raise RefusedError(f"cluster {cluster}: the chroot {chroot} does not exist in ZooKeeper, so no broker has "
                           "started with this zookeeper.connect (a broker creates it); check the connect string "
                           "against the brokers' server.properties, or start the brokers first")


def _apply(
    client: KazooClient,
    plan: Plan,
    encoder_for: EncoderLookup,
    resolve_secret: SecretResolver,
    audit: AuditInfo,
    options: ApplyOptions,
    audit_log: Path | None,
    progress: Callable[[int, int], None] | None,
    done: Written,
    notify: Notify | None = None,
    stop: Callable[[], bool] | None = None,
) -> str:
    refuse_missing_chroot(client, plan.cluster)
    version = refuse_kraft(client, plan.cluster)  # of /controller
    refuse_downgrade(client, plan.cluster, options.secure_acls)  # never open znodes in a secured cluster
    acls = txn.Acls(options.secure_acls)
    root = "/" + options.reconciler_path.strip("/")
    # the lock's parent and the audit trail's, checked in the same pipelined round (write_audit would
    # otherwise create the latter on the first apply, after a failed create)
    txn.ensure_paths(client, [*txn.ancestors(f"{root}/lock/-"), f"{root}/{AUDIT_NODE}"], acls)
    holder = claim(audit.user, plan.plan_id, audit.time)
    with cluster_lock(client, f"{root}/lock", holder, options.lock_timeout_s, plan.cluster, notify) as lock:
        lock_node = lock.node
        if lock.taken_over:  # recorded in this apply's audit entry, whatever its outcome
            audit = replace(audit, lock_takeovers=lock.taken_over)
        try:
            builder = _Builder(client, plan, acls, encoder_for, resolve_secret)
            groups = builder.build(read_all(client, builder.paths(), txn.READ_TIMEOUT_S))
            txn.ensure_paths(client, txn.missing_parents(groups), acls)
            # Kafka's KAFKA-16539 guard: the write fails if the controller changed (e.g. a KRaft migration);
            # and the lock node's link (`pipeline.lock_op`): no batch commits without the lock (its session
            # expired), nor after a batch that did not commit
            check = [] if version is None else [Op("check", CONTROLLER_PATH, version=version)]
            prefix = _Prefix(check, lock_node, holder)
            budget = options.max_batch_bytes - txn.size(prefix(1), client) - txn.MULTI_END
            batches = txn.pack(groups, budget, client)
        except (KeyboardInterrupt, Interrupted) as exc:  # before any batch: nothing of the plan was written
            report = _interrupted(client, root, audit, plan, done, acls, audit_log, [], (), exc)
            if isinstance(exc, Interrupted):  # a stop request at a safe point (reconcile skips the cluster)
                raise Interrupted(report.message) from None
            raise report from None
        except BaseException as exc:
            record_failure(client, root, audit, plan, done, exc, acls, audit_log)
            raise
        # the first SIGINT/SIGTERM now only asks to stop (`stop`): a batch's reply is always awaited, so what is
        # reported and audited is what ZooKeeper holds; a second signal ends the wait (KeyboardInterrupt)
        with interrupts_deferred():
            try:
                _commit_batches(client, prefix, batches, done, stop, progress, len(groups))
            except _Stopped as stopped:
                raise _interrupted(client, root, audit, plan, done, acls, audit_log, batches, stopped.in_flight,
                                   stopped.signal, stopped.deadline) from None
            except BaseException as exc:
                record_failure(client, root, audit, plan, done, exc, acls, audit_log)
                raise
            record = audit_record(audit, counts(plan, done), "applied", passwords=builder.fingerprints,
                                  access=access_changes(plan))
            return write_audit(client, root, record, acls, audit_log)


class _Prefix:
    """The ops every batch starts with: the controller's check and the batch's link in the lock chain."""

    def __init__(self, check: Sequence[Op], lock_node: str, claim: bytes) -> None:
        self.check, self.lock_node, self.claim = list(check), lock_node, claim

    def __call__(self, number: int) -> list[Op]:
        return [*self.check, lock_op(self.lock_node, self.claim, number)]


class _Stopped(Exception):
    """The batches stopped on a signal: between two (`in_flight` empty), or during some (a second signal, which
    gives ZooKeeper until `deadline`, time.monotonic(), to say what committed and take the audit entry)."""

    def __init__(self, in_flight: Sequence[Sequence[Group]], signal: BaseException | None,
                 deadline: float | None = None) -> None:
        super().__init__("stopped")
        self.in_flight, self.signal, self.deadline = in_flight, signal, deadline


def _commit_batches(
    client: KazooClient, prefix: _Prefix, batches: Sequence[Sequence[Group]], done: Written,
    stop: Callable[[], bool] | None, progress: Callable[[int, int], None] | None, units: int,
) -> None:
    """Commit the batches in order, up to `pipeline.WINDOW` on their way at once, counting each into `done`
    once ZooKeeper says it committed; `stop()` is asked before each is sent. On a stop, the batches already
    sent are awaited; on a second signal (KeyboardInterrupt) they are handed to `_interrupted` to settle."""
    pipe = Pipeline(client, prefix.lock_node, len(batches))
    sent, stopping = 0, False
    try:
        while done.batches < sent or (sent < len(batches) and not stopping):
            while sent < len(batches) and not stopping and pipe.room():
                if stop is not None and stop():
                    stopping = True
                    break
                # serialized as it is sent, while the batches before it are on their way (~0.6 ms a 64 KiB
                # batch; on a worker thread it cost more, in the GIL's hand-offs with kazoo's connection thread)
                pipe.submit(sent + 1, [*prefix(sent + 1), *(op for g in batches[sent] for op in g.ops)])
                sent += 1
            if done.batches == sent:
                break
            for _ in range(pipe.wait()):
                done.add(batches[done.batches])
            if progress is not None:
                progress(done.units, units)
    except KeyboardInterrupt as exc:  # a second signal while batches were on their way
        deadline = time.monotonic() + SIGNAL_AUDIT_TIMEOUT_S
        raise _Stopped(_settle(pipe, batches, done, deadline), exc, deadline) from None
    if stopping:
        raise _Stopped((), None)


def _settle(
    pipe: Pipeline, batches: Sequence[Sequence[Group]], done: Written, deadline: float
) -> Sequence[Sequence[Group]]:
    """After a second signal: the lock node's version, asked within the same bounded wait as the audit entry,
    says which of the batches in flight committed (counted into `done`); those it cannot tell about are
    returned."""
    numbers = pipe.numbers()
    if not numbers:
        return ()
    committed = pipe.settle(max(deadline - time.monotonic(), 0.0))
    if committed is None:
        return batches[numbers[0] - 1:numbers[-1]]
    for _ in range(committed):
        done.add(batches[done.batches])
    return ()


# after a signal that ends the apply at once, ZooKeeper's time to say what committed and take the audit entry
SIGNAL_AUDIT_TIMEOUT_S = 5.0


def _interrupted(
    client: KazooClient, root: str, audit: AuditInfo, plan: Plan, done: Written, acls: txn.Acls,
    audit_log: Path | None, batches: Sequence[Sequence[Group]], in_flight: Sequence[Sequence[Group]],
    signal: BaseException | None = None, deadline: float | None = None,
) -> ApplyInterrupted:
    """Audit an interrupted apply (result "interrupted", what was, was not, and may have been committed) and say
    the same to the operator, with the command to run next."""
    pending = list(batches[done.batches + len(in_flight):])
    unknown = Written.of(in_flight) if in_flight else None
    left = Written.of(pending) if batches else _whole(plan)
    interruption = Interruption(len(batches), done, left, unknown)
    timeout_s = None
    if isinstance(signal, KeyboardInterrupt):  # the operator wants out now: ZooKeeper gets a bounded wait
        timeout_s = SIGNAL_AUDIT_TIMEOUT_S if deadline is None else max(deadline - time.monotonic(), 0.5)
    entry = record_failure(client, root, audit, plan, done, None, acls, audit_log, interruption,
                           timeout_s=timeout_s)
    return ApplyInterrupted(interruption_message(plan.cluster, interruption, where(client, entry) if entry else None,
                                                 audit_log))


def _whole(plan: Plan) -> Written:
    """The whole plan as not committed, when it stopped before its batches were even built."""
    labels = [f"topics/{t.name}" for t in plan.topics_to_create] + [f"topics/{p.name}" for p in
                                                                   plan.partition_increases]
    labels += [e.ref.display for e in plan.entities]
    return Written(entities=len(plan.entities), notifications=len(plan.entities), topics=len(plan.topics_to_create),
                   partitions=sum(p.target - p.current for p in plan.partition_increases),
                   units=len(labels), first=labels[:FIRST_UNITS])


def interruption_message(cluster: str, i: Interruption, entry: str | None, audit_log: Path | None) -> str:
    """The operator's report of an interrupted apply: the same counts and units as its audit entry."""
    total = i.total_batches
    if total == 0 or (i.committed.batches == 0 and i.in_flight is None):
        head = (f"cluster {cluster}: apply interrupted before its first batch: nothing of the plan was written "
                "to ZooKeeper")
    elif i.in_flight is None:
        head = (f"cluster {cluster}: apply interrupted; it stopped between batches {i.committed.batches} and "
                f"{i.committed.batches + 1} of {total} (each batch is one ZooKeeper transaction: all of it "
                "committed or none)")
    else:
        first, last = i.committed.batches + 1, i.committed.batches + i.in_flight.batches
        being = f"batch {first} of {total} was" if first == last else f"batches {first}-{last} of {total} were"
        head = f"cluster {cluster}: apply ended by a second signal while {being} being committed"
    done, left = i.committed.batches, i.not_committed.batches
    lines = [head, _line(f"committed ({_batches(1, done, total)})", i.committed, ("created", "added", "written"))]
    if i.in_flight is not None:
        unsure = i.in_flight.batches
        what = ("committed entirely or not at all" if unsure == 1 else
                "each committed entirely or not at all, and none after one that did not")
        lines.append(_line(f"unknown ({_batches(done + 1, done + unsure, total)}: {what})", i.in_flight))
    first_left = total - left + 1
    what = f"not committed ({_batches(first_left, total, total)})" if total else "not committed (the whole plan)"
    lines.append(_line(what, i.not_committed, ("to create", "to add", "to write")))
    kept = [f"ZooKeeper {entry}"] if entry else ["ZooKeeper: not written (see the warning above)"]
    if audit_log is not None:
        kept.append(f"the local log {audit_log}")
    lines.append("  audit entry (result: interrupted): " + ", ".join(kept))
    lines.append(f"  next: `reconciler plan {cluster}` shows what is left (it reads ZooKeeper as it is now, so the "
                 f"plan is idempotent), then `reconciler apply {cluster}`; never re-run an old plan file")
    return "\n".join(lines)


def _line(what: str, w: Written, verbs: tuple[str, str, str] | None = None) -> str:
    created, added, written = (f" {verb}" for verb in verbs) if verbs else ("", "", "")
    units = ", ".join(clip(label, 120) for label in w.first)
    more = w.units - len(w.first)
    first = f"; first: {units}" + (f" (and {more:,} more)" if more > 0 else "") if units else ""
    return (f"  {what}: {w.topics:,} topics{created}, {w.partitions:,} partitions{added}, {w.entities:,} "
            f"entities{written} with {w.notifications:,} notifications{first}")


def _batches(first: int, last: int, total: int) -> str:
    if first > last:
        return f"no batch of {total}"
    return f"batch {first} of {total}" if first == last else f"batches {first}-{last} of {total}"


class _Builder:
    """Turns the plan and the znodes read back into transaction groups; refuses a stale plan."""

    def __init__(
        self,
        client: KazooClient,
        plan: Plan,
        acls: txn.Acls,
        encoder_for: EncoderLookup,
        resolve: SecretResolver,
    ) -> None:
        self.client, self.plan, self.acls = client, plan, acls
        self.encoder_for, self.resolve = encoder_for, resolve
        # of the passwords verified unchanged and those written, for the audit entry (a later plan without
        # the encoder secret compares against them)
        self.fingerprints: dict[str, dict[str, str]] = {
            key: {"ref": ref, "stored": stored} for key, ref, stored in plan.verified_passwords
        }
        # A cluster's topics repeat a few configs byte for byte: each distinct content decoded once (read
        # only: `_changed` copies it), each distinct new config encoded once
        self._decoded: dict[tuple[bytes, bool], dict[str, str]] = {}
        self._encoded: dict[tuple[tuple[str, str], ...], bytes] = {}
        self._assignments: dict[tuple[tuple[int, tuple[int, ...]], ...], bytes] = {}
        self._notification_acl = acls(NOTIFICATION_PREFIX)
        # each entity's znode, in plan order (read back, checked against the plan's version, then written)
        self._paths = [entity_path(e.ref) for e in plan.entities]

    def paths(self) -> list[str]:
        out = list(self._paths)
        for t in self.plan.topics_to_create:
            out += [entity_path(EntityRef("topics", t.name)), topic_path(t.name)]
        out += [topic_path(t.name) for t in self.plan.topics_to_delete]
        return out + [topic_path(p.name) for p in self.plan.partition_increases]

    def build(self, current: Mapping[str, Any]) -> list[Group]:
        self._refuse_stale(current)
        groups: list[Group] = []
        for t in self.plan.topics_to_create:  # config first, then the assignment; no notification (Kafka)
            cfg, asg = entity_path(EntityRef("topics", t.name)), topic_path(t.name)
            config = self._encode_config(t.config)
            leftover = current[cfg]
            # Kafka's createTopicWithAssignment sets-or-creates the config znode, so a config left over from
            # a deleted topic is overwritten (guarded by the version just read) rather than blocking forever.
            first = (Op("create", cfg, config, acl=self.acls(cfg)) if leftover is None
                     else Op("set", cfg, config, version=leftover[1].version))
            ops = [first, Op("create", asg, self._encode_assignment(t.assignment), acl=self.acls(asg))]
            groups.append(Group(f"topics/{t.name}", ops, topics=1))
        groups += [self._partitions(p, current[topic_path(p.name)]) for p in self.plan.partition_increases]
        for gone in self.plan.topics_to_delete:  # AdminZkClient.deleteTopic: the controller deletes it
            marker = f"{DELETE_TOPICS_PATH}/{gone.name}"
            groups.append(Group(f"topics/{gone.name} (delete)", [Op("create", marker, b"", acl=self.acls(marker))]))
        families: dict[tuple[str, str, str], list[tuple[EntityPlan, str]]] = {}
        for e, path in zip(self.plan.entities, self._paths, strict=True):  # users/<u> with its clients: one unit
            client_part = "" if e.ref.entity_type == "users" else e.ref.client or ""
            families.setdefault((e.ref.entity_type, e.ref.name, client_part), []).append((e, path))
        groups += [self._family(members, current) for members in families.values()]
        return groups + acl_groups(self.plan.acls, self.acls)  # guarded by their versions (zk/acls.py)

    def _refuse_stale(self, current: Mapping[str, Any]) -> None:
        stale: list[str] = []
        versions = [(path, e.base_version) for e, path in zip(self.plan.entities, self._paths, strict=True)]
        versions += [(topic_path(p.name), p.base_version) for p in self.plan.partition_increases]
        # a topic to delete must be the one planned (same /brokers/topics version, read just before the batch)
        versions += [(topic_path(t.name), t.base_version) for t in self.plan.topics_to_delete]
        for path, base in versions:
            item = current[path]
            now = None if item is None else item[1].version
            if now != base:
                name = where(self.client, path)
                stale.append(f"{name} changed since the plan (version {_v(base)}, now {_v(now)})")
        for t in self.plan.topics_to_create:
            asg = topic_path(t.name)
            if current[asg] is not None:
                stale.append(f"topic {t.name} was created since the plan ({where(self.client, asg)} exists)")
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

    def _family(self, members: list[tuple[EntityPlan, str]], current: Mapping[str, Any]) -> Group:
        """`members`: each entity of the family with its znode."""
        if len(members) == 1 and members[0][0].ref.client is None:  # most families: one entity, no client
            ((alone, path),) = members
            group = Group(alone.ref.display)
            self._entity(group, alone, path, current, set() if alone.delete_entity else None)
            return group
        parent = next((m for m in members if m[0].ref.client is None), None)
        children = [m for m in members if m is not parent]
        group = Group(members[0][0].ref.display)
        if parent is not None and parent[0].delete_entity:  # children first, so the parent can go
            deleted = {sanitize(c.ref.client or "") for c, _ in children if c.delete_entity}
            for child, path in children:
                self._entity(group, child, path, current)
            self._entity(group, *parent, current, deleted)
            return group
        if parent is not None:
            self._entity(group, *parent, current)
            if parent[0].base_version is None and any(c.base_version is None for c, _ in children):
                container = parent[1] + "/clients"  # inside the multi: its parent is new
                group.ops.append(Op("create", container, acl=self.acls(container)))
        for child, path in children:
            self._entity(group, child, path, current)
        return group

    def _entity(
        self, group: Group, e: EntityPlan, path: str, current: Mapping[str, Any],
        deleted_clients: set[str] | None = None,
    ) -> None:
        """`e`'s write (its znode `path`) and its change notification, into `group`."""
        item = current[path]
        live = self._live(path, item) if item is not None else {}
        config = self._changed(e, live)
        if e.delete_entity:
            if item is None or e.base_version is None:
                raise ReconcilerError(f"malformed plan: it deletes {e.ref.display}, which did not exist")
            if item[1].numChildren == 0:
                group.ops.append(Op("delete", path, version=e.base_version))
            elif self._only_deleted_clients(path, deleted_clients):
                group.ops += [Op("delete", path + "/clients"), Op("delete", path, version=e.base_version)]
            else:  # Kafka keeps a quota node that has children and writes its empty config
                group.ops.append(Op("set", path, self._encode_config(config), version=e.base_version))
        elif e.base_version is None:
            group.ops.append(Op("create", path, self._encode_config(config), acl=self.acls(path)))
        else:  # positional: a named tuple is built faster so, and apply builds two ops per entity
            group.ops.append(Op("set", path, self._encode_config(config), e.base_version))
        group.ops.append(Op("create", NOTIFICATION_PREFIX, notification_for(path), -1, self._notification_acl, True))
        group.entities += 1
        group.notifications += 1

    def _live(self, path: str, item: tuple[bytes, Any]) -> dict[str, str]:
        key = (item[0], item[1].numChildren > 0)
        if (live := self._decoded.get(key)) is None:
            live = self._decoded[key] = decode_entity_config(item[0], where(self.client, path), key[1])
        return live

    def _encode_config(self, config: Mapping[str, str]) -> bytes:
        key = tuple(sorted(config.items()))
        if (data := self._encoded.get(key)) is None:
            data = self._encoded[key] = encode_entity_config(config)
        return data

    def _encode_assignment(self, assignment: Mapping[int, tuple[int, ...]]) -> bytes:
        key = tuple((p, tuple(r)) for p, r in sorted(assignment.items()))
        if (data := self._assignments.get(key)) is None:
            data = self._assignments[key] = encode_topic_assignment(assignment)
        return data

    def _only_deleted_clients(self, path: str, deleted: set[str] | None) -> bool:
        """Is the only child the `clients` container, holding only clients this multi deletes?"""
        try:
            if deleted is None or self.client.retry(self.client.get_children, path) != ["clients"]:
                return False
            return set(self.client.retry(self.client.get_children, path + "/clients")) <= deleted
        except NoNodeError:  # changed under us: keep the node; the multi's version check has the last word
            return False

    def _changed(self, e: EntityPlan, live: Mapping[str, str]) -> dict[str, str]:
        """The live config with exactly the plan's changes; every other key is kept as stored."""
        config = dict(live)
        for change in e.changes:
            if change.op == "-":
                config.pop(change.key, None)
                if change.sensitive:
                    self.fingerprints[password_key(e.ref, change.key)] = {}
            elif change.sensitive:
                config[change.key] = encoded = self._encode(change, e.ref)
                if change.secret is not None:
                    self.fingerprints[password_key(e.ref, change.key)] = {
                        "ref": reference_fingerprint(e.ref, change.key, change.secret),
                        "stored": stored_fingerprint(encoded),
                    }
            elif change.after is None:
                raise ReconcilerError(f"malformed plan: {e.ref.display} {change.key}: no value to set")
            else:
                config[change.key] = change.after
        return config

    def _encode(self, change: Change, ref: EntityRef) -> str:
        if change.iterations is not None and ref.entity_type == "users":  # a SCRAM credential, fresh salt
            return scram.credential_for(change.key, self.resolve(change, ref), change.iterations)
        params = self.encoder_for(ref)
        if params is None:
            raise SecretError(
                f"{change.key} of {ref.display}: no password encoder secret for this cluster; set "
                "passwordEncoder (the brokers' password.encoder.secret) in the cluster manifest"
            )
        return encode(self.resolve(change, ref), params)


def _v(version: int | None) -> str:
    return "absent" if version is None else str(version)
