"""`reconciler plan` and `reconciler apply`: what would change, then exactly that change."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.cli.context import (
    Context,
    allow_no_brokers_option,
    lock_timeout_option,
    notify,
    plan_all,
    print_plans,
    read_plan_file,
)
from reconciler.errors import (
    CANCELLED,
    ApplyInterrupted,
    ExitCode,
    Interrupted,
    NotTakenError,
    ReconcilerError,
)

if TYPE_CHECKING:
    from reconciler.model import ClusterSettings, ClusterSpec
    from reconciler.plan import Plan
    from reconciler.reassign.outcome import Verification
    from reconciler.reassigning import MoveOptions
    from reconciler.secrets.check import NamedSecrets


@click.command()
@click.argument("clusters", nargs=-1)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan file (JSON) here.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "github"]), default="text",
              show_default=True, help="github: text plus workflow annotations; markdown: one PR comment.")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when the plan has changes (0: none, 1: error).")
@click.option("--revision", help="Git revision recorded in the plan (default: none).")
@click.option("--git-base", help="Plan only the clusters changed since the merge base with REV; records HEAD.")
@click.option("--inventory", type=click.Path(file_okay=False, path_type=Path),
              help="With --git-base --format markdown: add the fleet impact summary from this inventory.")
@click.pass_obj
def plan(
    obj: Context, clusters: tuple[str, ...], out: Path | None, fmt: str, detailed_exitcode: bool,
    revision: str | None, git_base: str | None, inventory: Path | None,
) -> None:
    """Read live state and show what apply would change (reads only; never writes)."""
    if out is not None:  # a failed plan must not leave an older (or a committed) plan file to be taken for it
        from reconciler.artefacts import discard_stale

        out = discard_stale(out, roots=[obj.repo])
    if git_base is not None or fmt == "github":
        from reconciler.cli.gitops import plan_git_base

        plan_git_base(obj, clusters, git_base, out, fmt, detailed_exitcode, inventory, revision)
        return
    results = plan_all(obj, clusters, revision)
    plans = [r.plan for r in results]
    if out is not None:
        from reconciler.artefacts import write_atomically
        from reconciler.render.json import render_plan_file

        write_atomically(out, render_plan_file(plans), roots=[obj.repo])
        click.echo(f"plan written to {out}", err=True)
    print_plans(obj, plans, fmt)
    if detailed_exitcode and any(not p.is_empty for p in plans):
        raise SystemExit(ExitCode.CHANGES)


def _clean_revision(repo: Path, allow_dirty: bool) -> str | None:
    """The git revision to record when planning and applying from a work tree; a dirty tree is refused
    (what is applied must be what is committed). Outside git there is no revision to record."""
    from reconciler.gitops import GitError, require_clean

    try:
        revision = require_clean(repo, allow_dirty)  # DirtyTreeError (a refusal) propagates
    except GitError:
        return None
    return None if revision is None else revision.recorded


@click.command()
@click.argument("target", nargs=-1)
@click.option("--auto-approve", is_flag=True, help="Apply without asking (for CI and scheduled runs).")
@click.option("--allow-destructive", is_flag=True, help="Allow destructive changes and more than maxDeletes removals.")
@click.option("--audit-log", type=click.Path(dir_okay=False, path_type=Path), help="JSON-lines audit log file.")
@click.option("--allow-dirty", is_flag=True, help="Plan and apply even with uncommitted manifest changes.")
@click.option("--allow-secret-rotation", is_flag=True,
              help="Re-encode passwords stored with passwordEncoder.oldSecret (brokers restarted with both first).")
@click.option("--allow-downgrade", is_flag=True,
              help="Send lowered feature levels (kind Features) as safe downgrades (UpdateFeatures).")
@click.option("--verify", is_flag=True,
              help="After the writes, ask every broker (Admin API, spec.adminClient) until it reports each change; "
                   "exit 4 if one is not taken or a broker does not answer.")
@click.option("--verify-timeout", default="30s", show_default=True, metavar="DURATION",
              help="How long --verify keeps asking (e.g. 30s, 2m).")
@click.option("--verify-format", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True, help="text: on stderr only; markdown/json: the verification report on stdout.")
@click.option("--max-moving-partitions", type=click.IntRange(min=1), metavar="N",
              help="Replica moves: at most N partitions moving at once (default: spec.reassignment, else 50).")
@click.option("--max-moving-bytes", type=click.IntRange(min=1), metavar="BYTES",
              help="Replica moves: at most BYTES being copied at once (default: spec.reassignment, else unbounded).")
@click.option("--reassign-wait", metavar="DURATION",
              help="How long to wait for replica moves (e.g. 30m); default: until done. 0: start them and return "
                   "(the next apply or reconcile continues them and removes the throttles).")
@allow_no_brokers_option
@lock_timeout_option
@click.pass_obj
def apply(
    obj: Context, target: tuple[str, ...], auto_approve: bool, allow_destructive: bool, audit_log: Path | None,
    allow_dirty: bool, allow_secret_rotation: bool, allow_downgrade: bool, verify: bool, verify_timeout: str,
    verify_format: str, max_moving_partitions: int | None, max_moving_bytes: int | None, reassign_wait: str | None,
    allow_no_brokers: bool, lock_timeout: float | None,
) -> None:
    """Apply a plan file, or plan and apply CLUSTER…; exit 3 on a stale plan or a held lock."""
    from reconciler.apply import default_audit_log, guard, load_apply_settings, named_for
    from reconciler.render.text import apply_summary
    from reconciler.secrets.check import plan_secret_problems

    states: Mapping[str, ClusterSettings]
    if len(target) == 1 and target[0].endswith(".json") and Path(target[0]).is_file():
        plans = read_plan_file(Path(target[0]))
        states = load_apply_settings(obj.repo, [p.cluster for p in plans])
    else:
        results = plan_all(obj, target, _clean_revision(obj.repo, allow_dirty))
        plans = [r.plan for r in results]
        states = {r.plan.cluster: r.desired for r in results}
    pending = [p for p in plans if not p.is_empty]
    if not pending:
        print_plans(obj, plans, "text", err=True)
        click.echo("nothing to apply", err=True)
        click.echo(apply_summary([]), err=True)
        return
    for p in pending:
        guard(p, states[p.cluster], allow_destructive, allow_secret_rotation, allow_downgrade)
    # a plan's secret references must be the ones the manifests name for their keys now (a plan file is data)
    named = {p.cluster: named_for(p, states[p.cluster], obj.repo) for p in pending}
    missing = [d for p in pending for d in plan_secret_problems(p, states[p.cluster], obj.repo, named[p.cluster])]
    if missing:  # all of them, before anything is written
        raise ReconcilerError(f"{len(missing)} problem(s) with the passwords to apply: nothing was written", missing)
    if verify:  # that the writes can be verified is known before the first one (settings, a broker answering)
        check_verifiable(obj, pending, states, verify_timeout)
    if not auto_approve:
        print_plans(obj, pending, "text", err=True)
        if not sys.stdin.isatty():
            raise ReconcilerError(
                "refusing to apply without confirmation: stdin is not a terminal (use --auto-approve)"
            )
        answer = click.prompt(f"Apply these changes to {len(pending)} cluster(s)? Only 'yes' is accepted",
                              default="", show_default=False, err=True)
        if answer.strip() != "yes":
            click.echo("apply cancelled", err=True)
            raise SystemExit(ExitCode.ERROR)
    log_path = audit_log or default_audit_log()
    moves = move_options(max_moving_partitions, max_moving_bytes, reassign_wait)
    _write_all(obj, pending, states, log_path, named, allow_destructive=allow_destructive,
               allow_secret_rotation=allow_secret_rotation, lock_timeout=lock_timeout,
               allow_no_brokers=allow_no_brokers or None, moves=moves, allow_downgrade=allow_downgrade)
    click.echo(apply_summary(pending), err=True)
    if verify and CANCELLED.is_set():  # a signal during the last batch: everything is applied, nothing verified
        raise ApplyInterrupted("interrupted after every plan was applied completely; --verify was not run "
                               "(exit 1: nothing proves the brokers took the changes)")
    if verify:
        verify_applied(obj, pending, states, verify_timeout, verify_format, log_path)


def move_options(max_partitions: int | None, max_bytes: int | None, wait: str | None) -> MoveOptions | None:
    """apply's pacing of replica moves from its options; None without any (the plan's bounds, waiting until done:
    what `MoveOptions()` says, and the replica-move modules are not imported for an apply that has none)."""
    if max_partitions is None and max_bytes is None and wait is None:
        return None
    from reconciler.apply import duration_seconds
    from reconciler.reassigning import MoveOptions

    try:
        wait_s = None if wait is None else duration_seconds(wait)
    except ValueError as exc:
        raise ReconcilerError(f"--reassign-wait {wait!r}: {exc}") from None
    return MoveOptions(max_partitions=max_partitions, max_bytes=max_bytes, wait_s=wait_s)


def _write_all(obj: Context, pending: Sequence[Plan], states: Mapping[str, ClusterSettings], log_path: Path,
               named: Mapping[str, NamedSecrets], *, allow_destructive: bool, allow_secret_rotation: bool,
               lock_timeout: float | None, allow_no_brokers: bool | None = None,
               moves: MoveOptions | None = None, allow_downgrade: bool = False) -> None:
    """Each plan applied in turn; a signal stops between batches, and the report says what was committed."""
    from reconciler.apply import apply_cluster_plan

    progress = obj.progress()
    for index, p in enumerate(pending, 1):
        if CANCELLED.is_set():  # a signal while the previous cluster's last batch was being committed
            raise _interrupted_apply(None, p.cluster, pending[: index - 1], pending[index - 1:])
        try:
            where = backend_label(states[p.cluster].cluster)
            with progress.numbered(index, len(pending)).phase(f"{p.cluster}: write {where}") as phase:
                result = apply_cluster_plan(p, states[p.cluster], obj.repo, allow_destructive=allow_destructive,
                                            allow_secret_rotation=allow_secret_rotation, audit_log=log_path,
                                            progress=phase.update, lock_timeout_s=lock_timeout, notify=notify,
                                            named=named[p.cluster], stop=CANCELLED.is_set,
                                            # an operator's apply is the reviewed first plan of a cluster
                                            # (ownership.py): it may take over a target that holds state
                                            allow_no_brokers=allow_no_brokers, moves=moves,
                                            allow_downgrade=allow_downgrade, adopt=True)
                phase.done(f"applied plan {p.plan_id}: {result.entities_written} entities, "
                           f"{result.topics_created} topics created, {result.partitions_added} partitions added "
                           f"in {result.batches} batch(es)")
            if result.reassignment is not None:
                click.echo(f"{p.cluster}: {result.reassignment.text()}", err=True)
        except (KeyboardInterrupt, Interrupted) as exc:
            raise _interrupted_apply(exc, p.cluster, pending[: index - 1], pending[index:]) from None


def verify_moves(obj: Context, plan: Plan, settings: ClusterSettings) -> Verification:
    """`--verify` of a plan's replica moves: each moved partition at its target with every replica in sync, and
    no throttle the reconciler set left behind (reassigning.verify_reassignment)."""
    from reconciler.backends import backend_for
    from reconciler.brokers.reassign import reassign_admin
    from reconciler.model import DesiredState
    from reconciler.reassigning import verify_reassignment

    assert plan.reassignment is not None
    cluster = settings.cluster
    desired = settings if isinstance(settings, DesiredState) else None
    with backend_for(cluster).connect(cluster, obj.repo) as connection, reassign_admin(cluster, obj.repo) as admin:
        return verify_reassignment(plan.reassignment, desired, connection, admin)


def backend_label(cluster: ClusterSpec) -> str:
    """What an apply writes to: `ZooKeeper host:port/chroot`, or a KRaft cluster's brokers (reconciler/backend.py)."""
    from reconciler.backends import backend_for

    return backend_for(cluster).label(cluster)


