"""What every command shares: the global options, diagnostics on stderr, plans rendered for stdout.

stdout carries only the artefact (plan, report, JSON); diagnostics, logs and progress go to stderr.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from reconciler.errors import Diagnostic, has_errors, printable

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.cli.plain import PlainConsole
    from reconciler.cli.progress import ConsoleProgress
    from reconciler.workflow import ClusterPlan

log = logging.getLogger("reconciler")


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is now (a live progress display swaps it to keep its bar intact)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class _EscapingFormatter(logging.Formatter):
    """A record's message on one line, control and bidi characters escaped (`errors.printable`): log
    arguments carry cluster names, paths, keys and values. A traceback keeps its lines, each escaped. The
    stream behind stderr (`cli/plain.CommandSafeStream`) then keeps any line from being a workflow command."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return "\n".join(printable(line) for line in super().formatException(ei).split("\n"))

    def formatStack(self, stack_info: str) -> str:
        return "\n".join(printable(line) for line in super().formatStack(stack_info).split("\n"))


def configure_logging(verbose: int) -> None:
    """Log level from -v (-vv: debug). kazoo's logger is silenced unless -v: an unreachable ZooKeeper
    is one error line, not a dozen reconnect warnings."""
    root = logging.getLogger()
    if not any(isinstance(h, _CurrentStderr) for h in root.handlers):
        handler = _CurrentStderr()
        handler.setFormatter(_EscapingFormatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.WARNING - 10 * min(verbose, 2))
    logging.getLogger("kazoo").setLevel(logging.NOTSET if verbose else logging.CRITICAL)


class Context:
    """The global options (`--repo`, `-v`, `--no-color`, given before or after the command) and the
    consoles built from them on first use, once every option is parsed."""

    def __init__(self, repo: Path, verbose: int, no_color: bool) -> None:
        self.repo = repo
        self.verbose = verbose
        self.no_color = no_color
        self._consoles: dict[str, PlainConsole | Console] = {}

    def stream(self, name: str) -> PlainConsole | Console:
        """The console of stdout ("out") or stderr ("err"): rich's only when colour or live progress needs it."""
        if name not in self._consoles:
            from reconciler.cli.plain import PlainConsole, wants_rich

            stream = sys.stdout if name == "out" else sys.stderr
            rich = functools.partial(_rich_console, stream, self.no_color)
            self._consoles[name] = rich() if wants_rich(stream, self.no_color) else PlainConsole(stream, rich)
        return self._consoles[name]

    def _console(self, name: str) -> Console:
        from reconciler.cli.plain import PlainConsole

        console = self.stream(name)
        return console.rich if isinstance(console, PlainConsole) else console

    @property
    def out(self) -> Console:
        """stdout: the artefact."""
        return self._console("out")

    @property
    def err(self) -> Console:
        """stderr: diagnostics, progress, summaries."""
        return self._console("err")

    @property
    def color(self) -> bool:
        from reconciler.cli.console import is_colored

        return is_colored(self.out)

    def progress(self) -> ConsoleProgress:
        from reconciler.cli.progress import ConsoleProgress

        return ConsoleProgress(self.stream("err"))


def _rich_console(stream: TextIO, no_color: bool) -> Console:
    from reconciler.cli.console import make_console

    return make_console(stream, no_color)


def emit_diagnostics(diags: Sequence[Diagnostic], fmt: str) -> None:
    """Diagnostics to stderr; `github` adds workflow annotations so they show on the PR's lines."""
    from reconciler.cli.plain import write_workflow_command
    from reconciler.render.github import annotation

    for d in diags:
        click.echo(d.render(), err=True)
        if fmt == "github":
            message = d.message + (f" [{d.key}]" if d.key else "")
            src = d.source
            write_workflow_command(annotation(d.severity, message, src.file if src else None,
                                              src.line if src else None, src.column if src else None))


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


def render_plans(plans: Sequence[Any], fmt: str) -> str:
    """The plans as one string (text without colour); `print_plans` is what commands call."""
    if fmt == "json":
        from reconciler.render.json import render_json

        return render_json(plans)
    if fmt == "markdown":
        from reconciler.render.markdown import render_markdown

        return render_markdown(plans)
    from reconciler.render.text import render_text

    return render_text(plans)


