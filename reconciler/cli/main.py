"""The command line: the ONLY place that prints and maps errors to exit codes.

stdout carries only the artefact (plan, report, JSON); diagnostics, logs and progress go to stderr.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from reconciler.errors import Diagnostic, ExitCode, ReconcilerError, has_errors

log = logging.getLogger("reconciler")


class Context:
    def __init__(self, repo: Path, verbose: int, color: bool) -> None:
        self.repo = repo
        self.verbose = verbose
        self.color = color


def emit_diagnostics(diags: Sequence[Diagnostic], fmt: str) -> None:
    """Diagnostics to stderr; `github` adds workflow annotations so they show on the PR's lines."""
    for d in diags:
        click.echo(d.render(), err=True)
        if fmt == "github":
            props = ""
            if d.source is not None:
                props = f" file={d.source.file},line={d.source.line},col={d.source.column}"
            level = "error" if d.severity == "error" else "warning"
            message = d.message + (f" [{d.key}]" if d.key else "")
            click.echo(f"::{level}{props}::{message}", err=True)


def diagnostics_json(diags: Sequence[Diagnostic]) -> str:
    return json.dumps(
        {
            "valid": not has_errors(diags),
            "diagnostics": [
                {
                    "severity": d.severity,
                    "message": d.message,
                    "key": d.key,
                    "file": d.source.file if d.source else None,
                    "line": d.source.line if d.source else None,
                    "column": d.source.column if d.source else None,
                }
                for d in diags
            ],
        },
        indent=2,
        ensure_ascii=False,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="Manifest repository (manifests under DIR/clusters).")
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-vv for debug).")
@click.option("--no-color", is_flag=True, help="No ANSI colours (also NO_COLOR).")
@click.pass_context
def main(ctx: click.Context, repo: Path, verbose: int, no_color: bool) -> None:
    """Declarative GitOps reconciler for Kafka dynamic configuration in ZooKeeper-mode clusters."""
    logging.basicConfig(
        level=logging.WARNING - 10 * min(verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    color = not no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()
    ctx.obj = Context(repo, verbose, color)


@main.command()
@click.argument("clusters", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "github", "json"]), default="text", show_default=True)
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes for large repositories (0: one per core; 1: none).")
@click.pass_obj
def validate(obj: Context, clusters: tuple[str, ...], fmt: str, jobs: int) -> None:
    """Check manifests against the schemas and Kafka's rules; exit 1 if any is invalid."""
    from reconciler.manifests.validate import check_repository

    valid_clusters, diags = check_repository(obj.repo, clusters, jobs)
    if fmt == "json":
        click.echo(diagnostics_json(diags))
    else:
        emit_diagnostics(diags, fmt)
    errors = sum(d.severity == "error" for d in diags)
    warnings = len(diags) - errors
    if errors:
        click.echo(f"invalid: {errors} error(s), {warnings} warning(s)", err=True)
        raise SystemExit(ExitCode.ERROR)
    click.echo(f"valid: {valid_clusters} cluster(s), {warnings} warning(s)", err=True)


def _render(plans: Sequence[Any], fmt: str, color: bool) -> str:
    if fmt == "json":
        from reconciler.render.json import render_json

        return render_json(plans)
    if fmt == "markdown":
        from reconciler.render.markdown import render_markdown

        return render_markdown(plans)
    from reconciler.render.text import render_text

    return render_text(plans, color=color)


def _plan_all(obj: Context, clusters: Sequence[str], revision: str | None) -> list[Any]:
    """Validate, then plan every selected cluster; every problem reported before failing."""
    from reconciler.workflow import load_desired, plan_cluster

    states, warnings = load_desired(obj.repo, clusters)
    emit_diagnostics(warnings, "text")
    results = []
    problems: list[Diagnostic] = []
    for name in sorted(states):
        log.info("planning cluster %s", name)
        result = plan_cluster(states[name], obj.repo, revision)
        problems.extend(result.diagnostics)
        results.append(result)
    if has_errors(problems):
        from reconciler.errors import ValidationError

        raise ValidationError(problems)
    emit_diagnostics(problems, "text")
    return results


@main.command()
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
    if git_base is not None or fmt == "github":
        from reconciler.cli.gitops import plan_git_base

        plan_git_base(obj, clusters, git_base, out, fmt, detailed_exitcode, inventory, revision)
        return
    results = _plan_all(obj, clusters, revision)
    plans = [r.plan for r in results]
    if out is not None:
        from reconciler.render.json import render_plan_file

        out.write_text(render_plan_file(plans), encoding="utf-8")
        click.echo(f"plan written to {out}", err=True)
    click.echo(_render(plans, fmt, obj.color), nl=False)
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


