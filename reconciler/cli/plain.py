"""Output without rich where rich would add nothing: no colour and no live progress (a pipe, a CI log).

Importing rich's console, table and progress costs ~0.15 s of CPU, about a tenth of a 10,000-topic `plan`
whose output goes to a file. Without colour rich writes each plain line as it is, so `PlainConsole` writes
it directly; anything else (a table that needs rich's layout, a command that wants a rich `Console`) gets
the very console `make_console` would have built, created on first use (`PlainConsole.rich`; the caller
says how, so that this module never imports rich or `cli/console.py`).

The colour and animation rules live here, rich-free, and `cli/console.py` re-exports them.

So does the sink every byte of the command line's stdout and stderr goes through (`CommandSafeStream`,
installed over `sys.stdout`/`sys.stderr` by `cli/main.py` for the whole run): whatever writes (click, rich,
logging, warnings, a traceback, a call site that forgot to escape), no line it writes can be a GitHub
workflow command (`render.github.neutralize`); only `write_workflow_command` writes one.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import IO, TYPE_CHECKING, TextIO, cast

from reconciler.errors import printable
from reconciler.render.github import neutralize, undecided

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.render.styled import Line


def _set(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "") != ""


def color_enabled(env: Mapping[str, str], is_terminal: bool, no_color_flag: bool = False) -> bool:
    """The colour rules of `cli/console.py`'s docstring."""
    if no_color_flag or _set(env, "NO_COLOR"):
        return False
    if _set(env, "FORCE_COLOR"):
        return True
    if env.get("TERM", "").lower() == "dumb":
        return False
    return is_terminal


def live_progress(env: Mapping[str, str], is_terminal: bool) -> bool:
    """An animated progress display: only on a terminal that can redraw lines."""
    return is_terminal and env.get("TERM", "").lower() not in ("dumb", "unknown")


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def write_plain_lines(stream: IO[str], lines: Iterable[Line]) -> None:
    """Styled lines without their styles, escaped: what rich writes for them without colour."""
    stream.write("".join(printable("".join(text for text, _ in line)) + "\n" for line in lines))
    stream.flush()


def wants_rich(stream: TextIO, no_color_flag: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """Whether the stream gets colour or live progress (then rich writes it), by `make_console`'s rules."""
    env = os.environ if env is None else env
    terminal = isatty(stream)
    return color_enabled(env, terminal, no_color_flag) or live_progress(env, terminal)


class PlainConsole:
    """A stream that gets neither colour nor animation (see the module docstring). `make_rich` builds the
    rich console `make_console` would for it, for what only rich can lay out."""

    is_interactive = False

    def __init__(self, stream: TextIO, make_rich: Callable[[], Console]) -> None:
        self.file = stream
        self._make_rich = make_rich
        self._rich: Console | None = None
        self._lock = threading.Lock()  # reconcile's threads print phase lines at once

    def line(self, text: str) -> None:
        """One line, escaped: what rich prints for `Text(printable(text))` with `soft_wrap=True`."""
        with self._lock:
            self.file.write(printable(text) + "\n")
            self.file.flush()

    @property
    def rich(self) -> Console:
        if self._rich is None:
            self._rich = self._make_rich()
        return self._rich


_HOLD = ("##", "#")  # a line's end that could become `##[` with the next write


class CommandSafeStream:
    """A text stream in front of stdout or stderr whose every line goes through `render.github.neutralize`.

    Lines are checked as they are completed; a partial line is written at `flush` as soon as its start is
    decided (not whitespace or an escape sequence still followed by one `:`), less a trailing `#`/`##`, so
    prompts and live progress still appear. Only `command` writes a workflow command. Thread-safe."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending = ""  # the current line's end, not yet written
        self._mid_line = False  # part of the current line is written (its start was checked)
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text:
            return 0
        with self._lock:
            data = self._pending + text
            self._pending = ""
            cut = max(data.rfind("\n"), data.rfind("\r")) + 1
            out = neutralize(data[:cut], mid_line=self._mid_line) if cut else ""
            if cut:
                self._mid_line = False
            out += self._partial(data[cut:])
            if out:
                self.stream.write(out)
        return len(text)

    def _partial(self, rest: str) -> str:
        """What of an unfinished line may be written now; the rest stays pending."""
        if not self._mid_line and undecided(rest):
            self._pending = rest
            return ""
        keep = next((len(h) for h in _HOLD if rest.endswith(h)), 0)
        self._pending = rest[len(rest) - keep:]
        done = rest[:len(rest) - keep]
        if not done:
            return ""
        out = neutralize(done, mid_line=self._mid_line)
        self._mid_line = True
        return out

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def command(self, line: str) -> None:
        """One workflow command built by `render.github.workflow_command` (one line), at a line's start."""
        if "\n" in line or "\r" in line or not line.startswith("::"):
            raise ValueError("a workflow command is one line starting with '::'")
        with self._lock:
            self.finish()
            if self._mid_line:
                self.stream.write("\n")
                self._mid_line = False
            self.stream.write(line + "\n")
            self.stream.flush()

    def finish(self) -> None:
        """Write what is pending, as it is: at the end of output a line with no second `:` is no command."""
        with self._lock:
            if self._pending:
                self.stream.write(self._pending)
                self._mid_line = not self._pending.endswith(("\n", "\r"))
                self._pending = ""
            self.stream.flush()

    def flush(self) -> None:
        with self._lock:
            self.stream.flush()

    def isatty(self) -> bool:
        return isatty(self.stream)

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.stream, "errors", None) or "strict"

    @property
    def closed(self) -> bool:
        return bool(getattr(self.stream, "closed", False))


def write_workflow_command(line: str) -> None:
    """A line of `render.github.workflow_command` on stderr, as a command (the only way one is written)."""
    stream = sys.stderr
    if isinstance(stream, CommandSafeStream):
        stream.command(line)
    else:
        stream.write(line + "\n")
        stream.flush()


@contextmanager
def command_safe_stdio() -> Iterator[None]:
    """stdout and stderr behind `CommandSafeStream` for the block (a no-op where they already are)."""
    if isinstance(sys.stdout, CommandSafeStream) and isinstance(sys.stderr, CommandSafeStream):
        yield
        return
    saved = sys.stdout, sys.stderr
    out, err = CommandSafeStream(sys.stdout), CommandSafeStream(sys.stderr)
    sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
    try:
        yield
    finally:
        for stream in (out, err):
            with suppress(OSError, ValueError):
                stream.finish()
        if sys.stdout is cast(TextIO, out) and sys.stderr is cast(TextIO, err):
            sys.stdout, sys.stderr = saved


def install_command_safe_stdio() -> None:
    """stdout and stderr behind `CommandSafeStream` until the process ends (the console script: so that a
    traceback printed after `run` returns goes through it too)."""
    if isinstance(sys.stdout, CommandSafeStream) and isinstance(sys.stderr, CommandSafeStream):
        return
    out, err = CommandSafeStream(sys.stdout), CommandSafeStream(sys.stderr)
    sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
    atexit.register(err.finish)
    atexit.register(out.finish)
