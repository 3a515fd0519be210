"""The command line: the group, its global options, and the ONLY place that maps errors to exit codes.

Commands live in one module per family (validate, plan/apply, seal, gitops, importer, impact); they print
through click (stdout: only the artefact; stderr: the rest) and raise ReconcilerError for failures.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import click

from reconciler.cli.context import Context, configure_logging, emit_diagnostics
from reconciler.cli.describe import describe
from reconciler.cli.gitops import reconcile
from reconciler.cli.help import WorkflowGroup, document
from reconciler.cli.impact import impact, snapshot
from reconciler.cli.importer import import_command
from reconciler.cli.migrate import migrate_check
from reconciler.cli.options import NO_COLOR_HELP, REPO_HELP, VERBOSE_HELP, accept_global_options
from reconciler.cli.plain import command_safe_stdio, install_command_safe_stdio
from reconciler.cli.plan import apply, plan
from reconciler.cli.reassign import reassignments
from reconciler.cli.seal import seal
from reconciler.cli.show import show
from reconciler.cli.validate import validate
from reconciler.cli.version import print_version, version
from reconciler.errors import (
    CANCELLED,
    ApplyInterrupted,
    ExitCode,
    ReconcilerError,
    interrupt_deferred,
    printable,
)

MAIN_EPILOG = """\b
The global options may also follow the command: reconciler plan --repo DIR -v.
stdout carries only the artefact (plan, report, JSON); diagnostics and progress go to stderr.

\b
Exit codes: 0 success / no changes, 1 error, 2 changes (plan --detailed-exitcode),
3 stale plan or another apply holds the lock. `reconciler COMMAND --help` has each command's."""


@click.group(cls=WorkflowGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=MAIN_EPILOG)
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help=REPO_HELP)
@click.option("-v", "--verbose", count=True, help=VERBOSE_HELP)
@click.option("--no-color", is_flag=True, help=NO_COLOR_HELP)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=print_version,
              help="Print the version and the Kafka versions it knows, and exit.")
@click.pass_context
def main(ctx: click.Context, repo: Path, verbose: int, no_color: bool) -> None:
    """Declarative GitOps reconciler for Kafka dynamic configuration in ZooKeeper-mode clusters."""
    configure_logging(verbose)
    ctx.obj = Context(repo, verbose, no_color)


for command in (validate, plan, show, apply, describe, seal, reconcile, import_command, snapshot, impact, migrate_check,
                reassignments, version):
    document(command)
    accept_global_options(command)
    main.add_command(command)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT/SIGTERM: worker threads stop at their next safe point (CANCELLED, checked between key
    derivations, which are bounded), and the main thread stops now, unless it is writing an apply's batches
    (`errors.interrupts_deferred`): then the first signal only sets CANCELLED, the apply stops before its next
    batch and reports what it committed; a second signal stops at once."""
    first = not CANCELLED.is_set()
    CANCELLED.set()
    if first and interrupt_deferred():
        # os.write: a handler must not re-enter the stderr stream the main thread may be writing (fixed text)
        with suppress(OSError):
            os.write(2, f"received {signal.Signals(signum).name}: stopping after the batches being committed "
                        "(their replies are awaited, then what was committed is reported); a second signal ends "
                        "the wait\n".encode())
        return
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
    # Every byte of stdout and stderr, whoever writes it, goes through the one sink that keeps manifest and
    # repository text from becoming a GitHub workflow command (cli/plain.CommandSafeStream).
    with command_safe_stdio():
        try:
            with _signals():
                main.main(args=list(args) if args is not None else None, standalone_mode=False)
        except ReconcilerError as exc:
            emit_diagnostics(exc.diagnostics, "text")
            # line by line: a message may quote manifest text, which must not reach a terminal or a CI log raw
            click.echo("\n".join(printable(line) for line in f"error: {exc.message}".split("\n")), err=True)
            return int(exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt) as exc:
            # click turns a KeyboardInterrupt into Abort (keeping it as the cause)
            report = next((e for e in (exc, exc.__cause__, exc.__context__) if isinstance(e, ApplyInterrupted)),
                          None)
            if report is not None:  # an interrupted apply: what was and was not committed, what to run next
                click.echo("\n".join(printable(line) for line in f"error: {report.message}".split("\n")),
                           err=True)
                return int(report.exit_code)
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
    # 10,000-topic plan, ~25% of validating a large fleet; 200,000 still cost ~3% of that plan against
    # 1,000,000). Collect rarely: nothing here relies on prompt collection of cycles. (The console script
    # only; `run` leaves an embedding process's GC alone.)
    gc.set_threshold(1_000_000, 50, 50)
    install_command_safe_stdio()  # for the whole process: a traceback after `run` goes through it too
    code = run(args)
    _exit_without_teardown(code)
    raise SystemExit(code)


def _exit_without_teardown(code: int) -> None:
    """Exit as Python would, minus freeing every object one by one: a 10,000-topic plan spent ~20 ms (4%)
    tearing down its heap after its output was written (mypy's `hard_exit` does the same). Only when nothing
    else could still be running: no thread Python would wait for, and stdio flushed without error (else the
    normal exit reports it, as before). atexit hooks (logging's flush among them) run first, as they would."""
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
