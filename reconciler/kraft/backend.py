"""The KRaft backend (`reconciler.backend.Backend`): a cluster with spec.kraft is read and written through its
brokers' Admin API (kraft/read.py, kraft/write.py) on one connection each time, opened with spec.kraft's
bootstrap servers (allow-listed, `brokers.endpoints`) and client security (the same checked PEM files and
secret references as spec.adminClient, `brokers.verify.admin_security`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from reconciler.backend import (
    ApplyRequest,
    ApplyResult,
    AuditEntry,
    Backend,
    Connection,
    DriftItem,
    DriftSubject,
    Notify,
    ReadProgress,
    audit_entry,
    read_types,
)
from reconciler.brokers.admin import BrokerAdminError
from reconciler.brokers.verify import admin_security
from reconciler.errors import ConflictError, Diagnostic, ReconcilerError, printable
from reconciler.kraft.admin import KraftAdmin
from reconciler.kraft.passwords import compare_kraft_secrets, default_audit_log
from reconciler.kraft.read import read_live, with_applied_passwords
from reconciler.kraft.write import (
    KraftApplyError,
    as_errors,
    operations,
    plaintext_password_problem,
    refuse_plaintext_passwords,
    stale_changes,
    validate,
    write,
)
from reconciler.model import ClusterSpec, DesiredState, LiveState
from reconciler.plan import Plan
from reconciler.secrets.compare import SecretComparison, TrustedSecret


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
    """One Admin API connection to a KRaft cluster (`Backend.connect`)."""

    def __init__(self, admin: KraftAdmin, cluster: ClusterSpec, root: Path) -> None:
        self.admin, self.cluster, self.root = admin, cluster, root

    def read(self, desired: DesiredState, *, entity_types: frozenset[str] | None = None,
             progress: ReadProgress | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
        types = read_types(desired) if entity_types is None else entity_types
        try:
            live = read_live(self.admin, desired.cluster.name, types, progress=progress)
        except ReconcilerError:
            raise
        except Exception as exc:  # kafka-python's errors: named by type, never with a credential
            raise BrokerAdminError(f"cluster {desired.cluster.name}: reading the {self.admin.where} failed "
                                   f"({type(exc).__name__})") from None
        return with_applied_passwords(live, desired, default_audit_log())

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
        refused = validate(self.admin, operations(plan, None))
        diags.extend(Diagnostic("error", f"the cluster refuses (validateOnly): {line}", cluster.source)
                     for line in refused)
        return diags

    def apply(self, request: ApplyRequest) -> ApplyResult:
        plan, audit, audit_log = request.plan, request.audit, request.audit_log
        if plan.is_empty:
            return ApplyResult(0, 0, 0, 0, 0, None)
        refuse_plaintext_passwords(plan, self.cluster)
        ops = operations(plan, request.resolve_secret)
        stale = stale_changes(self.admin, plan)
        if stale:
            raise ConflictError(f"cluster {plan.cluster}: the cluster changed since the plan was made; nothing was "
                                "written: plan again\n  " + "\n  ".join(stale[:20]))
        refused = validate(self.admin, ops)
        if refused:
            raise KraftApplyError(f"cluster {plan.cluster}: the cluster refuses the plan (validateOnly); nothing "
                                  "was written", as_errors(refused))
        if request.progress is not None:
            request.progress(0, 1)
        written = write(self.admin, plan, ops)
        if request.progress is not None:
            request.progress(1, 1)
        counts = plan.counts
        record = audit_entry(audit, {"add": counts.add, "change": counts.change, "remove": counts.remove,
                                     "topicsCreated": counts.topics_created,
                                     "partitionsAdded": counts.partitions_added}, "applied",
                             passwords=ops.passwords, extra={"backend": "kraft"})
        if audit_log is not None:
            audit_log.parent.mkdir(parents=True, exist_ok=True)
            with audit_log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
        return ApplyResult(written.entities, 0, written.topics_created, written.partitions_added, 1,
                           None if audit_log is None else str(audit_log))

    def audit_entries(self) -> list[AuditEntry] | None:
        return None

    def date_drift(self, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
                   later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
        return [item for _, item in items] if detailed else []


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
