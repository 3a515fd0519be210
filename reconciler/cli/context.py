"""What every command shares: the global options, diagnostics on stderr, plans rendered for stdout.

stdout carries only the artefact (plan, report, JSON); diagnostics, logs and progress go to stderr.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.errors import Diagnostic, has_errors

if TYPE_CHECKING:
    from reconciler.workflow import ClusterPlan

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


def render_plans(plans: Sequence[Any], fmt: str, color: bool) -> str:
    if fmt == "json":
        from reconciler.render.json import render_json

        return render_json(plans)
    if fmt == "markdown":
        from reconciler.render.markdown import render_markdown

        return render_markdown(plans)
    from reconciler.render.text import render_text

    return render_text(plans, color=color)


def plan_all(obj: Context, clusters: Sequence[str], revision: str | None) -> list[ClusterPlan]:
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


def lock_timeout_option(command: click.decorators.FC) -> click.decorators.FC:
    """`--lock-timeout DURATION` (apply, reconcile), like Terraform's -lock-timeout."""
    return click.option(
        "--lock-timeout", metavar="DURATION", callback=_lock_timeout,
        help="How long to wait for another apply's cluster lock before exiting 3 (0: do not wait; 30s, 5m). "
        "Default: $RECONCILER_LOCK_TIMEOUT, else 1.5 x the cluster's ZooKeeper session timeout + 5 s, so that "
        "a crashed apply's lock expires within the wait.",
    )(command)


def _lock_timeout(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from reconciler.workflow import lock_wait_seconds

    try:
        return lock_wait_seconds(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r}: {exc}") from None


def notify(line: str) -> None:
    """A progress line of a long step (waiting for the apply lock) on stderr."""
    click.echo(line, err=True)
