"""The global options (`--repo`, `-v`, `--no-color`), accepted before the command and after it.

`reconciler --repo X plan` and `reconciler plan --repo X -v` mean the same. click attaches options to one
command, so every sub-command gets copies whose callbacks update the group's `Context` (created by the group's
callback, which click runs before it parses the sub-command). Given twice, the later `--repo` wins, `-v`s add
up and `--no-color` sticks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from reconciler.cli.context import Context, configure_logging

REPO_HELP = "Manifest repository (manifests under DIR/clusters)."
VERBOSE_HELP = "More logging on stderr (-vv for debug)."
NO_COLOR_HELP = "No colours (also NO_COLOR=1; FORCE_COLOR=1 forces them)."


def _context(ctx: click.Context) -> Context | None:
    return ctx.find_object(Context)


def _repo(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    obj = _context(ctx)
    if obj is not None and value is not None:
        obj.repo = value


def _verbose(ctx: click.Context, _param: click.Parameter, value: int) -> None:
    obj = _context(ctx)
    if obj is not None and value:
        obj.verbose += value
        configure_logging(obj.verbose)


def _no_color(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    obj = _context(ctx)
    if obj is not None and value:
        obj.no_color = True


def _copies() -> list[click.Option]:
    common: dict[str, Any] = {"expose_value": False}
    return [
        click.Option(["--repo"], type=click.Path(file_okay=False, path_type=Path), default=None,
                     callback=_repo, help=REPO_HELP + " [default: .]", **common),
        click.Option(["-v", "--verbose"], count=True, callback=_verbose, help=VERBOSE_HELP, **common),
        click.Option(["--no-color"], is_flag=True, callback=_no_color, help=NO_COLOR_HELP, **common),
    ]


def accept_global_options(command: click.Command) -> None:
    """Give `command` the global options too (they are listed last in its help)."""
    taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
    command.params.extend(o for o in _copies() if not taken & set(o.opts))
