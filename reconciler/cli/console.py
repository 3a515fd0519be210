"""Terminal output through rich: colour, tables and live progress, decided once per stream.

How the renderers and rich meet: the pure core (`render/`, `effective`) may not import rich (import-linter
forbids it), so renderers return rich-free structure — lines of `(text, style name)` segments and
`render.styled.Table`s — and this module turns them into rich `Text` and `Table` objects. Style names are
semantic (`plan.add`, `risk.destructive`) and `THEME` maps them to colours, so the look is decided here
alone. We preferred this to letting rich's `Text`/`Table` into the core: renderers stay plain functions
whose output tests compare as strings, and the core keeps no dependency on a terminal library.

Colour (`color_enabled`), strongest rule first: `--no-color`; NO_COLOR set and not empty (no-color.org);
FORCE_COLOR set and not empty (force-color.org: also into a pipe or a dumb terminal); TERM=dumb; otherwise
whether the stream is a terminal. An empty NO_COLOR or FORCE_COLOR counts as unset. Live progress needs
more than colour: stderr must be a terminal that is not dumb (FORCE_COLOR colours a CI log, it does not
animate it). The decisions are ours, passed to rich explicitly, so they do not change with rich's defaults.

Plain lines go out as they are when colour is off: rich would add nothing to them but time (a 10,000-topic
plan has ~100,000 lines). What a library cannot do stays ours: Kafka-aware units (`units.py`) and
escaping of control characters from manifests and ZooKeeper (`render.common.printable`) happen before
anything reaches rich, which renders `Text` objects (never markup), so `[bold]` in a topic name stays text.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping
from typing import TextIO

from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style
from rich.table import Table as RichTable
from rich.text import Text
from rich.theme import Theme

from reconciler.cli.plain import color_enabled as color_enabled  # re-exported: the rules live rich-free there
from reconciler.cli.plain import isatty, write_plain_lines
from reconciler.cli.plain import live_progress as live_progress
from reconciler.render.common import printable
from reconciler.render.styled import Block, Line, Table

THEME = Theme(
    {
        "plan.add": "green",
        "plan.change": "yellow",
        "plan.remove": "red",
        "risk.destructive": "bold red",
        "risk.disruptive": "bold yellow",
        "heading": "bold",
        "warning": "yellow",
        "muted": "dim",
        "differs": "bold yellow",
        "sensitive": "magenta",
    }
)
UNBOUNDED_WIDTH = 10_000  # a pipe or a file: never wrap a table's rows (COLUMNS still wins)


def make_console(stream: TextIO, no_color_flag: bool = False, env: Mapping[str, str] | None = None) -> Console:
    """A rich console on `stream` with our decisions: colour, terminal, width."""
    env = os.environ if env is None else env
    terminal = isatty(stream)
    color = color_enabled(env, terminal, no_color_flag)
    columns = env.get("COLUMNS", "")
    width = None if terminal else int(columns) if columns.isdigit() else UNBOUNDED_WIDTH
    return Console(
        file=stream,
        theme=THEME,
        color_system="standard" if color else None,
        no_color=not color,
        force_terminal=terminal,
        force_interactive=live_progress(env, terminal),
        width=width,
        highlight=False,
        markup=False,
        emoji=False,
    )


def is_colored(console: Console) -> bool:
    return console.color_system is not None and not console.no_color


def to_text(segments: Line) -> Text:
    text = Text(no_wrap=True, end="")
    for part, style in segments:
        text.append(printable(part), style=style or "")
    return text


def to_rich_table(table: Table) -> RichTable:
    """Columns aligned by rich, no box: reads like `kafka-configs.sh` output and survives a pipe."""
    out = RichTable(box=None, pad_edge=False, padding=(0, 2, 0, 0), show_edge=False, header_style="heading")
    for name in table.columns:
        out.add_column(name, overflow="fold")
    for row in table.rows:
        out.add_row(*(to_text((cell,)) for cell in row))
    return out


def print_table(console: Console, table: Table) -> None:
    """The title as a heading line, then the table with no trailing blanks (rich pads every cell)."""
    if table.title is not None:
        console.print(to_text(((table.title, "heading"),)), soft_wrap=True)
    rows = plain_table(table, console.width) if not is_colored(console) else None
    if rows is None:
        with console.capture() as captured:
            console.print(to_rich_table(table))
        rows = [row.rstrip() for row in captured.get().splitlines()]
    console.file.write("".join(row + "\n" for row in rows))
    console.file.flush()


def plain_table(table: Table, width: int) -> list[str] | None:
    """The rows rich lays out for `to_rich_table` without colour, when every cell is ASCII (one column per
    character) and the table fits `width`: each column as wide as its widest cell, two spaces between
    columns, no trailing blanks. rich takes ~1 ms a row for this (1 s for a 1,000-cluster reconcile summary).
    None when rich must decide (wide characters, folding to a terminal's width)."""
    cells = [list(table.columns), *([printable(text) for text, _ in row] for row in table.rows)]
    if not all(c.isascii() and c.isprintable() for row in cells for c in row):
        return None
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def print_lines(console: Console, lines: Iterable[Line]) -> None:
    """Styled lines, escaped. With colour, each segment's theme style is rendered by rich's `Style.render`
    (the SGR codes `console.print` would write) without the per-call layout work of `console.print`,
    which costs ~0.3 ms a line: 7 s for a 10,000-change plan instead of 0.3 s (bench/render_10k.py)."""
    if not is_colored(console):
        write_plain_lines(console.file, lines)
        return
    styles: dict[str, Style] = {}

    def styled(text: str, name: str | None) -> str:
        if not name or not text:
            return text
        if name not in styles:
            styles[name] = console.get_style(name)
        return styles[name].render(text, color_system=ColorSystem.STANDARD)

    console.file.write("".join("".join(styled(printable(t), s) for t, s in line) + "\n" for line in lines))
    console.file.flush()


def print_blocks(console: Console, blocks: Iterable[Block]) -> None:
    for block in blocks:
        if isinstance(block, Table):
            print_table(console, block)
        else:
            print_lines(console, [block])


def ansi_text(lines: Iterable[Line]) -> str:
    """The lines as a colour terminal shows them (for tests and benchmarks)."""
    buffer = io.StringIO()
    print_lines(make_console(buffer, env={"FORCE_COLOR": "1"}), lines)
    return buffer.getvalue()
