"""One reconcile pass: validate, then per cluster (in parallel, each isolated from the others) read live state,
report drift since the last apply, plan, and apply within policy.

A cluster's failure (unreachable ZooKeeper, a KRaft controller, a refused destructive plan, a lock held by
another apply, invalid manifests) becomes its outcome and never stops the others. `stop` is checked before a
cluster starts: a cluster in progress always finishes (SIGTERM handling in the CLI sets it).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from reconciler.apply import apply_cluster_plan
from reconciler.backend import AuditEntry, Connection, last_apply, read_types
from reconciler.backends import backend_for
from reconciler.brokers.verify import record_verification, verify_plan, verify_preconditions
from reconciler.errors import Diagnostic, Interrupted, ReconcilerError, RefusedError, check_cancelled, has_errors
from reconciler.gitops import Revision
from reconciler.gitops.drift import DriftReport, drift_report
from reconciler.gitops.fanout import Phases, fan_out
from reconciler.gitops.history import History
from reconciler.manifests.policy import live_violations
from reconciler.manifests.validate import cluster_shares, cluster_target, load_and_validate, target_conflicts
from reconciler.model import DesiredState, LiveState
from reconciler.plan import Plan
from reconciler.reassigning import MoveOptions
from reconciler.units import counted
from reconciler.verify.report import VerifyReport
from reconciler.workflow import ClusterPlan, now_utc, plan_against, with_backend_checks, with_placement_facts

log = logging.getLogger(__name__)

Status = Literal["in-sync", "applied", "not-taken", "planned", "refused", "failed", "skipped"]
# "not-taken": written, but --verify could not prove that every broker took every change
FAILING: frozenset[str] = frozenset({"failed", "refused", "not-taken"})


@dataclass(frozen=True, slots=True)
class Options:
    dry_run: bool = False
    allow_destructive: bool = False
    parallel: int = 4
    audit_log: Path | None = None
    user: str | None = None  # who audit entries name (None: RECONCILER_USER or login@host)
    lock_timeout_s: float | None = None  # --lock-timeout (None: RECONCILER_LOCK_TIMEOUT, else per cluster)
    notify: Callable[[str], None] | None = None  # a line when an apply waits for or takes over the lock
    allow_secret_rotation: bool = False  # re-encode passwords stored with passwordEncoder.oldSecret
    jobs: int = 1  # worker processes for a large fleet (0: one per core; 1: this process only)
    verify_timeout_s: float | None = None  # --verify: ask the brokers after each apply (None: do not)
    allow_no_brokers: bool | None = None  # --allow-no-brokers (None: RECONCILER_ALLOW_NO_BROKERS, else refused)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a pass reads the manifests, and the git repository that holds their history (for drift)."""

    root: Path
    revision: Revision | None
    history: Path | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    cluster: str
    status: Status
    seconds: float = 0.0
    plan: Plan | None = None
    drift: DriftReport | None = None
    error: str | None = None
    audit_path: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    verification: VerifyReport | None = None  # --verify: what the brokers reported after the apply
    # kind Policy over ZooKeeper as read before the apply (drift against the team's rules): one line each
    policy_drift: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status in FAILING


@dataclass(frozen=True, slots=True)
class PassResult:
    revision: Revision | None
    started: str
    finished: str
    outcomes: tuple[Outcome, ...] = ()
    problems: tuple[Diagnostic, ...] = ()  # errors not attributable to one cluster
    error: str | None = None  # the pass could not run at all (fetch failed, no clusters/)

    @property
    def failures(self) -> int:
        return sum(o.failed for o in self.outcomes) + (self.error is not None)


def _cluster_of(diag: Diagnostic) -> str:
    """`clusters/<name>/…` -> name; "" for fleet.yaml and sourceless problems (they concern every cluster)."""
    if diag.source is None:
        return ""
    parts = Path(diag.source.file).parts
    return parts[1] if len(parts) > 2 and parts[0] == "clusters" else ""