def _interrupted_apply(exc: BaseException | None, cluster: str, applied: Sequence[Plan],
                       unstarted: Sequence[Plan]) -> ApplyInterrupted:
    """An interrupted `apply`'s report: the cluster's own (what was and was not committed, from the apply), or
    that nothing was written to it; then the clusters applied before it and those not started."""
    if exc is None:
        lines = ["apply interrupted between clusters"]
    elif isinstance(exc, ApplyInterrupted | Interrupted):
        lines = [exc.message]
    else:  # before its first batch (connecting, waiting for the lock, reading back): nothing of it written
        lines = [f"cluster {cluster}: apply interrupted before writing anything to it",
                 f"  next: `reconciler plan {cluster}` and `reconciler apply {cluster}`"]
    if applied:
        lines.append("  applied completely before: " + ", ".join(p.cluster for p in applied))
    if unstarted:
        lines.append("  not started: " + ", ".join(p.cluster for p in unstarted))
    return ApplyInterrupted("\n".join(lines))


def check_verifiable(obj: Context, plans: Sequence[Plan], states: Mapping[str, ClusterSettings],
                     timeout: str) -> None:
    """`--verify`'s preconditions for every cluster, before any write: its Admin API settings and a broker that
    answers within --verify-timeout. Every problem at once; nothing written."""
    from reconciler.apply import duration_seconds
    from reconciler.brokers.verify import verify_preconditions

    problems = []
    for p in plans:
        try:
            verify_preconditions(states[p.cluster].cluster, obj.repo, duration_seconds(timeout))
        except ReconcilerError as exc:
            problems.append(exc.message)
    if problems:
        raise ReconcilerError("--verify cannot run, so nothing was written (fix it, or apply without --verify):\n  "
                              + "\n  ".join(problems))


