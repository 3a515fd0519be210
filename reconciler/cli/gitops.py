"""GitOps commands: `plan --git-base` (its body), `reconcile` and `import`. Registered on the main group by
main.py. Like every command: stdout carries only the artefact, the rest goes to stderr.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from reconciler.childenv import safe_child_environment
from reconciler.cli.context import allow_no_brokers_option, lock_timeout_option, notify
from reconciler.errors import (
    CANCELLED,
    Diagnostic,
    ExitCode,
    ReconcilerError,
    ValidationError,
    has_errors,
    printable,
)

if TYPE_CHECKING:
    from reconciler.cli.context import Context
    from reconciler.gitops.reconcile import Options, PassResult, Source
    from reconciler.plan import Plan
    from reconciler.progress import Progress

IMPACT_TIMEOUT_S = 1800


def github_annotations(diags: Sequence[Diagnostic], plans: Sequence[Plan], prefix: str = "") -> list[str]:
    """`::error`/`::warning` lines: diagnostics, and the risky changes at the manifest lines that cause them."""
    from reconciler.render.github import annotation

    def path(file: str) -> str:
        return f"{prefix}/{file}" if prefix else file

    out: list[str] = []
    for d in diags:
        message = d.message + (f" [{d.key}]" if d.key else "")
        src = d.source
        out.append(annotation(d.severity, message, path(src.file) if src else None, src.line if src else None))
    for p in plans:
        for e in p.entities:
            for c in e.changes:
                if c.risk == "safe" or c.source is None:
                    continue
                reasons = "; ".join(c.reasons) or c.risk
                message = f"{p.cluster} {e.ref.display} {c.key}: {c.risk}: {reasons}"
                out.append(annotation("warning", message, path(c.source.file), c.source.line,
                                      title=f"{c.risk} change"))
    return out


def _impact_markdown(obj: Context, base: str, inventory: Path) -> str | None:
    """The impact job's Markdown summary, when the `impact` command exists (it runs Spark: a subprocess).

    The work tree is the pull request's, and a PR may commit a package named like any module (`reconciler/`,
    `pyspark/`): the child runs isolated (`-I`: no current directory, script directory or PYTHON* variables on
    its path, so only the installed modules load) from a directory of its own, with absolute paths."""
    if importlib.util.find_spec("pyspark") is None:
        click.echo("note: no fleet impact summary: PySpark is not installed (the `impact` extra)", err=True)
        return None
    import subprocess  # here: pr mode alone runs one (17 ms of imports every other command would pay)
    import tempfile

    args = [sys.executable, "-I", "-m", "reconciler", "--repo", str(obj.repo.resolve()), "impact",
            "--git-base", base, "--inventory", str(inventory.resolve()), "--format", "json"]
    try:
        with tempfile.TemporaryDirectory(prefix="reconciler-impact-") as cwd:
            done = subprocess.run(args, capture_output=True, text=True, timeout=IMPACT_TIMEOUT_S, check=False,
                                  cwd=cwd, env=safe_child_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        click.echo(printable(f"warning: fleet impact failed: {exc}"), err=True)
        return None
    if done.returncode not in (0, 2):
        click.echo("\n".join(printable(line) for line in
                             f"warning: fleet impact exited {done.returncode}:\n{done.stderr.strip()}".split("\n")),
                   err=True)
        return None
    return done.stdout


def _impact_parts(found: str | None, diags: list[Diagnostic]) -> tuple[str | None, list[str], list[Diagnostic]]:
    """The impact's JSON as the comment's Markdown, its "Consumers at risk" lines, and `diags` with its
    maxUnreadLoss errors (policy diagnostics: they block as any policy error does)."""
    if not found:
        return None, [], diags
    from reconciler.impact.report import comment_parts

    impact, consumers, errors = comment_parts(json.loads(found))
    return impact, consumers, [*diags, *errors]


def plan_git_base(
    obj: Context, clusters: Sequence[str], base: str | None, out: Path | None, fmt: str,
    detailed_exitcode: bool, inventory: Path | None = None, revision_option: str | None = None,
) -> None:
    """`plan --git-base BASE`: plan only the clusters the branch (the work tree against its merge base with
    BASE) changes, reading only their ZooKeepers, and record HEAD's revision in each plan. Also `plan
    --format github` without a base (the given or all clusters)."""
    from reconciler.cli.context import emit_diagnostics, print_plans
    from reconciler.gitops import ChangeSet, changed_clusters, current_revision, open_repo
    from reconciler.manifests.repo import discover
    from reconciler.render.pr_comment import render_comment

    if base is not None:
        changes = changed_clusters(obj.repo, base)
        head = current_revision(obj.repo)
        revision: str | None = revision_option or head.recorded
        _, prefix = open_repo(obj.repo)
        selected = sorted(changes.clusters & set(clusters) if clusters else changes.clusters)
        for cluster, why in changes.reasons.items():  # file names and commit subjects are the PR's text
            click.echo(printable(f"{cluster}: {'; '.join(why)}"), err=True)
        click.echo(printable(f"{len(selected)} cluster(s) to plan since {base} (merge base {changes.base[:12]}), "
                             f"revision {head.describe()}"), err=True)
    else:
        changes, revision, prefix = ChangeSet("", None, frozenset()), revision_option, ""
        selected = sorted(clusters) if clusters else sorted(discover(obj.repo)[0].clusters)
    plans, failures, diags, notices = _plan_selected(obj.repo, selected, base, revision, obj.progress())
    policy_changes = _policy_changes(obj.repo, base)
    for name, said in sorted(notices.items()):
        for notice in said:
            click.echo(printable(f"warning: {name}: {notice}"), err=True)
    if fmt == "github":
        from reconciler.cli.plain import write_workflow_command

        for line in github_annotations(diags, plans, prefix):
            write_workflow_command(line)
    if out is not None and not has_errors(diags):  # also when empty: a workflow can always keep it
        from reconciler.artefacts import write_atomically
        from reconciler.render.json import render_plan_file

        write_atomically(out, render_plan_file(plans), roots=[obj.repo])
        click.echo(printable(f"plan written to {out}"), err=True)
    if fmt == "markdown":
        wanted = inventory is not None and base is not None and selected
        impact = _impact_markdown(obj, base or "", inventory) if wanted and inventory is not None else None
        impact, consumers, diags = _impact_parts(impact, diags)  # consumers at risk on top; maxUnreadLoss errors
        click.echo(render_comment(
            plans, base=base or "", merge_base=changes.base, revision=revision, reasons=changes.reasons,
            removed=sorted(changes.removed), failures=failures,
            diagnostics=diags if has_errors(diags) else (), impact=impact,
            notices={c: n for c, n in notices.items() if n}, policy_changes=policy_changes, consumers=consumers,
        ), nl=False)
    elif plans:
        print_plans(obj, plans, "text" if fmt == "github" else fmt)
    if has_errors(diags):
        raise ValidationError(diags)
    emit_diagnostics(diags, "text")
    if failures:
        raise ReconcilerError(f"{len(failures)} cluster(s) could not be planned: " + ", ".join(sorted(failures)))
    if detailed_exitcode and any(not p.is_empty for p in plans):
        raise SystemExit(ExitCode.CHANGES)


def _policy_changes(repo: Path, base: str | None) -> list[str]:
    """PR mode: the policies the branch changes and what they would newly flag (gitops/prmode.py), on stderr."""
    if base is None:
        return []
    from reconciler.gitops.prmode import policy_changes

    lines = policy_changes(repo, base)
    for line in lines:  # policy names and messages are the PR's text
        click.echo(printable(f"policy change (judged by the base's version): {line}"), err=True)
    return lines


def _plan_selected(
    repo: Path, selected: Sequence[str], base: str | None, revision: str | None, progress: Progress
) -> tuple[list[Plan], dict[str, str], list[Diagnostic], dict[str, list[str]]]:
    """Validate, then plan each cluster: in PR mode (a base) with the base revision's connection settings and
    secrets (gitops/prmode.py). Returns plans, failures by cluster, diagnostics, PR-mode notices by cluster."""
    from reconciler.cli.context import cluster_dir
    from reconciler.gitops.prmode import plan_pull_request
    from reconciler.gitops.trusted import trusted_base
    from reconciler.manifests.validate import load_and_validate, operator_limits
    from reconciler.plan import cluster_warnings, with_diagnostics
    from reconciler.workflow import plan_cluster

    plans: list[Plan] = []
    failures: dict[str, str] = {}
    notices: dict[str, list[str]] = {}
    if not selected:
        return plans, failures, [], notices
    # the PR check reads what any author with push access wrote: the lower RECONCILER_PR_MAX_* bounds
    _, states, diags = load_and_validate(repo, selected, operator_limits(pull_request=base is not None))
    if has_errors(diags):
        return plans, failures, diags, notices
    warnings = list(diags)
    with ExitStack() as stack:
        heads = [states[name] for name in selected if name in states]
        trusted = stack.enter_context(trusted_base(repo, base, heads)) if base is not None else None
        for name in selected:
            try:
                if trusted is not None:
                    result, notices[name] = plan_pull_request(states[name], trusted, revision)
                else:
                    result = plan_cluster(states[name], repo, revision, progress)
            except ReconcilerError as exc:  # one unreachable cluster must not hide the others' plans
                failures[name] = exc.message
                continue
            diags.extend(result.diagnostics)
            own = cluster_warnings(warnings, cluster_dir(states[name]), [cluster_dir(s) for s in states.values()])
            plans.append(with_diagnostics(result.plan, own))  # the manifests' warnings, for the PR comment
    return plans, failures, diags, notices


# --- reconcile ------------------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """`90`, `30s`, `5m`, `1h30m` -> seconds."""
    from reconciler.apply import duration_seconds

    try:
        seconds = duration_seconds(text)
    except ValueError as exc:
        raise click.BadParameter(f"{text!r} is {exc}", param_hint="--interval") from None
    if seconds <= 0:
        raise click.BadParameter("the interval must be positive", param_hint="--interval")
    return seconds


def default_cache() -> Path:
    import os

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kafka-reconciler" / "repos"


@contextmanager
def _source(obj: Context, url: str | None, branch: str | None, cache: Path | None, only: Sequence[str],
            allow_dirty: bool) -> Iterator[Source]:
    from reconciler.gitops import manifests_at, require_clean, sync_remote
    from reconciler.gitops.reconcile import Source

    if url is not None:
        mirror, ref = sync_remote(url, branch or "main", cache or default_cache())
        with manifests_at(mirror, ref, only) as (root, at):
            yield Source(root, at, mirror)
    elif branch is not None:  # a branch of the local repository, read without a checkout
        with manifests_at(obj.repo, branch, only) as (root, at):
            yield Source(root, at, obj.repo)
    else:
        head = require_clean(obj.repo, allow_dirty)
        yield Source(obj.repo, head, obj.repo if head is not None else None)


def _one_pass(obj: Context, args: dict[str, Any], options: Options, stop: threading.Event) -> PassResult:
    from dataclasses import replace

    from reconciler.apply import default_user
    from reconciler.gitops.reconcile import PassResult, run_pass
    from reconciler.workflow import now_utc

    started = now_utc()
    try:
        with _source(obj, args["url"], args["branch"], args["cache"], args["only"],
                     options.dry_run or args["allow_dirty"]) as source:
            if source.revision is not None and options.user is None:
                options = replace(options, user=f"{default_user()} for {source.revision.author}")

            def progress(outcome: Any) -> None:
                if obj.verbose:
                    click.echo(printable(f"{outcome.cluster}: {outcome.status} ({outcome.seconds:.1f}s)"), err=True)

            return run_pass(source, args["only"], options, stop, progress)
    except ReconcilerError as exc:  # no manifests this pass (fetch failed, dirty tree): report, keep going
        return PassResult(None, started, now_utc(), error=exc.message)


@click.command("reconcile")
@click.argument("clusters", nargs=-1)
@click.option("--repo-url", "url", help="Fetch the manifests from this git URL (a bare mirror in --cache-dir).")
@click.option("--branch", help="Branch to reconcile (with --repo-url: default main; without: read from the "
              "local repository without a checkout).")
@click.option("--cache-dir", "cache", type=click.Path(file_okay=False, path_type=Path),
              help="Where --repo-url mirrors live (default: $XDG_CACHE_HOME/kafka-reconciler/repos).")
@click.option("--once", is_flag=True, help="One pass, then exit (for cron jobs and CI).")
@click.option("--interval", help="A pass every DURATION (30s, 5m, 1h) until SIGTERM.")
@click.option("--dry-run", is_flag=True, help="Plan and report drift; write nothing.")
@click.option("--parallel", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Clusters reconciled at the same time.")
@click.option("--jobs", type=click.IntRange(0, 256), default=0, show_default=True,
              help="Worker processes sharing a large fleet's clusters (0: one per core; 1: this process only).")
@click.option("--allow-destructive", is_flag=True, help="Apply destructive plans (else policy.allowDestructive).")
@click.option("--allow-dirty", is_flag=True, help="Apply from a work tree with uncommitted manifests.")
@click.option("--allow-secret-rotation", is_flag=True,
              help="Re-encode passwords stored with passwordEncoder.oldSecret (brokers restarted with both first).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the summary of each pass as one JSON line on stdout.")
@click.option("--audit-log", type=click.Path(dir_okay=False, path_type=Path), help="JSON-lines audit log file.")
@click.option("--verify", is_flag=True, help="After each apply, ask every broker (spec.adminClient) until it reports "
              "each change; a cluster whose brokers did not all take it is 'not-taken' (a failure).")
@click.option("--verify-timeout", default="30s", show_default=True, metavar="DURATION",
              help="How long --verify keeps asking each cluster's brokers.")
@allow_no_brokers_option
@lock_timeout_option
@click.pass_obj
def reconcile(obj: Context, clusters: tuple[str, ...], url: str | None, branch: str | None, cache: Path | None,
              once: bool, interval: str | None, dry_run: bool, parallel: int, jobs: int, allow_destructive: bool,
              allow_dirty: bool, allow_secret_rotation: bool, fmt: str, audit_log: Path | None, verify: bool,
              verify_timeout: str, allow_no_brokers: bool, lock_timeout: float | None) -> None:
    """Pull, validate, plan and apply every cluster within policy; report drift; exit 1 if any cluster failed."""
    from reconciler.apply import default_audit_log
    from reconciler.cli.console import print_blocks
    from reconciler.gitops.reconcile import Options
    from reconciler.gitops.reconcile_report import summary_blocks, summary_json

    if once == (interval is not None):
        raise click.UsageError("give exactly one of --once and --interval DURATION")
    seconds = parse_duration(interval) if interval is not None else 0.0
    options = Options(dry_run, allow_destructive, parallel, None if dry_run else audit_log or default_audit_log(),
                      lock_timeout_s=lock_timeout, notify=notify, allow_secret_rotation=allow_secret_rotation,
                      jobs=jobs, verify_timeout_s=parse_duration(verify_timeout) if verify else None,
                      allow_no_brokers=allow_no_brokers or None)
    args = {"url": url, "branch": branch, "cache": cache, "only": clusters, "allow_dirty": allow_dirty}
    stop = threading.Event()
    failures = 0
    with _graceful(stop):
        while True:
            result = _one_pass(obj, args, options, stop)
            print_blocks(obj.err, summary_blocks(result))
            if fmt == "json":
                click.echo(json.dumps(summary_json(result), ensure_ascii=False))
            failures = result.failures
            if once or stop.is_set() or stop.wait(seconds):
                break
    if failures:
        raise SystemExit(ExitCode.ERROR)


@contextmanager
def _graceful(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT: finish the clusters in progress, start no new ones, then end (a second SIGINT kills)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        CANCELLED.set()  # planning stops at the next key derivation; nothing unwritten is started
        click.echo(f"received {signal.Signals(signum).name}: starting no new cluster; clusters still planning "
                   "stop now, an apply already writing finishes its batches (a second signal ends at once)",
                   err=True)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
