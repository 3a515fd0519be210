"""Output without rich where rich would add nothing: no colour and no live progress (a pipe, a CI log).

Importing rich's console, table and progress costs ~0.15 s of CPU, about a tenth of a 10,000-topic `plan`
whose output goes to a file. Without colour rich writes each plain line as it is, so `PlainConsole` writes
it directly; anything else (a table that needs rich's layout, a command that wants a rich `Console`) gets
the very console `make_console` would have built, created on first use (`PlainConsole.rich`; the caller
says how, so that this module never imports rich or `cli/console.py`).

The colour and animation rules live here, rich-free, and `cli/console.py` re-exports them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, TextIO

from reconciler.errors import printable

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
