"""The command line: the group, its global options, and the ONLY place that maps errors to exit codes.

Commands live in one module per family (validate, plan/apply, seal, gitops, importer, impact); they print
through click (stdout: only the artefact; stderr: the rest) and raise ReconcilerError for failures.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import click

from reconciler.cli.context import Context, emit_diagnostics
from reconciler.cli.gitops import reconcile
from reconciler.cli.impact import impact, snapshot
from reconciler.cli.importer import import_command
from reconciler.cli.plan import apply, plan
from reconciler.cli.seal import seal
from reconciler.cli.validate import validate
from reconciler.errors import CANCELLED, ExitCode, ReconcilerError, printable


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


for command in (validate, plan, apply, seal, reconcile, import_command, snapshot, impact):
    main.add_command(command)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT/SIGTERM: worker threads stop at their next safe point (CANCELLED, checked between key
    derivations, which are bounded), and the main thread stops now."""
    CANCELLED.set()
    raise KeyboardInterrupt


@contextmanager
def _signals() -> Iterator[None]:
    """Every command ends within a couple of seconds of SIGINT or SIGTERM (`reconcile` installs its own
    graceful handler on top for its passes)."""
    CANCELLED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run(args: Sequence[str] | None = None) -> int:
    """Entry point that turns ReconcilerError into its exit code (for tests and `python -m`)."""
    try:
        with _signals():
            main.main(args=list(args) if args is not None else None, standalone_mode=False)
    except ReconcilerError as exc:
        emit_diagnostics(exc.diagnostics, "text")
        # line by line: a message may quote manifest text, which must not reach a terminal or a CI log raw
        click.echo("\n".join(printable(line) for line in f"error: {exc.message}".split("\n")), err=True)
        return int(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted" if CANCELLED.is_set() else "aborted", err=True)
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