@main.command()
@click.argument("target", nargs=-1)
@click.option("--auto-approve", is_flag=True, help="Apply without asking (for CI and scheduled runs).")
@click.option("--allow-destructive", is_flag=True, help="Allow destructive changes and more than maxDeletes removals.")
@click.option("--audit-log", type=click.Path(dir_okay=False, path_type=Path), help="JSON-lines audit log file.")
@click.option("--allow-dirty", is_flag=True, help="Plan and apply even with uncommitted manifest changes.")
@click.pass_obj
def apply(
    obj: Context, target: tuple[str, ...], auto_approve: bool, allow_destructive: bool, audit_log: Path | None,
    allow_dirty: bool,
) -> None:
    """Apply a plan file, or plan and apply CLUSTER…; exit 3 on a stale plan or a held lock."""
    from reconciler.workflow import apply_cluster_plan, default_audit_log, guard, load_desired

    if len(target) == 1 and target[0].endswith(".json") and Path(target[0]).is_file():
        from reconciler.plan import plans_from_json

        try:
            plans = plans_from_json(Path(target[0]).read_text(encoding="utf-8"))
        except (ValueError, KeyError) as exc:
            raise ReconcilerError(f"cannot read plan file {target[0]}: {exc}") from exc
        states, _ = load_desired(obj.repo, [p.cluster for p in plans])
    else:
        results = _plan_all(obj, target, _clean_revision(obj.repo, allow_dirty))
        plans = [r.plan for r in results]
        states = {r.plan.cluster: r.desired for r in results}
    pending = [p for p in plans if not p.is_empty]
    if not pending:
        click.echo(_render(plans, "text", obj.color), nl=False, err=True)
        click.echo("nothing to apply", err=True)
        return
    for p in pending:
        guard(p, states[p.cluster], allow_destructive)
    if not auto_approve:
        click.echo(_render(pending, "text", obj.color), nl=False, err=True)
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
    for p in pending:
        result = apply_cluster_plan(p, states[p.cluster], obj.repo, allow_destructive=allow_destructive,
                                    audit_log=log_path)
        click.echo(
            f"{p.cluster}: applied plan {p.plan_id}: {result.entities_written} entities, "
            f"{result.topics_created} topics created, {result.partitions_added} partitions added "
            f"in {result.batches} batch(es)",
            err=True,
        )


@main.command()
@click.argument("cluster")
@click.option("--broker", type=int, help="Seal with this broker's own encoder parameters (its static properties).")
@click.pass_obj
def seal(obj: Context, cluster: str, broker: int | None) -> None:
    """Read a password on stdin; print it Kafka-encoded as {encoded: ...}, safe to commit."""
    from reconciler.model import DEFAULT_ENTITY, EntityRef, Secret
    from reconciler.secrets.encoder import encode
    from reconciler.workflow import encoder_for_cluster, load_desired

    states, _ = load_desired(obj.repo, [cluster])
    desired = states[cluster]
    if broker is not None and broker not in desired.cluster.brokers:
        raise ReconcilerError(f"broker {broker} is not one of cluster {cluster}'s brokers")
    ref = EntityRef("brokers", DEFAULT_ENTITY if broker is None else str(broker))
    params = encoder_for_cluster(desired, obj.repo)(ref)
    if params is None:
        raise ReconcilerError(f"cluster {cluster} has no passwordEncoder")
    if sys.stdin.isatty():
        text = click.prompt("password", hide_input=True, confirmation_prompt=True, err=True)
    else:
        text = sys.stdin.read()
        text = text[:-1] if text.endswith("\n") else text  # one trailing newline is the terminator
        text = text[:-1] if text.endswith("\r") else text
    encoded = encode(Secret(text), params)
    click.echo(json.dumps({"encoded": encoded}))


def run(args: Sequence[str] | None = None) -> int:
    """Entry point that turns ReconcilerError into its exit code (for tests and `python -m`)."""
    try:
        main.main(args=list(args) if args is not None else None, standalone_mode=False)
    except ReconcilerError as exc:
        emit_diagnostics(exc.diagnostics, "text")
        click.echo(f"error: {exc.message}", err=True)
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return int(ExitCode.ERROR)
    except click.ClickException as exc:
        exc.show()
        return int(ExitCode.ERROR)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return int(ExitCode.OK)


def entry(args: Any = None) -> None:
    # A run builds hundreds of thousands of long-lived objects (manifests, live state, plans) and frees few
    # before it exits; at the default thresholds the cyclic GC rescans them again and again (~20% of a
    # 10,000-topic plan, ~25% of validating a large fleet). Collect rarely: nothing here relies on prompt
    # collection of cycles. (The console script only; `run` leaves an embedding process's GC alone.)
    gc.set_threshold(200_000, 50, 50)
    raise SystemExit(run(args))


from reconciler.cli.gitops import register as _register_gitops; _register_gitops(main)  # noqa: E402, E702, I001
from reconciler.cli.impact import register as _register_impact; _register_impact(main)  # noqa: E402, E702, I001