def verify_applied(obj: Context, plans: Sequence[Plan], states: Mapping[str, ClusterSettings], timeout: str,
                   output: str, audit_log: Path) -> None:
    """`--verify`: each applied plan asked of its brokers; the report on stderr (and stdout in markdown/json),
    a line in the audit log, exit 4 unless every broker took every change."""
    from reconciler.apply import duration_seconds
    from reconciler.brokers.verify import record_verification, verify_plan
    from reconciler.render.text import apply_summary
    from reconciler.verify.report import markdown

    progress = obj.progress()
    reports = []
    failed_moves: list[str] = []
    for index, p in enumerate(plans, 1):
        try:
            report = verify_plan(p, states[p.cluster].cluster, obj.repo, timeout_s=duration_seconds(timeout),
                                 progress=progress.numbered(index, len(plans)))
        except ReconcilerError as exc:  # the brokers answered before the writes, not after: written, unverified
            written = "; ".join(f"cluster {q.cluster}, plan {q.plan_id}: "
                                + apply_summary([q]).removeprefix("Apply complete: ").rstrip(".") for q in plans)
            raise NotTakenError(f"written, but not verified: {exc.message}\n  what was written: {written}\n  "
                                "check the brokers, then re-run the apply with --verify") from None
        record_verification(audit_log, p, report)
        reports.append(report)
        for line in report.text_lines():
            click.echo(line, err=True)
        if p.reassignment is not None:
            moved = verify_moves(obj, p, states[p.cluster])
            for line in moved.lines():
                click.echo(f"{p.cluster}: {line}", err=True)
            if not moved.ok:
                failed_moves.append(p.cluster)
    if output == "json":
        click.echo(json.dumps({"verifications": [r.to_json() for r in reports]}, indent=2, sort_keys=True))
    elif output == "markdown":
        click.echo(markdown(reports))
    if failed_moves:
        raise NotTakenError(f"replica moves not verified on {', '.join(failed_moves)}: a moved partition is not at "
                            "its target with every replica in sync, or a replication throttle was left behind (see "
                            "above)")
    failed = [r for r in reports if not r.ok]
    if failed:
        raise NotTakenError(f"{len(failed)} cluster(s) not verified: written, but not every broker reports "
                            "every change (see above); re-run with --verify after checking the brokers' logs")
