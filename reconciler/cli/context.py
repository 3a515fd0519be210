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
    from reconciler.render.github import annotation

    for d in diags:
        click.echo(d.render(), err=True)
        if fmt == "github":
            message = d.message + (f" [{d.key}]" if d.key else "")
            src = d.source
            click.echo(annotation(d.severity, message, src.file if src else None, src.line if src else None,
                                  src.column if src else None), err=True)


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