class _Runner:
    def __init__(self, source: Source, options: Options, history: History) -> None:
        self.source, self.options, self.history = source, options, history
        self.revision = source.revision.recorded if source.revision else None

    def run(self, name: str, desired: DesiredState) -> Outcome:
        started = time.monotonic()
        try:
            outcome = self._reconcile(name, desired)
        except Interrupted:  # a stop request reached a safe point before anything was written
            outcome = Outcome(name, "skipped", error="stopping: interrupted before writing")
        except RefusedError as exc:
            outcome = Outcome(name, "refused", error=exc.message)
        except ReconcilerError as exc:
            outcome = Outcome(name, "failed", error=exc.message, diagnostics=exc.diagnostics)
        except Exception as exc:  # isolation: a bug or an unexpected library error fails this cluster only
            log.debug("cluster %s failed", name, exc_info=True)
            outcome = Outcome(name, "failed", error=f"unexpected {type(exc).__name__}: {exc}")
        return _timed(outcome, started)

    def _reconcile(self, name: str, desired: DesiredState) -> Outcome:
        """Read, plan (with the backend's own checks), date drift since the last apply and apply, all on one
        connection of the cluster's backend."""
        root = self.source.root
        with backend_for(desired.cluster).connect(desired.cluster, root) as connection:
            entries = connection.audit_entries()
            applied = last_apply(entries or [])
            before = self.history.desired(applied.revision, name) if applied is not None else None
            types = read_types(desired) | (read_types(before[0]) if before else frozenset())
            live = with_placement_facts(connection, desired, connection.read(desired, entity_types=types), root)
            result = with_backend_checks(plan_against(desired, live, root, self.revision), connection, desired)
            # the manifests applied last are usually these very ones (a readable commit, not a dirty tree):
            # their drift plan is this plan
            same = before is not None and applied is not None and applied.revision == self.revision
            try:
                drift = drift_report(connection, name, entries, live,
                                     (lambda _: result.plan) if same else _plan_since(before, live))
            except Exception as exc:  # the report is information: never fail the cluster for it
                drift = DriftReport(name, applied, note=f"drift report failed: {type(exc).__name__}: {exc}")
            return replace(self._apply(name, desired, result, drift, connection),
                           policy_drift=policy_drift(root, desired, live))

    def _apply(self, name: str, desired: DesiredState, result: ClusterPlan, drift: DriftReport,
               connection: Connection) -> Outcome:
        """Apply the plan within policy, on the session that planned it."""
        if has_errors(result.diagnostics):
            errors = sum(d.severity == "error" for d in result.diagnostics)
            return Outcome(name, "failed", plan=result.plan, drift=drift, diagnostics=result.diagnostics,
                           error=f"nothing applied: {counted(errors, 'error', 'errors')} in its plan")
        plan = result.plan
        if plan.is_empty:
            return Outcome(name, "in-sync", plan=plan, drift=drift, diagnostics=result.diagnostics)
        if self.options.dry_run:
            return Outcome(name, "planned", plan=plan, drift=drift, diagnostics=result.diagnostics)
        check_cancelled()  # a stop request since planning: no apply starts
        if self.options.verify_timeout_s is not None:  # --verify: that it can run is known before any write
            try:
                verify_preconditions(desired.cluster, self.source.root, self.options.verify_timeout_s)
            except ReconcilerError as exc:
                return Outcome(name, "failed", plan=plan, drift=drift, error=f"nothing applied: {exc.message}")
        try:
            applied_result = apply_cluster_plan(
                plan, desired, self.source.root, allow_destructive=self.options.allow_destructive,
                allow_secret_rotation=self.options.allow_secret_rotation,
                audit_log=self.options.audit_log, user=self.options.user,
                lock_timeout_s=self.options.lock_timeout_s, notify=self.options.notify,
                connection=connection, allow_no_brokers=self.options.allow_no_brokers,
                moves=MoveOptions(wait_s=0.0),  # a pass starts replica moves; the next ones continue, then clean up
            )
        except Interrupted:
            raise
        except RefusedError as exc:
            return Outcome(name, "refused", plan=plan, drift=drift, error=exc.message)
        except ReconcilerError as exc:
            return Outcome(name, "failed", plan=plan, drift=drift, error=exc.message)
        applied = Outcome(name, "applied", plan=plan, drift=drift, audit_path=applied_result.audit_path,
                          diagnostics=result.diagnostics)
        return applied if self.options.verify_timeout_s is None else self._verify(applied, desired)

    def _verify(self, applied: Outcome, desired: DesiredState) -> Outcome:
        """`--verify`: the brokers asked after the apply; a line in the audit log; not-taken unless all took it."""
        assert applied.plan is not None
        try:
            report = verify_plan(applied.plan, desired.cluster, self.source.root,
                                 timeout_s=self.options.verify_timeout_s or 30.0)
        except ReconcilerError as exc:
            return replace(applied, status="not-taken", error=f"applied, but not verified: {exc.message}")
        if self.options.audit_log is not None:
            record_verification(self.options.audit_log, applied.plan, report)
        if report.ok:
            return replace(applied, verification=report)
        problems = report.problems()
        return replace(applied, status="not-taken", verification=report,
                       error=f"applied, but {len(problems)} problem(s) on the brokers: {problems[0].line}"
                             + (" …" if len(problems) > 1 else ""))


