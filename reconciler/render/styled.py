"""Rich-free styled output: what renderers return when a terminal may show it in colour.

A `Line` is a tuple of `(text, style)` segments, a `Table` is columns and rows of such segments. Styles are
semantic names (`plan.add`, `risk.destructive`, `heading`, …); `cli/console.py` maps them to colours with
rich and prints tables with rich. The pure core may not import rich (import-linter's contract), and plain
data keeps the renderers testable as strings: `plain(lines)` is exactly what a terminal without colour shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Segment = tuple[str, str | None]
Line = tuple[Segment, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """Header names and rows of cells; `cli/console.py` aligns them (rich), never the renderer."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Segment, ...], ...]
    title: str | None = None


Block = Line | Table


def line(text: str, style: str | None = None) -> Line:
    return ((text, style),)


def plain(lines: Iterable[Line]) -> str:
    """The lines without styles, each ending in a newline."""
    return "".join("".join(text for text, _ in segments) + "\n" for segments in lines)
