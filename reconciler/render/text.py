"""Plans as terminal text, in the style of `terraform plan`: a block per cluster, a summary line at the end.

`plan_lines` gives styled lines (see `render/styled.py`): the style names say what a line is (`plan.add`,
`plan.change`, `plan.remove`, `risk.destructive`, `risk.disruptive`, `heading`, `warning`) and the command
line colours them with rich (green `+`, yellow `~`, red `-`, bold red destructive and bold yellow disruptive
tags) when colour is wanted. `render_text` is the same text without styles.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.plan import Change, Plan
from reconciler.render.common import (
    acl_lines,
    acl_note,
    acl_symbol,
    all_totals,
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
from reconciler.render.styled import Line, plain

_OP_STYLE = {"+": "plan.add", "~": "plan.change", "-": "plan.remove"}
_RISK_STYLE = {"destructive": "risk.destructive", "disruptive": "risk.disruptive"}


class _Out:
    """Collects lines; each line carries its style name, so the layout code stays colour-blind."""

    def __init__(self) -> None:
        self.lines: list[Line] = []

    def add(self, text: str = "", style: str | None = None) -> None:
        if not text and (not self.lines or not self.lines[-1][0][0]):
            return  # never two blank lines in a row, none at the top
        self.lines.append(((printable(text), style if text else None),))


def _change(out: _Out, c: Change) -> None:
    extras = [x for x in (secret_hint(c), source(c.source)) if x]
    tail = "  " + "  ".join(f"({x})" for x in extras) if extras else ""
    out.add(f"      {change_text(c)}{tail}", _OP_STYLE[c.op])
    tag = risk_tag(c)
    if tag is not None:
        out.add(f"          {tag}", _RISK_STYLE.get(c.risk))


def _plan(out: _Out, plan: Plan, several: bool) -> None:
    details = header_details(plan)
    out.add(f"Cluster {plan.cluster}" + (f"  ({details})" if details else ""), "heading")
    out.add()
    kraft = plan.backend == "kraft"  # no znodes to name
    for gone in plan.topics_to_delete:  # first: what loses data
        out.add(f"  - topic {gone.name} ({gone.partitions} partitions) will be DELETED "
                f"(policy.deleteTopics {gone.matched!r})", _OP_STYLE["-"])
        out.add(f"          [destructive: {'; '.join(gone.reasons)}]", _RISK_STYLE.get(gone.risk))
    for a in plan.acls:  # next: who gains or loses access
        symbol = acl_symbol(a)
        src = source(a.source)
        out.add(f"  {symbol} acl {a.resource.display}  ({acl_note(a, kraft)})" + (f"  ({src})" if src else ""),
                _OP_STYLE[symbol])
        for op, text in acl_lines(a):
            out.add(f"      {text}", _OP_STYLE[op])
        if a.reasons:
            out.add(f"          [{a.risk}: {'; '.join(a.reasons)}]", _RISK_STYLE.get(a.risk))
    for e in plan.entities:
        symbol = entity_symbol(e)
        out.add(f"  {symbol} {e.ref.display}  ({entity_note(e, kraft)})", _OP_STYLE[symbol])
        for c in e.changes:
            _change(out, c)
    for t in plan.topics_to_create:
        src = source(t.source)
        out.add(f"  {topic_text(t)}" + (f"  ({src})" if src else ""), _OP_STYLE["+"])
        for line in topic_config_lines(t):
            out.add(f"        {line}", _OP_STYLE["+"])
        if (tag := risk_tag(t)) is not None:
            out.add(f"          {tag}", _RISK_STYLE.get(t.risk))
    for p in plan.partition_increases:
        src = source(p.source)
        out.add(f"  {increase_text(p)}" + (f"  ({src})" if src else ""), _OP_STYLE["~"])
        tag = risk_tag(p)
        if tag is not None:
            out.add(f"          {tag}", _RISK_STYLE.get(p.risk))
    if plan.reassignment is not None:
        _reassignment(out, plan)
    if plan.is_empty and several:
        out.add("  No changes.")
    notes = [n for n in (unmanaged_text(plan), ignored_text(plan)) if n]
    if plan.unmanaged_acls:
        notes.append(f"{len(plan.unmanaged_acls)} ACL resource pattern(s) no manifest declares, left as they are "
                     f"(policy.pruneAcls removes them): {', '.join(plan.unmanaged_acls)}")
    if notes or plan.warnings:
        out.add()
    for note in notes:
        out.add(f"  {note}")
    for warning in plan.warnings:
        out.add(f"  Warning: {warning}", "warning")
    if several and not plan.is_empty:
        out.add()
        out.add(f"  {plan.cluster}: {summary(plan_totals(plan))}.")
    out.add()


def _reassignment(out: _Out, plan: Plan) -> None:
    """The replica moves: the headline, the bytes per broker, the throttle, then each move."""
    from reconciler.render import reassignment as moves  # with reassign's planner: only plans that move replicas

    r = plan.reassignment
    assert r is not None
    out.add(f"  ~ reassignment: {moves.headline(r)}", _OP_STYLE["~"])
    rows = moves.broker_rows(r)
    if rows:
        width = max(len("receives"), *(len(c) for row in rows for c in row[1:])) + 2
        out.add(f"      {'broker':<8}{'receives':<{width}}sends", _OP_STYLE["~"])
        for broker, receives, sends in rows:
            out.add(f"      {broker:<8}{receives:<{width}}{sends}", _OP_STYLE["~"])
    out.add(f"      throttle: {moves.throttle_text(r)}", _OP_STYLE["~"])
    if r.moves:
        out.add(f"      {moves.pacing(r)}", _OP_STYLE["~"])
    for m in r.moves:
        src = source(m.source)
        out.add(f"      {moves.move_text(m)}" + (f"  ({src})" if src else ""), _OP_STYLE["~"])
    if r.reasons:
        out.add(f"          [{r.risk}: {'; '.join(r.reasons)}]", _RISK_STYLE.get(r.risk))


def plan_lines(plans: Sequence[Plan]) -> list[Line]:
    """The plans for a terminal, as styled lines; the last is always `Plan: …` or `No changes. …`."""
    out = _Out()
    for plan in plans:
        _plan(out, plan, several=len(plans) > 1)
    out.add(overall_line(plans), "heading")
    return out.lines


def render_text(plans: Sequence[Plan]) -> str:
    """`plan_lines` without styles: what a terminal without colour shows."""
    return plain(plan_lines(plans))


def apply_summary(plans: Sequence[Plan]) -> str:
    """Apply's last line, as Terraform ends: `Apply complete: 1 added, 5 changed, 0 removed.` (plus topics
    created and partitions added when there are any)."""
    t = all_totals(plans)
    parts = [f"{t.add} added", f"{t.change} changed", f"{t.remove} removed"]
    if t.topics:
        parts.append(f"{t.topics} topic{'s' if t.topics != 1 else ''} created")
    if t.partitions:
        parts.append(f"{t.partitions} partition{'s' if t.partitions != 1 else ''} added")
    if t.deleted:
        parts.append(f"{t.deleted} topic{'s' if t.deleted != 1 else ''} marked for deletion")
    if t.acl_add or t.acl_remove:
        parts.append(f"ACL entries: {t.acl_add} added, {t.acl_remove} removed")
    if t.moves:
        parts.append(f"{t.moves} partition{'s' if t.moves != 1 else ''} reassigned")
    return f"Apply complete: {', '.join(parts)}."