def policy_drift(root: Path, desired: DesiredState, live: LiveState) -> tuple[str, ...]:
    """The policies' violations in ZooKeeper as it is (every live entity, declared or not): drift from the
    team's rules, reported and never applied (manifests/policy.py)."""
    return tuple(f"{v.severity}: {v.entity}: policy {v.policy.name}, rule {v.rule.id}: {v.detail}"
                 for v in live_violations(root, desired, live))


def _plan_since(
    before: tuple[DesiredState, Path] | None, live: LiveState
) -> Callable[[AuditEntry], Plan | None]:
    """The plan from the manifests applied last to the live state now (drift), when they can be read."""

    def plan_since(entry: AuditEntry) -> Plan | None:
        return None if before is None else plan_against(before[0], live, before[1], entry.revision).plan

    return plan_since


def _timed(outcome: Outcome, started: float) -> Outcome:
    return replace(outcome, seconds=round(time.monotonic() - started, 3))


def run_pass(
    source: Source,
    only: Sequence[str] = (),
    options: Options = Options(),
    stop: threading.Event | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> PassResult:
    """Reconcile every cluster of `source` (or `only` those); never raises for one cluster's failure. A large
    fleet goes to worker processes (`Options.jobs`, `_run_in_workers`), with the same outcomes."""
    started = now_utc()
    stop = stop or threading.Event()
    shares = cluster_shares(source.root, only, options.jobs)
    if shares is not None:
        outcomes, shared = _run_in_workers(source, shares, options, stop, on_outcome, only)
        return PassResult(source.revision, started, now_utc(), outcomes, shared)
    repo, states, diags = load_and_validate(source.root, only)
    names = sorted(set(repo.clusters) | set(states))
    shared = shared_errors(diags)
    if not names:
        return PassResult(source.revision, started, now_utc(), problems=tuple(diags),
                          error="no cluster to reconcile" + (f": {shared[0].message}" if shared else ""))
    outcomes = run_clusters(source, names, states, diags, shared, options, stop, on_outcome)
    return PassResult(source.revision, started, now_utc(), outcomes, shared)


def shared_errors(diags: Sequence[Diagnostic]) -> tuple[Diagnostic, ...]:
    """The errors that concern every cluster (fleet.yaml, the repository's layout): each fails every cluster."""
    return tuple(d for d in diags if d.severity == "error" and _cluster_of(d) == "")


def run_clusters(
    source: Source, names: Sequence[str], states: Mapping[str, DesiredState], diags: Sequence[Diagnostic],
    shared: tuple[Diagnostic, ...], options: Options, stop: threading.Event,
    on_outcome: Callable[[Outcome], None] | None,
) -> tuple[Outcome, ...]:
    """Each of `names` in turn on `options.parallel` threads; `diags` holds at least each cluster's own."""
    with _workdir() as workdir:
        history = History(source.history, (source.root, source.revision), states, workdir)
        runner = _Runner(source, options, history)

        by_cluster: dict[str, list[Diagnostic]] = {}
        for d in diags:
            by_cluster.setdefault(_cluster_of(d), []).append(d)

        def one(name: str) -> Outcome:
            own = tuple(by_cluster.get(name, ()))
            if stop.is_set():
                outcome = Outcome(name, "skipped", error="stopping: not started")
            elif shared or has_errors(own) or name not in states:
                problems = shared + tuple(d for d in own if d.severity == "error")
                outcome = Outcome(name, "failed", diagnostics=problems,
                                  error=f"invalid manifests: {len(problems)} error(s)"
                                  + (" in clusters/fleet.yaml or the repository" if shared else ""))
            else:
                log.info("reconciling cluster %s", name)
                outcome = runner.run(name, states[name])
            if on_outcome is not None:
                on_outcome(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, options.parallel), thread_name_prefix="reconcile") as pool:
            return tuple(pool.map(one, names))


