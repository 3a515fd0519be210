"""`reconciler show PLAN_FILE`: a saved plan rendered for people, without applying it."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.cli.context import Context, print_plans, read_plan_file


@click.command()
@click.argument("plan_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="json: the plan as `plan --format json` prints it (sealed values left out).")
@click.pass_obj
def show(obj: Context, plan_file: Path, fmt: str) -> None:
    """Render a saved plan file without applying it (checked against its schema and id, as apply checks it)."""
    print_plans(obj, read_plan_file(plan_file), fmt)
