"""The backend seam: where a cluster's live state is read from, where a plan is written to, and where the
reconciler keeps its own state (audit entries, password fingerprints, the apply lock, the owner record).

A cluster's `spec.zookeeper` or `spec.kraft` picks one implementation, once (`backends.backend_for`;
`rules.cluster` makes it exactly one):

* ZooKeeper (`zk/backend.py`): multiRead of the znodes; versioned multis with change notifications under the
  apply lock; audit entries and fingerprints in znodes under `reconcilerPath`; drift dated by znode mtimes;
* KRaft (`kraft/backend.py`): the brokers' Admin API (Describe*, IncrementalAlterConfigs, Create*/Alter*);
  the lock, audit entries and fingerprints in the cluster's own state topic (`kraft/state.py`).

Both produce and consume the same data: a `LiveState` for diff, risk, rules, renderers, drift and `describe`,
and an unchanged `Plan`. The use cases (`workflow`, `apply`, `gitops`, `cli`, `impact.snapshot`) hold a
`Backend` and never ask which one it is. What crosses the seam besides the core types is defined here: the
audit entry's form, an apply's request and result, an audit entry read back, a drift item. Standard library
and core types only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.catalog import SCRAM_KEYS
from reconciler.errors import Diagnostic
from reconciler.model import (
    ENTITY_TYPES,
    AclResource,
    ClusterSettings,
    ClusterSpec,
    DesiredState,
    EntityRef,
    LiveState,
    Secret,
)
from reconciler.plan import Change, Plan

if TYPE_CHECKING:  # (reassign's package loads its planner: an apply without replica moves does not need it)
    from reconciler.reassign.outcome import Outcome
    from reconciler.secrets.compare import SecretComparison, TrustedSecret

ReadProgress = Callable[[int, int], None]
Notify = Callable[[str], None]
EVERY_TYPE: frozenset[str] = frozenset(ENTITY_TYPES)


def read_types(desired: DesiredState) -> frozenset[str]:
    """The entity types a plan of `desired` reads whole (ownership needs them): those the manifests manage,
    always topics, every type when pruning (undeclared entities must be seen to be removed), users when SCRAM
    users are pruned (every user's credentials must be seen to be removed)."""
    if desired.cluster.policy.prune:
        return EVERY_TYPE
    types = {ref.entity_type for ref in desired.entities} | {"topics"}
    if desired.cluster.policy.prune_scram_users:
        types.add("users")
    return frozenset(types)


# --- the audit entry: the same form in both backends ------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AuditInfo:
    """Who applies which plan: `time` is ISO-8601 UTC, `user` e.g. "alice@ops-host"."""

    plan_id: str
    cluster: str
    revision: str | None
    user: str
    time: str
    lock_takeovers: tuple[Mapping[str, Any], ...] = ()  # dead applies whose lock this one took over


def audit_entry(
    info: AuditInfo, counts: Mapping[str, int], result: str, *,
    passwords: Mapping[str, Mapping[str, str]] | None = None,
    interruption: Mapping[str, Any] | None = None,
    access: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The entry's JSON object; `result` is "applied", "interrupted" or a short failure description (never a
    value). `passwords`: the fingerprints of the passwords this apply wrote (salted digests, no values).
    `interruption`: what an interrupted apply wrote and did not. Built from counts and identifiers only."""
    record: dict[str, Any] = {
        "planId": info.plan_id,
        "cluster": info.cluster,
        "revision": info.revision,
        "user": info.user,
        "time": info.time,
        "counts": dict(counts),
        "result": result,
    }
    if passwords:
        record["passwords"] = {k: dict(v) for k, v in sorted(passwords.items())}
    if access:  # who gained or lost what (access_changes): names only
        record["access"] = dict(access)
    if interruption is not None:
        record["interrupted"] = dict(interruption)
    if info.lock_takeovers:  # who held the lock, which process, which plan, since when, why it was dead
        record["lockTakeovers"] = [dict(t) for t in info.lock_takeovers]
    record.update(extra or {})
    return record


ACCESS_SHOWN = 1000  # ACL resource patterns an audit entry details (`access_changes`)


def access_changes(plan: Plan) -> dict[str, Any]:
    """What an auditor asks of an access change: each ACL resource pattern with the entries added and removed
    and the principals that lose access (risk's `losing`), and each SCRAM credential created, replaced or
    removed (user and mechanism; never a credential). Empty for a plan that changes no access.

    At most ACCESS_SHOWN patterns are detailed (beyond that, those where a principal loses access first), with the
    complete counts beside them: an audit entry is one znode (ZooKeeper refuses more than jute.maxbuffer, 1 MiB) or one
    record of the state topic (1 MiB by default), and 10,000 patterns' details took 1.1 MB, so the apply's last
    write failed after every ACL was written."""
    out: dict[str, Any] = {}
    if plan.acls:
        shown = plan.acls if len(plan.acls) <= ACCESS_SHOWN else (  # losses first, else plan order (stable)
            sorted(plan.acls, key=lambda a: not a.losing)[:ACCESS_SHOWN])
        out["acls"] = [{"resource": a.resource.display, "added": [e.display for e in a.add],
                        "removed": [e.display for e in a.remove], "losing": list(a.losing)} for a in shown]
        if len(shown) < len(plan.acls):
            out["aclsCounted"] = {"patterns": len(plan.acls), "detailed": len(shown),
                                  "added": sum(len(a.add) for a in plan.acls),
                                  "removed": sum(len(a.remove) for a in plan.acls),
                                  "losing": sum(bool(a.losing) for a in plan.acls)}
    scram = [{"user": e.ref.name, "mechanism": c.key, "op": c.op} for e in plan.entities
             if e.ref.entity_type == "users" and e.ref.client is None for c in e.changes if c.key in SCRAM_KEYS]
    if scram:
        out["scramCredentials"] = scram
    return out


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An audit entry read back from where the backend keeps them."""

    path: str  # where it is kept: a znode path, or `topic@offset`
    record: Mapping[str, Any]
    created_ms: int  # when it was kept (a znode's ctime, a record's timestamp): after the apply's last write

    @property
    def revision(self) -> str | None:
        value = self.record.get("revision")
        return str(value) if value else None

    @property
    def user(self) -> str:
        return str(self.record.get("user") or "unknown")

    @property
    def time(self) -> str:
        return iso(self.created_ms)


def last_apply(entries: Sequence[AuditEntry]) -> AuditEntry | None:
    return next((e for e in reversed(entries) if e.record.get("result") == "applied"), None)


OUTSIDE = "outside the reconciler"
# what a drift item is about: a config entity, a topic's layout (its name), an ACL resource pattern
DriftSubject = EntityRef | AclResource | str


@dataclass(frozen=True, slots=True)
class DriftItem:
    entity: str  # "brokers/<default>", "topics/orders", "acls/Topic:PREFIXED:app-"
    key: str  # a config key, "(topic)", "(partitions)", an ACL entry; "*" when only a modification time is known
    expected: str | None  # at the last apply (None: the key was not there)
    live: str | None  # now (None: the key is gone)
    modified: str | None = None  # when it was last written, ISO-8601 UTC, when known
    notified: str | None = None  # a change notification for the entity written after the apply (ZooKeeper)
    by: str = OUTSIDE


# --- an apply's request and result ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ApplyRequest:
    """Everything a backend's apply needs besides the connection: the plan, the cluster's settings, how a
    sensitive change's value is resolved (the manifests' own reference, checked by `apply.check_named_secrets`),
    who applies it, and the operator's options."""

    plan: Plan
    settings: ClusterSettings
    resolve_secret: Callable[[Change, EntityRef], Secret]
    audit: AuditInfo
    audit_log: Path | None = None  # the local JSON-lines copy of the audit entry
    lock_timeout_s: float | None = None  # None: the backend's default
    max_batch_bytes: int | None = None  # ZooKeeper: a multi's bound (RECONCILER_MAX_BATCH_BYTES)
    progress: ReadProgress | None = None
    notify: Notify | None = None  # a line when the apply waits for the lock or takes a dead holder's over
    stop: Callable[[], bool] | None = None  # asked between writes: true ends the apply there, reported
    # write even where no broker of the declared ids is registered (--allow-no-brokers: pre-seeding configs
    # before the brokers first start); else a backend refuses such a target before its first write
    allow_no_brokers: bool = False


@dataclass(frozen=True, slots=True)
class ApplyResult:
    entities_written: int
    notifications: int
    topics_created: int
    partitions_added: int
    batches: int
    audit_path: str | None  # where the audit entry was kept
    reassignment: Outcome | None = None  # where the plan's replica moves stand after the pass (reconciler/reassigning)


@dataclass(frozen=True, slots=True)
class Owner:
    """The cluster directory that manages a target (a ZooKeeper ensemble + chroot, a KRaft cluster), as recorded
    at the target (issue 38: a directory that is not the owner must not apply there)."""

    cluster: str  # the directory name under clusters/
    claimed_by: str  # who claimed it (an audit user: login@host, RECONCILER_USER)
    time: str  # when, ISO-8601 UTC
    plan_id: str | None = None


# --- the seam ---------------------------------------------------------------------------------------------

class Connection(Protocol):
    """One open connection to a cluster (a ZooKeeper session, an Admin API client), used for a whole pass."""

    def read(self, desired: DesiredState, *, entity_types: frozenset[str] | None = None,
             progress: ReadProgress | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
        """The live state a plan of `desired` needs (`entity_types`: read these types whole instead of
        `read_types(desired)`), with the fingerprints of applied passwords; `checks` collects what the same
        read finds about the cluster besides (warnings)."""
        ...

    def check(self, plan: Plan, desired: DesiredState) -> Sequence[Diagnostic]:
        """Plan-time checks only the cluster can make (KRaft: validateOnly requests)."""
        ...

    def apply(self, request: ApplyRequest) -> ApplyResult:
        """Execute exactly the plan under the cluster's apply lock, and keep its audit entry."""
        ...

    def audit_entries(self) -> list[AuditEntry] | None:
        """The newest audit entries kept at the cluster, oldest first; None when it keeps none."""
        ...

    def date_drift(self, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
                   later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
        """Each drifted item with when it changed and by whom, as far as the backend can know. `detailed`
        False: the items are whole entities without key detail; only those modified after `since` are kept."""
        ...

    def owner(self) -> Owner | None:
        """The cluster directory recorded at the target as managing it (None: no apply claimed it yet)."""
        ...

    def claim(self, owner: Owner, replacing: str | None = None) -> Owner:
        """Record `owner` at the target unless an owner is recorded already (compare-and-set: of two claims
        exactly one wins), or when the recorded owner names `replacing` (a declared rename hands the target
        over, guarded the same way); returns the owner recorded. Whether a differing owner may apply is the
        caller's rule (`ownership.decide`)."""
        ...

    def reassignment_record(self) -> Mapping[str, Any] | None:
        """The record of the reassignment the reconciler runs (reconciler/reassign/record.py), kept at the
        cluster; None when there is none."""
        ...

    def keep_reassignment_record(self, record: Mapping[str, Any] | None) -> None:
        """Write the record (None: remove it)."""
        ...


class Backend(Protocol):
    """Chosen once from a cluster's spec; the use cases ask it, never which one it is."""

    name: str  # "zookeeper" or "kraft": the plan's `backend` and what the audit entries say

    def label(self, cluster: ClusterSpec) -> str:
        """What the progress lines name (`ZooKeeper host:2181/kafka`, `KRaft brokers host:9092`)."""
        ...

    def connect(self, cluster: ClusterSpec, root: Path,
                notify: Notify | None = None) -> AbstractContextManager[Connection]:
        """A connection for the block; `notify(line)` when connecting takes a while."""
        ...

    def read_summary(self, live: LiveState) -> str:
        """The end of a read's progress line (`3 config znodes, 2 topics, 1 brokers`)."""
        ...

    def compare_secrets(self, desired: DesiredState, live: LiveState, root: Path,
                        trusted_secret: TrustedSecret | None = None) -> SecretComparison:
        """The verdict for every desired password and SCRAM credential set live."""
        ...

    def plan_warnings(self, plan: Plan, desired: DesiredState, live: LiveState) -> list[str]:
        """What the store would refuse of this plan that no Kafka rule says (ZooKeeper: jute.maxbuffer)."""
        ...

    def migration_refusal(self, cluster: ClusterSpec) -> str | None:
        """Why a ZooKeeper → KRaft migration check (`migrate-check`) does not apply to this cluster, or None."""
        ...
