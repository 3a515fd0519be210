"""The command line: the ONLY place that prints and maps errors to exit codes.

stdout carries only the artefact (plan, report, JSON); diagnostics, logs and progress go to stderr.
"""

from __future__ import annotations

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
@click.pass_obj
def validate(obj: Context, clusters: tuple[str, ...], fmt: str) -> None:
    """Check manifests against the schemas and Kafka's rules; exit 1 if any is invalid."""
    from reconciler.manifests.validate import load_and_validate

    _, states, diags = load_and_validate(obj.repo, clusters)
    if fmt == "json":
        click.echo(diagnostics_json(diags))
    else:
        emit_diagnostics(diags, fmt)
    errors = sum(d.severity == "error" for d in diags)
    warnings = len(diags) - errors
    if errors:
        click.echo(f"invalid: {errors} error(s), {warnings} warning(s)", err=True)
        raise SystemExit(ExitCode.ERROR)
    click.echo(f"valid: {len(states)} cluster(s), {warnings} warning(s)", err=True)


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
    raise SystemExit(run(args))
