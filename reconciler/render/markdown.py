"""Plans as one GitHub pull-request comment.

Layout: a title with the overall summary and a risk badge, a table of clusters, then per cluster with
something to say: its destructive/disruptive reasons first (what a reviewer must not miss), warnings, and a
```diff block (GitHub colours `+`/`-`), folded into <details> when longer than 30 lines. The comment stays
under GitHub's 65,536-character limit: past the budget the rest is cut with a note pointing at the plan
artifact. Text from manifests and live state is escaped so it cannot ping people or inject HTML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reconciler.model import Risk
from reconciler.plan import Change, Plan
from reconciler.render import reassignment as moves
from reconciler.render.attention import attention_markdown
from reconciler.render.common import (
    NO_CHANGES,
    Totals,
    acl_lines,
    acl_note,
    acl_symbol,
    all_totals,
    entity_note,
    entity_symbol,
    ignored_text,
    plan_totals,
    printable,
    secret_hint,
    shown,
    source,
    summary,
)
from reconciler.render.md_text import code, plain
from reconciler.units import describe

GITHUB_LIMIT = 65_536
BUDGET = 60_000  # headroom for emoji counted as two UTF-16 units and text a workflow wraps around it
DETAILS_OVER = 30  # diff lines folded into <details> beyond this
REASONS_SHOWN = 20  # risk reasons listed per cluster
CLUSTER_ROWS = 50  # rows in the clusters table
PLAN_IDS_SHOWN = 10
BADGE: dict[Risk, str] = {"safe": "✅", "disruptive": "⚠️", "destructive": "🛑"}
_RESERVE = 400  # always left for closing a block and the truncation note

_Line = tuple[str, int]  # a diff line and the number of changes it completes (0 or 1)


_plain = plain
_code = code


def escape_markdown(text: str) -> str:
    """Manifest- or broker-derived free text for a Markdown document (the PR comment's own escaping)."""
    return plain(text)


def code_markdown(text: str) -> str:
    """Manifest-derived names (entities, keys) as a Markdown code span, fenced past any backticks inside."""
    return code(text)


def _items(plan: Plan) -> int:
    """Changes as the truncation note counts them: key changes, topic creations, partition increases."""
    keys = sum(len(e.changes) for e in plan.entities)
    return (keys + len(plan.topics_to_create) + len(plan.partition_increases) + len(plan.topics_to_delete)
            + sum(len(a.add) + len(a.remove) for a in plan.acls)
            + (len(plan.reassignment.moves) if plan.reassignment is not None else 0))


def _comment(c: Change) -> str:
    parts = [c.risk if c.risk != "safe" else None, secret_hint(c), source(c.source)]
    notes = [p for p in parts if p]
    return f"  # {' · '.join(notes)}" if notes else ""


def _change_lines(c: Change) -> list[str]:
    """A `~` is a `-`/`+` pair so GitHub colours both sides; a secret's `~` is one `!` line (no values)."""
    if c.op == "~" and c.sensitive:
        lines = [f"! {c.key} = {shown(c, 'after')}"]
    else:
        before = "(sensitive)" if c.sensitive else shown(c, "before")
        lines = [f"- {c.key} = {before}"] if c.op in "~-" else []
        lines += [f"+ {c.key} = {shown(c, 'after')}"] if c.op in "~+" else []
    lines[-1] += _comment(c)  # risk, secret name and source end the change
    return lines


def _diff(plan: Plan) -> list[_Line]:
    lines: list[_Line] = []
    kraft = plan.backend == "kraft"  # no znodes to name
    if plan.topics_to_delete:
        lines.append(("@@ topics to DELETE @@", 0))
    for gone in plan.topics_to_delete:
        lines.append((f"- topic {gone.name}: {gone.partitions} partitions, replication factor "
                      f"{gone.replication_factor}  # policy.deleteTopics {gone.matched}", 1))
    for a in plan.acls:  # who gains or loses access, before config
        src = source(a.source)
        head = f"@@ {acl_symbol(a)} acl {a.resource.display} ({acl_note(a, kraft)}) @@"
        lines.append((head + (f"  # {src}" if src else ""), 0))
        entries = acl_lines(a)
        for i, (_, text) in enumerate(entries):
            lost = text.startswith("- Allow") or text.startswith("+ Deny")
            lines.append((text + ("  # access LOST" if lost else ""), 1 if i == len(entries) - 1 else 0))
    for e in plan.entities:
        lines.append((f"@@ {entity_symbol(e)} {e.ref.display} ({entity_note(e, kraft)}) @@", 0))
        for c in e.changes:
            block = _change_lines(c)
            lines.extend((text, 0) for text in block[:-1])
            lines.append((block[-1], 1))
    if plan.topics_to_create:
        lines.append(("@@ topics to create @@", 0))
    for t in plan.topics_to_create:
        src = source(t.source)
        text = f"+ topic {t.name}: {t.partitions} partitions, replication factor {t.replication_factor}"
        lines.append((text + (f"  # {src}" if src else ""), 1))
        lines.extend((f"+     {k} = {describe(k, v)}", 0) for k, v in sorted(t.config.items()))
    if plan.partition_increases:
        lines.append(("@@ partitions to add @@", 0))
    for p in plan.partition_increases:
        src = source(p.source)
        lines.append((f"+ topic {p.name}: partitions {p.current} -> {p.target} (+{p.target - p.current})"
                      + (f"  # {src}" if src else ""), 1))
    if plan.reassignment is not None and plan.reassignment.moves:
        lines.append(("@@ replicas to move @@", 0))
        for m in plan.reassignment.moves:
            src = source(m.source)
            lines.append((f"! {moves.move_text(m)}" + (f"  # {src}" if src else ""), 1))
    return lines


def _reassignment(plan: Plan) -> list[str]:
    """The reassignment's headline, its throttle and the bytes per broker, as a table, above the diff."""
    r = plan.reassignment
    if r is None:
        return []
    out = [f"**Reassignment:** {_plain(moves.headline(r))}.", "",
           f"Throttle: {_plain(moves.throttle_text(r))}" + (f"; {_plain(moves.pacing(r))}." if r.moves else "."), ""]
    rows = moves.broker_rows(r)
    if rows:
        out += ["| Broker | Receives | Sends |", "| ---: | ---: | ---: |"]
        out += [f"| {broker} | {receives} | {sends} |" for broker, receives, sends in rows]
        out.append("")
    return out


def _reasons(plan: Plan) -> list[str]:
    out: list[str] = []
    for risk in ("destructive", "disruptive"):
        found = [(e.ref.display, c.key, c.reasons) for e in plan.entities for c in e.changes if c.risk == risk]
        found += [(f"topics/{p.name}", "partitions", p.reasons) for p in plan.partition_increases
                  if p.risk == risk]
        found += [(f"topics/{g.name}", "(topic)", g.reasons) for g in plan.topics_to_delete if g.risk == risk]
        found += [(f"topics/{t.name}", "(new topic)", t.reasons) for t in plan.topics_to_create if t.risk == risk]
        found += [(f"acl {a.resource.display}", "(access)", a.reasons) for a in plan.acls if a.risk == risk]
        found += [("reassignment", "(replicas)", plan.reassignment.reasons)
                  for _ in (1,) if plan.reassignment is not None and plan.reassignment.risk == risk]
        if not found:
            continue
        out.append(f"**{BADGE[risk]} {risk.capitalize()} ({len(found)})**")
        out.extend(f"- {_code(ref)} {_code(key)}: {_plain('; '.join(reasons) or 'no reason recorded')}"
                   for ref, key, reasons in found[:REASONS_SHOWN])
        if len(found) > REASONS_SHOWN:
            out.append(f"- … and {len(found) - REASONS_SHOWN} more (see the diff and the plan artifact)")
        out.append("")
    return out


class _Doc:
    """Lines under a character budget, each made printable (no control characters) on the way in."""

    def __init__(self, budget: int) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.budget = budget

    def fits(self, text: str) -> bool:
        """Adds the line if it fits the budget; False (and nothing added) otherwise."""
        text = printable(text)
        if self.size + len(text) + 1 > self.budget:
            return False
        self.lines.append(text)
        self.size += len(text) + 1
        return True

    def fits_all(self, texts: list[str]) -> bool:
        """All or nothing, so a block is never opened without room to show part of it."""
        safe = [printable(t) for t in texts]
        if self.size + sum(len(t) + 1 for t in safe) > self.budget:
            return False
        self.add(*safe)
        return True

    def add(self, *texts: str) -> None:
        for text in texts:
            text = printable(text)
            self.lines.append(text)
            self.size += len(text) + 1


def headline(total: Totals) -> str:
    """The document's one H2: the worst risk and the totals (a PR comment puts the worst of errors first)."""
    if not total.units:
        return f"## {BADGE['safe']} Kafka config plan: no changes"
    return f"## {BADGE[total.max_risk]} Kafka config plan: {summary(total)}"


def _head(plans: Sequence[Plan], total: Totals, heading: bool = True) -> list[str]:
    lines = [headline(total), ""] if heading else []
    if not total.units:
        lines += [NO_CHANGES, ""]
    else:
        if total.max_risk == "destructive":
            lines += ["**Destructive changes:** `apply` refuses them without `--allow-destructive`.", ""]
    lines += ["| Cluster | Add | Change | Remove | Topics | Max risk |",
              "| --- | ---: | ---: | ---: | ---: | --- |"]
    for plan in plans[:CLUSTER_ROWS]:
        t = plan_totals(plan)
        topics = f"{t.topics} (+{t.partitions} partitions)" if t.partitions else str(t.topics)
        risk = f"{BADGE[t.max_risk]} {t.max_risk}" if t.units else "no changes"
        cells = [_code(plan.cluster, cell=True), str(t.add), str(t.change), str(t.remove), topics, risk]
        lines.append(f"| {' | '.join(cells)} |")
    if len(plans) > CLUSTER_ROWS:
        lines.append(f"| … {len(plans) - CLUSTER_ROWS} more clusters | | | | | |")
    return [*lines, ""]


def _footer(plans: Sequence[Plan]) -> list[str]:
    revisions = sorted({p.revision for p in plans if p.revision})
    parts = [f"revision {', '.join(_code(r) for r in revisions)}"] if revisions else []
    if len(plans) == 1:
        parts.insert(0, f"plan {_code(plans[0].plan_id or '(no id)')}")
    elif len(plans) <= PLAN_IDS_SHOWN:
        ids = (f"{_code(p.cluster)} {_code(p.plan_id or '(no id)')}" for p in plans)
        parts.insert(0, "plans " + ", ".join(ids))
    else:
        parts.insert(0, f"{len(plans)} plans (ids in the plan artifact)")
    return ["---", f"<sub>{' · '.join(parts)} · kafka-reconciler</sub>"]


def _section(doc: _Doc, plan: Plan) -> int | None:
    """Writes one cluster; returns None when all fit, else how many of its changes were left out."""
    t = plan_totals(plan)
    notes = [n for n in (ignored_text(plan),) if n]
    if not t.units:
        return None
    head = [f"### {BADGE[t.max_risk]} {_code(plan.cluster)}: {summary(t)}", "", *_reasons(plan),
            *_reassignment(plan)]
    diff = _diff(plan)
    ticks = max((len(m) for text, _ in diff for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (ticks + 1)
    fold = len(diff) > DETAILS_OVER
    opening = [*head]
    if diff:
        opening += [f"<details><summary>{len(diff)} diff lines</summary>", ""] if fold else []
        opening.append(f"{fence}diff")
    closing = ([fence] + (["", "</details>"] if fold else []) + [""]) if diff else []
    shown_items = 0
    if not doc.fits_all(opening):
        return _items(plan)
    for text, units in diff:
        if not doc.fits(text):
            doc.add(*closing)
            return _items(plan) - shown_items
        shown_items += units
    doc.add(*closing)
    for note in notes:
        if not doc.fits(f"<sub>{_plain(note)}</sub>"):
            return 0
        doc.add("")
    return None


def _attention(doc: _Doc, plans: Sequence[Plan]) -> None:
    """The warnings and unmanaged entities, above every cluster's diff, in at most half the budget."""
    limit, doc.budget = doc.budget, doc.size + (doc.budget - doc.size) // 2
    for i, line in enumerate(lines := attention_markdown(plans)):
        if not doc.fits(line):
            doc.add(f"> **… {len(lines) - i} more lines of this section (see the plan artifact)**", "")
            break
    doc.budget = limit


def render_markdown(plans: Sequence[Plan], *, budget: int = BUDGET, heading: bool = True) -> str:
    """One PR comment for all plans, at most `budget` characters (below GitHub's 65,536). `heading` False: without
    the H2 headline (`headline`), for a document that puts its own first (the PR comment)."""
    total = all_totals(plans)
    footer = _footer(plans)
    doc = _Doc(budget - _RESERVE - sum(len(printable(f)) + 1 for f in footer))
    doc.add(*_head(plans, total, heading))
    _attention(doc, plans)
    for i, plan in enumerate(plans):
        left = _section(doc, plan)
        if left is not None:
            left += sum(_items(p) for p in plans[i + 1:])
            doc.budget += _RESERVE
            what = f"{left} more changes" if left else "the rest"
            doc.add(f"> **… {what} (see the plan artifact)**: this comment is cut to stay within GitHub's "
                    "65,536-character limit.", "")
            break
    doc.add(*footer)
    return "\n".join(doc.lines) + "\n"
