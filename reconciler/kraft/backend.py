"""The KRaft backend (`reconciler.backend.Backend`): a cluster with spec.kraft is read and written through its
brokers' Admin API (kraft/read.py, kraft/write.py) on one connection each time, opened with spec.kraft's
bootstrap servers (allow-listed, `brokers.endpoints`) and client security (the same checked PEM files and
secret references as spec.adminClient, `brokers.verify.admin_security`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.backend import (
    ApplyRequest,
    ApplyResult,
    AuditEntry,
    AuditInfo,
    Backend,
    Connection,
    DriftItem,
    DriftSubject,
    Notify,
    Owner,
    ReadProgress,
    access_changes,
    audit_entry,
    read_types,
)
from reconciler.brokers.admin import BrokerAdminError
from reconciler.brokers.verify import admin_security
from reconciler.errors import ApplyInterrupted, ConflictError, Diagnostic, ReconcilerError, printable
from reconciler.kraft.aclfilters import coalesced
from reconciler.kraft.admin import KraftAdmin
from reconciler.kraft.drift import date_drift
from reconciler.kraft.kafka4 import with_kafka4_state
from reconciler.kraft.localstate import LocalStore
from reconciler.kraft.operations import Operations, Unit, operations
from reconciler.kraft.passwords import compare_kraft_secrets
from reconciler.kraft.read import read_live
from reconciler.kraft.state import TopicStore, state_exposure
from reconciler.kraft.statedata import (
    Record,
    State,
    Store,
    audit_record,
    owner_record,
    reassignment_record,
    written_records,
)
from reconciler.kraft.write import (
    KraftApplyError,
    WriteReport,
    as_errors,
    plaintext_password_problem,
    precheck,
    refuse_plaintext_passwords,
    stale_changes,
    validate,
    write,
)
from reconciler.model import ClusterSpec, DesiredState, LiveState, SecretRef
from reconciler.plan import Plan
from reconciler.secrets.compare import SecretComparison, TrustedSecret

if TYPE_CHECKING:
    from reconciler.kraft.lease import Lease

log = logging.getLogger(__name__)


@contextmanager
def kraft_admin(cluster: ClusterSpec, root: Path) -> Iterator[KraftAdmin]:
    """An Admin API connection to the cluster's KRaft brokers; errors name spec.kraft's line."""
    if cluster.kraft is None:
        raise ReconcilerError(f"cluster {cluster.name} has no spec.kraft")
    spec = cluster.kraft.admin
    try:
        admin = KraftAdmin(spec, admin_security(replace(cluster, admin=spec), root), request_timeout_s=15.0)
    except BrokerAdminError as exc:
        where = spec.source or cluster.source
        raise BrokerAdminError(f"{exc.message} (cluster {cluster.name}, spec.kraft.bootstrapServers at "
                               f"{where.file}:{where.line})" if where else exc.message) from None
    try:
        yield admin
    finally:
        admin.close()


class KraftConnection:
    """One Admin API connection to a KRaft cluster (`Backend.connect`), and the cluster's reconciler state."""

    def __init__(self, admin: KraftAdmin, cluster: ClusterSpec, root: Path) -> None:
        self.admin, self.cluster, self.root = admin, cluster, root
        kraft = cluster.kraft
        assert kraft is not None
        self.hidden = frozenset() if kraft.local_state else frozenset({kraft.state_topic})
        self.store: Store = (LocalStore(cluster.name) if kraft.local_state
                             else TopicStore(admin, kraft.state_topic, cluster.name))
        self._state: State | None = None

    def state(self) -> State:
        """The reconciler's state, read once per connection (again after an apply)."""
        if self._state is None:
            self._state = self.store.read()
        return self._state

    def read(self, desired: DesiredState, *, entity_types: frozenset[str] | None = None,
             progress: ReadProgress | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
        types = read_types(desired) if entity_types is None else entity_types
        try:
            live = read_live(self.admin, desired.cluster.name, types, progress=progress, hidden=self.hidden)
        except ReconcilerError:
            raise
        except Exception as exc:  # kafka-python's errors: named by type, never with a credential
            raise BrokerAdminError(f"cluster {desired.cluster.name}: reading the {self.admin.where} failed "
                                   f"({type(exc).__name__})") from None
        live = with_kafka4_state(self.admin, live, desired, types)  # groups, client metrics, feature levels
        if checks is not None:
            checks.extend(state_exposure(live, self.cluster))
        if not _names_a_secret(desired, live):
            return live
        return replace(live, applied_passwords=self.state().applied_passwords())

    def check(self, plan: Plan, desired: DesiredState) -> Sequence[Diagnostic]:
        """The plaintext-password rule, and every non-sensitive change sent with validateOnly (the brokers' and
        controllers' own validation as a plan-time check; a refusal is an error of the plan)."""
        cluster = desired.cluster
        diags = []
        problem = plaintext_password_problem(plan, cluster)
        if problem is not None:
            diags.append(Diagnostic("error", problem, cluster.kraft.source if cluster.kraft else cluster.source,
                                    "securityProtocol"))
        if plan.is_empty:
            return diags
        ops = operations(plan, None)
        refused = validate(self.admin, ops) + precheck(self.admin, ops)
        diags.extend(Diagnostic("error", f"the cluster refuses (validateOnly): {line}", cluster.source)
                     for line in refused)
        return diags

    def apply(self, request: ApplyRequest) -> ApplyResult:
        """Under the apply lock: the plan checked against the cluster as it is now (stale values, validateOnly,
        prechecks: nothing written on a refusal), then written (kraft/write.py) and recorded in the state (the
        keys written, the audit entry), whatever the outcome."""
        from reconciler.holder import claim as holder_claim  # the apply path only
        from reconciler.kraft.lease import apply_lock, default_lock_wait

        plan = request.plan
        if plan.is_empty:
            return ApplyResult(0, 0, 0, 0, 0, None)
        refuse_plaintext_passwords(plan, self.cluster)
        ops = operations(plan, request.resolve_secret)
        timeout = default_lock_wait() if request.lock_timeout_s is None else request.lock_timeout_s
        claim = json.loads(holder_claim(request.audit.user, plan.plan_id, request.audit.time))
        with apply_lock(self.store, claim, timeout, plan.cluster, request.notify) as lease:
            audit = replace(request.audit, lock_takeovers=lease.taken_over)
            self._refuse_unwritable(plan, ops)
            ops = coalesced(self.admin, ops)
            stop = request.stop
            report = write(self.admin, ops, stop=lambda: lease.lost.is_set() or (stop is not None and stop()),
                           progress=request.progress)
            kept = self._record(request, audit, ops, report, lease)
        self._state = None
        return self._outcome(plan, report, kept, lease)

    def _refuse_unwritable(self, plan: Plan, ops: Operations) -> None:
        stale = stale_changes(self.admin, plan)
        if stale:
            raise ConflictError(f"cluster {plan.cluster}: the cluster changed since the plan was made; nothing was "
                                "written: plan again\n  " + "\n  ".join(stale[:20]))
        refused = validate(self.admin, ops) + precheck(self.admin, ops)
        if refused:
            raise KraftApplyError(f"cluster {plan.cluster}: the cluster refuses the plan (validateOnly); nothing "
                                  "was written", as_errors(refused))

    def _record(self, request: ApplyRequest, audit: AuditInfo, ops: Operations, report: WriteReport,
                lease: Lease) -> str:
        """The keys written and the audit entry, in the state (and the local audit log): where they were kept."""
        plan = request.plan
        for restored in report.restored:
            log.warning("cluster %s: an ACL entry added during the apply matched the filter that removed the plan's "
                        "entries of its principal; it was created again: %s", plan.cluster, restored)
        result = ("applied" if report.complete else "failed: refused" if report.refused
                  else "failed: ACL entries lost" if report.lost
                  else f"failed: {report.failure}" if report.failure
                  else "failed: lost the apply lock" if lease.lost.is_set() else "interrupted")
        writes = [w for u in report.written for w in u.writes]
        entry = audit_entry(audit, _counts(plan, report), result, access=access_changes(plan),
                            passwords={f"{w.entity}|{w.key}": dict(w.fingerprint) for w in writes if w.fingerprint},
                            extra={"backend": "kraft", **({} if report.complete else {"writes": report.summary()})})
        records = [*written_records(writes, audit), audit_record(entry, lease.token)]
        kept = []
        try:
            self.store.transact(lambda _state: records)
            kept.append(self.store.where)
        except ReconcilerError as exc:  # the apply's writes stand: say where the entry could not go
            log.warning("cluster %s: the audit entry could not be kept in the %s (%s)", plan.cluster,
                        self.store.where, exc.message)
        if request.audit_log is not None:
            request.audit_log.parent.mkdir(parents=True, exist_ok=True)
            with request.audit_log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
            kept.append(str(request.audit_log))
        return ", ".join(kept) or "nowhere (see the warning above)"

    def _outcome(self, plan: Plan, report: WriteReport, kept: str, lease: Lease) -> ApplyResult:
        if report.complete:
            written = report.written
            return ApplyResult(sum(u.entity for u in written), 0, sum(u.topic for u in written),
                               _partitions(plan, written), report.requests, kept)
        lines = [*report.lines(), f"  audit entry: {kept}",
                 f"  next: `reconciler plan {plan.cluster}` shows exactly what is left (it reads the cluster as it is "
                 f"now), then `reconciler apply {plan.cluster}`; never re-run an old plan file"]
        if report.failure:
            raise KraftApplyError("\n".join([f"cluster {plan.cluster}: a request got no answer "
                                             f"({report.failure}); the apply stopped there", *lines]))
        if report.lost:
            raise KraftApplyError("\n".join([f"cluster {plan.cluster}: an ACL entry added during the apply was "
                                             "deleted with the plan's entries of its principal and could not be "
                                             "created again; the apply stopped there", *lines]))
        if report.refused:
            raise KraftApplyError("\n".join([f"cluster {plan.cluster}: the cluster refused a write; the apply "
                                             "stopped after that request", *lines]))
        if lease.lost.is_set():
            raise ConflictError("\n".join([f"cluster {plan.cluster}: the apply lock was lost to {lease.lost_to}; "
                                           "the apply stopped before its next write", *lines]))
        raise ApplyInterrupted("\n".join([f"cluster {plan.cluster}: apply interrupted between two requests", *lines]))

    def audit_entries(self) -> list[AuditEntry] | None:
        return self.state().entries

    def date_drift(self, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
                   later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
        return date_drift(self.state(), items, since, later, live, detailed)

    def reassignment_record(self) -> Mapping[str, Any] | None:
        return self.state().reassignment

    def keep_reassignment_record(self, record: Mapping[str, Any] | None) -> None:
        if record is None and self.state().reassignment is None:
            return  # nothing to remove (and no state topic to create for it)
        self.store.transact(lambda _state: [reassignment_record(record)])
        self._state = None

    def owner(self) -> Owner | None:
        return self.state().owner

    def claim(self, owner: Owner, replacing: str | None = None) -> Owner:
        def records(state: State) -> list[Record]:
            free = state.owner is None or (replacing is not None and state.owner.cluster == replacing)
            return [owner_record(owner)] if free else []

        recorded = self.store.transact(records).owner or owner
        self._state = None
        return recorded


def _names_a_secret(desired: DesiredState, live: LiveState) -> bool:
    """Whether a plan can need the fingerprints: the manifests name a secret for a key set live."""
    return any(isinstance(v.value, SecretRef) and ref in live.entities and key in live.entities[ref].config
               for ref, e in desired.entities.items() for key, v in e.config.items())


def _counts(plan: Plan, report: WriteReport) -> dict[str, int]:
    counts = plan.counts
    return {"add": counts.add, "change": counts.change, "remove": counts.remove,
            "topicsCreated": sum(u.topic for u in report.written),
            "partitionsAdded": _partitions(plan, report.written), "requests": report.requests}


def _partitions(plan: Plan, written: Sequence[Unit]) -> int:
    grown = {w.entity for u in written for w in u.writes if w.key == "(partitions)"}
    return sum(p.target - p.current for p in plan.partition_increases if f"topics/{p.name}" in grown)


class KraftBackend:
    name = "kraft"

    def label(self, cluster: ClusterSpec) -> str:
        servers = cluster.kraft.admin.bootstrap_servers if cluster.kraft else ()
        return printable("KRaft brokers " + ",".join(servers))

    @contextmanager
    def connect(self, cluster: ClusterSpec, root: Path, notify: Notify | None = None) -> Iterator[Connection]:
        with kraft_admin(cluster, root) as admin:
            yield KraftConnection(admin, cluster, root)

    def read_summary(self, live: LiveState) -> str:
        return f"{len(live.entities)} config entities, {len(live.topics)} topics, {len(live.brokers)} brokers"

    def compare_secrets(self, desired: DesiredState, live: LiveState, root: Path,
                        trusted_secret: TrustedSecret | None = None) -> SecretComparison:
        # KRaft never returns passwords: its verdicts come from recorded fingerprints (kraft/passwords.py)
        return compare_kraft_secrets(desired, live, root, trusted_secret)

    def plan_warnings(self, plan: Plan, desired: DesiredState, live: LiveState) -> list[str]:
        return []

    def migration_refusal(self, cluster: ClusterSpec) -> str | None:
        return f"cluster {cluster.name} is already a KRaft cluster (spec.kraft): nothing to migrate"


KRAFT = KraftBackend()
_CONFORMS: Backend = KRAFT  # mypy checks the seam's protocol here
