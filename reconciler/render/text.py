"""Plans as terminal text, in the style of `terraform plan`: a block per cluster, a summary line at the end.

ANSI colours only when asked (`color=True`; the CLI decides from the terminal, `--no-color` and NO_COLOR):
green `+`, yellow `~`, red `-`, bold red for destructive and bold yellow for disruptive tags.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.plan import Change, Plan
from reconciler.render.common import (
    change_text,
    entity_note,
    entity_symbol,
    header_details,
    ignored_text,
    increase_text,
    overall_line,
    plan_totals,
    printable,
    risk_tag,
    secret_hint,
    source,
    summary,
    topic_config_lines,
    topic_text,
    unmanaged_text,
)

_RESET = "\x1b[0m"
_OP_COLOR = {"+": "\x1b[32m", "~": "\x1b[33m", "-": "\x1b[31m"}
_RISK_COLOR = {"destructive": "\x1b[1;31m", "disruptive": "\x1b[1;33m"}
_BOLD = "\x1b[1m"


class _Out:
    """Collects lines; colours are applied here so the layout code stays colour-blind."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.lines: list[str] = []

    def add(self, text: str = "", style: str | None = None) -> None:
        if not text and (not self.lines or not self.lines[-1]):
            return  # never two blank lines in a row, none at the top
        text = printable(text)
        self.lines.append(f"{style}{text}{_RESET}" if self.color and style and text else text)


def _change(out: _Out, c: Change) -> None:
    extras = [x for x in (secret_hint(c), source(c.source)) if x]
    tail = "  " + "  ".join(f"({x})" for x in extras) if extras else ""
    out.add(f"      {change_text(c)}{tail}", _OP_COLOR[c.op])
    tag = risk_tag(c)
    if tag is not None:
        out.add(f"          {tag}", _RISK_COLOR.get(c.risk))


def _plan(out: _Out, plan: Plan, several: bool) -> None:
    details = header_details(plan)
    out.add(f"Cluster {plan.cluster}" + (f"  ({details})" if details else ""), _BOLD)
    out.add()
    for e in plan.entities:
        symbol = entity_symbol(e)
        out.add(f"  {symbol} {e.ref.display}  ({entity_note(e)})", _OP_COLOR[symbol])
        for c in e.changes:
            _change(out, c)
    for t in plan.topics_to_create:
        src = source(t.source)
        out.add(f"  {topic_text(t)}" + (f"  ({src})" if src else ""), _OP_COLOR["+"])
        for line in topic_config_lines(t):
            out.add(f"        {line}", _OP_COLOR["+"])
    for p in plan.partition_increases:
        src = source(p.source)
        out.add(f"  {increase_text(p)}" + (f"  ({src})" if src else ""), _OP_COLOR["~"])
    if plan.is_empty and several:
        out.add("  No changes.")
    notes = [n for n in (unmanaged_text(plan), ignored_text(plan)) if n]
    if notes or plan.warnings:
        out.add()
    for note in notes:
        out.add(f"  {note}")
    for warning in plan.warnings:
        out.add(f"  Warning: {warning}", _OP_COLOR["~"])
    if several and not plan.is_empty:
        out.add()
        out.add(f"  {plan.cluster}: {summary(plan_totals(plan))}.")
    out.add()


def render_text(plans: Sequence[Plan], *, color: bool = False) -> str:
    """The plans for a terminal; the last line is always `Plan: …` or `No changes. …`."""
    out = _Out(color)
    for plan in plans:
        _plan(out, plan, several=len(plans) > 1)
    out.add(overall_line(plans), _BOLD)
    return "\n".join(out.lines) + "\n"