def read_plan_file(path: Path) -> list[Any]:
    """The plans of a file written by `plan --out`, refused when unreadable, malformed (its JSON Schema) or
    edited (id mismatch)."""
    from reconciler.errors import ReconcilerError
    from reconciler.manifests.planfile import read_plans

    try:
        # the bytes: orjson checks their UTF-8 itself, so a 10,000-entity plan (7.6 MB) is not decoded into a
        # str first nor read in text mode (~35 ms of ~60 ms; the same refusals, as invalid JSON)
        return read_plans(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ReconcilerError(f"cannot read plan file {path}: {reason}") from None
    except (ValueError, KeyError) as exc:
        raise ReconcilerError(f"cannot read plan file {path}: {exc}") from exc


def print_plans(obj: Context, plans: Sequence[Any], fmt: str, *, err: bool = False) -> None:
    """Plans on stdout (or stderr, for apply's review): text through rich, in colour when wanted."""
    from reconciler.cli.plain import PlainConsole

    console = obj.stream("err" if err else "out")
    if fmt == "text":
        from reconciler.render.text import plan_lines

        if isinstance(console, PlainConsole):  # no colour: what rich would write, without importing it
            from reconciler.cli.plain import write_plain_lines

            write_plain_lines(console.file, plan_lines(plans))
        else:
            from reconciler.cli.console import print_lines

            print_lines(console, plan_lines(plans))
        return
    console.file.write(render_plans(plans, fmt))
    console.file.flush()


def plan_all(obj: Context, clusters: Sequence[str], revision: str | None) -> list[ClusterPlan]:
    """Validate, then plan every selected cluster; every problem reported before failing. Secrets the
    manifests reference but this environment lacks are reported together before anything is read."""
    from dataclasses import replace

    from reconciler.plan import cluster_warnings, with_diagnostics
    from reconciler.secrets.check import missing_secrets
    from reconciler.workflow import load_desired, plan_cluster

    states, warnings = load_desired(obj.repo, clusters)
    missing = [d for name in sorted(states) for d in missing_secrets(states[name], obj.repo)]
    if has_errors(missing):
        from reconciler.errors import ReconcilerError

        raise ReconcilerError(f"{sum(d.severity == 'error' for d in missing)} secret(s) needed to plan are "
                              "missing", [*warnings, *missing])
    emit_diagnostics([*warnings, *missing], "text")
    results = []
    problems: list[Diagnostic] = []
    progress = obj.progress()
    for index, name in enumerate(sorted(states), 1):
        log.info("planning cluster %s", name)
        result = plan_cluster(states[name], obj.repo, revision, progress.numbered(index, len(states)))
        own = cluster_warnings(warnings, cluster_dir(states[name]), [cluster_dir(s) for s in states.values()])
        result = replace(result, plan=with_diagnostics(result.plan, own))  # the manifests' warnings too
        problems.extend(result.diagnostics)
        results.append(result)
    if has_errors(problems):
        from reconciler.errors import ValidationError

        raise ValidationError(problems)
    emit_diagnostics(problems, "text")
    return results


def cluster_dir(state: Any) -> str:
    """`clusters/c1`: the directory of a desired state's Cluster document."""
    source = state.cluster.source
    return source.file.rsplit("/", 1)[0] if source is not None else f"clusters/{state.cluster.name}"


def allow_no_brokers_option(command: click.decorators.FC) -> click.decorators.FC:
    """`--allow-no-brokers` (apply, reconcile): write to a ZooKeeper target where no declared broker is registered."""
    return click.option(
        "--allow-no-brokers", is_flag=True,
        help="Write even where no broker of spec.brokers is registered in ZooKeeper (pre-seeding configs before "
        "the brokers first start); without it such a target is refused before any write, naming the chroots of "
        "the ensemble that hold brokers. Default: $RECONCILER_ALLOW_NO_BROKERS.",
    )(command)


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
    from reconciler.apply import lock_wait_seconds

    try:
        return lock_wait_seconds(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r}: {exc}") from None


def notify(line: str) -> None:
    """A progress line of a long step (waiting for the apply lock) on stderr (it names the lock's holder,
    read from ZooKeeper: escaped)."""
    click.echo(printable(line), err=True)
