"""The plan use case, joining the adapters to the pure core (its sibling `reconciler.apply` executes plans):

manifests -> DesiredState ─────┐
the backend -> LiveState ──────┴─ secret verdicts, live rules -> diff -> risk -> Plan -> apply (exactly that plan)

The backend is chosen once from the cluster's spec (`backends.backend_for`: ZooKeeper or KRaft); nothing here
asks which one it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from reconciler.backend import Connection
from reconciler.backends import backend_for
from reconciler.brokers.admin import BrokerAdminError
from reconciler.brokers.reassign import admin_spec_of, reassign_admin
from reconciler.diff import build_plan
from reconciler.errors import Diagnostic, ReconcilerError, ValidationError, has_errors
from reconciler.manifests.policy import planned_diagnostics
from reconciler.manifests.validate import load_and_validate
from reconciler.model import BrokerRegistration, ClusterSpec, DesiredState, LiveState, frozen_map
from reconciler.plan import Plan
from reconciler.plan import with_diagnostics as plan_with_diagnostics
from reconciler.progress import NO_PROGRESS, Progress
from reconciler.reassign import PlacementError, facts_needed, requested_moves
from reconciler.render.common import plan_totals, summary
from reconciler.risk import annotate
from reconciler.rules.live import check_live
from reconciler.secrets.compare import TrustedSecret
from reconciler.secrets.rotation import rotation_warnings

log = logging.getLogger(__name__)


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ClusterPlan:
    plan: Plan
    desired: DesiredState
    diagnostics: tuple[Diagnostic, ...]


def plan_against(
    desired: DesiredState, live: LiveState, root: Path, revision: str | None,
    trusted_secret: TrustedSecret | None = None, judged_as: ClusterSpec | None = None,
) -> ClusterPlan:
    """Pure planning once live state is read (used by `plan`, `reconcile` and tests). `trusted_secret`: which
    secret references may be resolved (a pull request's plan: only those of its base revision). `judged_as`: the
    cluster (name, labels) the policies select by, when not `desired`'s own (a pull request: the base's)."""
    backend = backend_for(desired.cluster)
    secrets = backend.compare_secrets(desired, live, root, trusted_secret)
    diags = check_live(desired, live)
    diags.extend(Diagnostic("error", problem, desired.cluster.source) for problem in secrets.problems)
    plan, problems = build_plan(  # the id is computed once, of the final plan (below)
        desired, live, secret_states=secrets.states, revision=revision, created_at=now_utc(), with_id=False
    )
    diags.extend(problems)
    # the policies of `root`: in PR mode the base's, selecting by the base's name and labels
    diags.extend(planned_diagnostics(root, desired, live, plan, judged_as))
    plan = annotate(plan, desired, live, with_id=False)
    store = backend.plan_warnings(plan, desired, live)
    warnings = tuple(sorted(set(plan.warnings) | set(secrets.warnings) | set(store)
                            | set(rotation_warnings(plan, desired))))
    plan = replace(plan, warnings=warnings, kafka_version=desired.cluster.kafka_version,
                   verified_passwords=tuple(sorted(secrets.verified)))
    plan = plan_with_diagnostics(plan, diags).with_id()  # its warnings travel with it (the PR comment, `show`)
    return ClusterPlan(plan, desired, tuple(diags))


def empty_live_state(cluster: ClusterSpec) -> LiveState:
    """A cluster with nothing in it but its declared brokers (registered without endpoints): what a cluster new in
    a pull request is planned against, and what its first apply may write (`ownership.beyond_empty`). Its ACLs
    are read as empty, never "not read": every grant is shown."""
    return LiveState(cluster.name,
                     brokers=frozen_map({b: BrokerRegistration(b, (), frozen_map()) for b in cluster.brokers}),
                     topics=frozen_map(), entities=frozen_map(), acls=frozen_map())


def empty_cluster_changes(desired: DesiredState, root: Path, revision: str | None) -> Plan:
    """What `plan_against(desired, empty_live_state(...), root, revision).plan` writes (its key changes with their
    values, topics created with their settings, ACL entries granted), for the owner check of a first apply
    (`ownership.beyond_empty`), which compares nothing else: the same diff against the same empty cluster with the
    same secret verdicts, without what only rates or reports a plan (live rules, policies, risk, warnings, id)."""
    live = empty_live_state(desired.cluster)
    secrets = backend_for(desired.cluster).compare_secrets(desired, live, root)
    plan, _ = build_plan(desired, live, secret_states=secrets.states, revision=revision, created_at=now_utc(),
                         with_id=False)
    return plan


def with_diagnostics(result: ClusterPlan, extra: Sequence[Diagnostic]) -> ClusterPlan:
    if not extra:
        return result
    return replace(result, plan=plan_with_diagnostics(result.plan, extra), diagnostics=(*result.diagnostics, *extra))


def _notifier(progress: Progress) -> Callable[[str], None] | None:
    """The progress's one-off line on stderr (`note`), when it has one (the command line's does)."""
    note = getattr(progress, "note", None)
    return note if callable(note) else None


def with_placement_facts(connection: Connection, desired: DesiredState, live: LiveState, root: Path) -> LiveState:
    """`live` with what a plan of replica moves needs (reconciler/reassign/): the partitions being reassigned
    (ListPartitionReassignments), the size of each partition that may move (DescribeLogDirs) and the record of the
    reconciler's own reassignment (the backend keeps it). Read only when some partition would move or a
    replication throttle is set (`reassign.facts_needed`, decided without a request)."""
    if not facts_needed(desired, live):
        return live
    record = connection.reassignment_record()
    if admin_spec_of(desired.cluster) is None:  # the plan says moves need the Admin API
        return replace(live, reassignment_record=record)
    try:
        with reassign_admin(desired.cluster, root) as admin:
            moving = admin.reassignments()
            topics = {t for t, _ in moving} | {name for name, found in requested_moves(desired, live, moving)
                                               if not isinstance(found, PlacementError)}
            sizes = admin.leader_sizes(topics)
    except ReconcilerError:
        raise
    except Exception as exc:  # kafka-python's errors: by type, never with a credential
        raise BrokerAdminError(f"cluster {desired.cluster.name}: reading the partitions being reassigned and their "
                               f"sizes failed ({type(exc).__name__})") from None
    return replace(live, reassignments=moving, partition_sizes=sizes, reassignment_record=record)


def read_cluster(desired: DesiredState, root: Path, progress: Progress = NO_PROGRESS,
                 entity_types: frozenset[str] | None = None, checks: list[Diagnostic] | None = None) -> LiveState:
    """The live state a plan of `desired` needs (or every entity of `entity_types`), read by the cluster's
    backend as one progress phase. `checks` collects what the same read finds about the cluster besides."""
    backend = backend_for(desired.cluster)
    with progress.phase(f"{desired.cluster.name}: read {backend.label(desired.cluster)}") as phase:
        with backend.connect(desired.cluster, root, notify=_notifier(progress)) as connection:
            live = connection.read(desired, entity_types=entity_types, progress=phase.update, checks=checks)
            live = with_placement_facts(connection, desired, live, root)
        phase.done(backend.read_summary(live))
    return live


def with_backend_checks(result: ClusterPlan, connection: Connection, desired: DesiredState) -> ClusterPlan:
    """The backend's plan-time checks (KRaft: the cluster's own validation, validateOnly) of what the plan
    writes."""
    return with_diagnostics(result, connection.check(result.plan, desired))


def plan_cluster(
    desired: DesiredState, root: Path, revision: str | None = None, progress: Progress = NO_PROGRESS
) -> ClusterPlan:
    """Read, plan and check one cluster on one connection (each step a progress phase)."""
    checks: list[Diagnostic] = []
    backend = backend_for(desired.cluster)
    with ExitStack() as stack:
        with progress.phase(f"{desired.cluster.name}: read {backend.label(desired.cluster)}") as phase:
            connection = stack.enter_context(backend.connect(desired.cluster, root, notify=_notifier(progress)))
            live = connection.read(desired, progress=phase.update, checks=checks)
            live = with_placement_facts(connection, desired, live, root)
            phase.done(backend.read_summary(live))
        with progress.phase(f"{desired.cluster.name}: plan") as phase:
            result = with_backend_checks(with_diagnostics(plan_against(desired, live, root, revision), checks),
                                         connection, desired)
            errors = sum(d.severity == "error" for d in result.diagnostics)
            phase.done(f"{errors} error(s), no plan" if errors else
                       summary(plan_totals(result.plan)) if not result.plan.is_empty else "no changes")
    return result


def load_desired(root: Path, clusters: Sequence[str]) -> tuple[dict[str, DesiredState], list[Diagnostic]]:
    """Validated desired states; raises ValidationError (every problem) when any is invalid."""
    _, states, diags = load_and_validate(root, clusters)
    if has_errors(diags):
        raise ValidationError(diags)
    return states, diags
