"""Progress on stderr: a live rich bar per running phase on a terminal, one line per finished phase always.

The line (`prod-eu-1: read ZooKeeper 10.0.0.1:2181/kafka: 12,004 config znodes … (1.4 s)`) is what a CI log
keeps; the bar (spinner, label, bar, done/total, elapsed) only exists while a phase runs, and only where
`console.is_interactive` (see `console.live_progress`). A phase that fails prints no line: the error does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from reconciler.cli.plain import PlainConsole
from reconciler.progress import Phase
from reconciler.render.common import printable

if TYPE_CHECKING:  # rich is imported only for a live bar or a coloured line (see cli/plain.py)
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID


class _Phase:
    def __init__(self, owner: ConsoleProgress, task: TaskID | None) -> None:
        self.owner, self.task = owner, task
        self.summary: str | None = None

    def update(self, completed: int, total: int | None = None) -> None:
        if self.task is not None and self.owner.bar is not None:
            self.owner.bar.update(self.task, completed=completed, total=total)

    def done(self, summary: str) -> None:
        self.summary = summary


class ConsoleProgress:
    """`reconciler.progress.Progress` for the command line (thread-safe: reconcile runs clusters in parallel)."""

    def __init__(self, console: Console | PlainConsole, prefix: str = "") -> None:
        self.console = console
        self.prefix = prefix
        self.bar: RichProgress | None = None
        self._running = 0
        self._lock = threading.Lock()

    def numbered(self, index: int, count: int) -> ConsoleProgress:
        """The same progress with `[index/count] ` before each label, when there are several clusters."""
        return ConsoleProgress(self.console, f"[{index}/{count}] " if count > 1 else "")

    def note(self, line: str) -> None:
        """One line on stderr now, above a live bar (what a long wait is waiting for, e.g. connecting)."""
        text = printable(self.prefix + line)
        if isinstance(self.console, PlainConsole):
            self.console.line(text)
            return
        from rich.text import Text

        self.console.print(Text(text, style="muted"), soft_wrap=True)

    def _start(self, label: str, total: int | None) -> TaskID | None:
        if isinstance(self.console, PlainConsole) or not self.console.is_interactive:
            return None
        with self._lock:
            if self.bar is None:
                from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
                from rich.progress import Progress as RichProgress

                self.bar = RichProgress(
                    SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=self.console, transient=True,
                    redirect_stdout=False,  # stdout is the artefact's: never routed through the bar
                )
                self.bar.start()
            self._running += 1
            return self.bar.add_task(printable(label), total=total)

    def _stop(self, task: TaskID | None) -> None:
        if task is None:
            return
        with self._lock:
            if self.bar is not None:
                self.bar.remove_task(task)
                self._running -= 1
                if not self._running:
                    self.bar.stop()
                    self.bar = None

    @contextmanager
    def phase(self, label: str, total: int | None = None) -> Iterator[Phase]:
        label = self.prefix + label
        started = time.monotonic()
        handle = _Phase(self, self._start(label, total))
        try:
            yield handle
        finally:
            self._stop(handle.task)
        if handle.summary is not None:
            seconds = time.monotonic() - started
            if isinstance(self.console, PlainConsole):
                self.console.line(f"{label}: {handle.summary} ({seconds:.1f} s)")
                return
            from rich.text import Text

            self.console.print(Text(printable(f"{label}: {handle.summary} ({seconds:.1f} s)"), style="muted"),
                               soft_wrap=True)