def _run_in_workers(
    source: Source, shares: list[list[str]], options: Options, stop: threading.Event,
    on_outcome: Callable[[Outcome], None] | None, only: Sequence[str] = (),
) -> tuple[tuple[Outcome, ...], tuple[Diagnostic, ...]]:
    """`run_pass` on one forked worker per share (gitops/fanout.py): each loads and validates its clusters,
    the parent merges the errors that concern every cluster and, for the whole repository, finds the directories
    that share a target (as `run_pass` finds both in one process), then each worker reconciles its clusters on
    its share of `options.parallel` threads."""
    threads = replace(options, parallel=max(1, -(-options.parallel // len(shares))))
    whole = not only  # a whole repository's load refuses two directories naming one target (a share's cannot)

    def prepare(share: Sequence[str]) -> tuple[Any, tuple[list[Diagnostic], dict[str, Any]]]:
        repo, states, diags = load_and_validate(source.root, share)
        targets = {name: cluster_target(state) for name, state in states.items()} if whole else {}
        return (sorted(set(repo.clusters) | set(states)), states, diags), (list(shared_errors(diags)), targets)

    def merge(reports: list[tuple[list[Diagnostic], dict[str, Any]]]) -> tuple[tuple[Diagnostic, ...], ...]:
        conflicts = target_conflicts({name: t for _, targets in reports for name, t in targets.items()})
        shared = {d for found, _ in reports for d in found} | set(shared_errors(conflicts))
        return tuple(sorted(shared, key=Diagnostic.sort_key)), tuple(conflicts)

    def work(kept: Any, verdict: tuple[tuple[Diagnostic, ...], tuple[Diagnostic, ...]], stop: threading.Event,
             emit: Callable[[Any], None]) -> None:
        names, states, diags = kept
        shared, conflicts = verdict
        own = {d for d in conflicts if _cluster_of(d) in states}  # as a whole load finds them, each at its cluster
        run_clusters(source, names, states, sorted(set(diags) | own, key=Diagnostic.sort_key), shared, threads,
                     stop, emit)

    fanned = fan_out(shares, Phases(prepare, merge, work), stop, on_outcome)
    outcomes = {o.cluster: o for o in fanned.results}
    for index in fanned.lost:  # a worker died (killed, out of memory): its unfinished clusters failed
        for name in shares[index]:
            if name not in outcomes:
                outcomes[name] = Outcome(name, "failed", error="the worker process reconciling it ended early")
                if on_outcome is not None:
                    on_outcome(outcomes[name])
    return tuple(outcomes[name] for name in sorted(outcomes)), fanned.verdict[0] if fanned.verdict else ()


@contextmanager
def _workdir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="reconciler-history-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
