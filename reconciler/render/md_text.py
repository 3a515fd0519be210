"""Text from manifests and live state made safe for a GitHub Markdown document (the PR comment).

Free text gets no HTML, no @mentions and no link syntax; names become code spans fenced past any backticks
inside. `render.markdown` re-exports both (`escape_markdown`, `code_markdown`) for the other Markdown writers.
"""

from __future__ import annotations

import re


def plain(text: str) -> str:
    """Free text (warnings, reasons): no HTML, no @mentions, no link syntax."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@\u200b").replace("[", "\\[").replace("]", "\\]")


def code(text: str, cell: bool = False) -> str:
    """A name as a code span, fenced past any backticks inside; `cell`: inside a table (`|` escaped)."""
    ticks = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if ticks else ""
    out = f"{fence}{pad}{text}{pad}{fence}"
    return out.replace("|", "\\|") if cell else out
