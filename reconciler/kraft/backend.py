"""The KRaft backend (`reconciler.backend.Backend`): a cluster with spec.kraft is read and written through its
brokers' Admin API (kraft/read.py, kraft/write.py) on one connection each time, opened with spec.kraft's
bootstrap servers (allow-listed, `brokers.endpoints`) and client security (the same checked PEM files and
secret references as spec.adminClient, `brokers.verify.admin_security`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.backend import AuditFields, Backend
from reconciler.brokers.admin import BrokerAdminError
from reconciler.brokers.verify import admin_security
from reconciler.errors import ConflictError, Diagnostic, ReconcilerError, printable
from reconciler.kraft.admin import KraftAdmin
from reconciler.kraft.passwords import default_audit_log
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
from reconciler.model import ClusterSettings, ClusterSpec, DesiredState, EntityRef, LiveState, Secret
from reconciler.plan import Change, Plan
from reconciler.progress import Progress

if TYPE_CHECKING:
    from reconciler.zk.write import ApplyResult


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


class KraftBackend:
    def label(self, cluster: ClusterSpec) -> str:
        servers = cluster.kraft.admin.bootstrap_servers if cluster.kraft else ()
        return printable("KRaft brokers " + ",".join(servers))

    def read(self, desired: DesiredState, root: Path, progress: Progress) -> LiveState:
        cluster = desired.cluster
        types = frozenset({ref.entity_type for ref in desired.entities} | {"topics"})
        if cluster.policy.prune:
            types = frozenset({"topics", "brokers", "clients", "users", "ips"})
        with progress.phase(f"{cluster.name}: read {self.label(cluster)}") as phase:
            with kraft_admin(cluster, root) as admin:
                try:
                    live = read_live(admin, cluster.name, types, progress=phase.update)
                except ReconcilerError:
                    raise
                except Exception as exc:  # kafka-python's errors: named by type, never with a credential
                    raise BrokerAdminError(f"cluster {cluster.name}: reading the {admin.where} failed "
                                           f"({type(exc).__name__})") from None
            live = with_applied_passwords(live, desired, default_audit_log())
            phase.done(f"{len(live.entities)} config entities, {len(live.topics)} topics, {len(live.brokers)} brokers")
        return live

    def check(self, plan: Plan, desired: DesiredState, root: Path) -> Sequence[Diagnostic]:
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
        with kraft_admin(cluster, root) as admin:
            refused = validate(admin, operations(plan, None))
        diags.extend(Diagnostic("error", f"the cluster refuses (validateOnly): {line}", cluster.source)
                     for line in refused)
        return diags

    def apply(self, plan: Plan, settings: ClusterSettings, root: Path, *,
              resolve_secret: Callable[[Change, EntityRef], Secret], audit: AuditFields, audit_log: Path | None,
              progress: Callable[[int, int], None] | None) -> ApplyResult:
        from reconciler.zk.audit import AuditInfo, audit_record  # the apply path only (the audit entry's form)
        from reconciler.zk.write import ApplyResult

        cluster = settings.cluster
        refuse_plaintext_passwords(plan, cluster)
        ops = operations(plan, resolve_secret)
        with kraft_admin(cluster, root) as admin:
            stale = stale_changes(admin, plan)
            if stale:
                raise ConflictError(f"cluster {plan.cluster}: the cluster changed since the plan was made; nothing was "
                                    "written: plan again\n  " + "\n  ".join(stale[:20]))
            refused = validate(admin, ops)
            if refused:
                raise KraftApplyError(f"cluster {plan.cluster}: the cluster refuses the plan (validateOnly); nothing "
                                      "was written", as_errors(refused))
            if progress is not None:
                progress(0, 1)
            written = write(admin, plan, ops)
            if progress is not None:
                progress(1, 1)
        info = AuditInfo(audit.plan_id, audit.cluster, plan.revision, audit.user, audit.time)
        counts = plan.counts
        record = audit_record(info, {"add": counts.add, "change": counts.change, "remove": counts.remove,
                                     "topicsCreated": counts.topics_created,
                                     "partitionsAdded": counts.partitions_added}, "applied",
                              passwords=ops.passwords)
        record["backend"] = "kraft"
        if audit_log is not None:
            audit_log.parent.mkdir(parents=True, exist_ok=True)
            with audit_log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n")
        return ApplyResult(written.entities, 0, written.topics_created, written.partitions_added, 1,
                           None if audit_log is None else str(audit_log))


KRAFT = KraftBackend()
_CONFORMS: Backend = KRAFT  # mypy checks the seam's protocol here
