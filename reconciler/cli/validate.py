"""`reconciler validate`: the manifests against the schemas and Kafka's rules, before anything is read."""

from __future__ import annotations

import click

from reconciler.cli.context import Context, diagnostics_json, emit_diagnostics
from reconciler.errors import ExitCode


@click.command()
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
