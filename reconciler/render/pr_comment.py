"""The pull-request comment of `plan --git-base`: one Markdown document a workflow posts and then edits in place.

It starts with a hidden marker (the workflow finds its earlier comment by it), says what this check did not
use and which clusters the branch changes and why, then carries the plans (`render.markdown`: the summary,
every warning and unmanaged entity, the diffs), the clusters that could not be planned, and the fleet impact
summary when there is one; all within GitHub's comment limit. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from reconciler.errors import Diagnostic, printable
from reconciler.plan import Plan
from reconciler.render.markdown import BUDGET, render_markdown

MARKER = "<!-- kafka-reconciler:plan -->"
REASONS_SHOWN = 30  # clusters listed with their reasons
IMPACT_BUDGET = 12_000
DIAGNOSTICS_SHOWN = 50


def _plain(text: str) -> str:
    """Free text: one line, no HTML, no @mentions, no links (the same rules as the plan renderer)."""
    text = printable(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@\u200b").replace("[", "\\[").replace("]", "\\]")


def _fenced(lines: Sequence[str]) -> list[str]:
    body = [line.replace("```", "`\u200b``") for line in lines]
    return ["```", *body, "```"]


def _changes(base: str, merge_base: str, reasons: Mapping[str, Sequence[str]], removed: Sequence[str]) -> list[str]:
    shown = f"`{_plain(base)}`" + (f" (merge base `{merge_base[:12]}`)" if merge_base else "")
    if not reasons:
        return [f"This branch changes no cluster since {shown}.", ""]
    lines = [f"<details><summary>{len(reasons)} cluster(s) changed since {shown}</summary>", ""]
    for cluster, why in list(reasons.items())[:REASONS_SHOWN]:
        lines.append(f"- `{_plain(cluster)}`: {_plain('; '.join(why))}")
    if len(reasons) > REASONS_SHOWN:
        lines.append(f"- … and {len(reasons) - REASONS_SHOWN} more")
    lines += ["", "</details>", ""]
    if removed:
        lines += [f"Removed cluster directories (not planned; live configuration is left as it is): "
                  f"{', '.join(f'`{_plain(c)}`' for c in removed)}", ""]
    return lines


def render_comment(
    plans: Sequence[Plan],
    *,
    base: str,
    merge_base: str = "",
    revision: str | None = None,
    reasons: Mapping[str, Sequence[str]] | None = None,
    removed: Sequence[str] = (),
    failures: Mapping[str, str] | None = None,
    diagnostics: Sequence[Diagnostic] = (),
    impact: str | None = None,
    notices: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """`notices`: per cluster, what this check did not use (settings taken from the base revision)."""
    head = [MARKER]
    if notices:
        head += ["### ⚠️ Not checked by this plan", ""]
        head += [f"- `{_plain(c)}`: {_plain(n)}" for c, said in sorted(notices.items()) for n in said]
        head.append("")
    head += _changes(base, merge_base, reasons or {}, removed)
    tail: list[str] = []
    if diagnostics:
        errors = [d for d in diagnostics if d.severity == "error"]
        tail += [f"### 🛑 Invalid manifests: {len(errors)} error(s)", ""]
        tail += _fenced([d.render() for d in diagnostics[:DIAGNOSTICS_SHOWN]])
        if len(diagnostics) > DIAGNOSTICS_SHOWN:
            tail.append(f"… {len(diagnostics) - DIAGNOSTICS_SHOWN} more in the workflow log")
        tail.append("")
    if failures:
        tail += ["### 🛑 Clusters that could not be planned", ""]
        tail += [f"- `{_plain(c)}`: {_plain(msg.splitlines()[0])}" for c, msg in sorted(failures.items())]
        tail.append("")
    if impact:
        text = impact if len(impact) <= IMPACT_BUDGET else impact[:IMPACT_BUDGET] + "\n\n… (cut; see the report)"
        tail += ["### Fleet impact", "", text.strip(), ""]
    used = sum(len(x) + 1 for x in head + tail)
    said = notices or {}
    shown = [replace(p, warnings=tuple(w for w in p.warnings if w not in said.get(p.cluster, ())))
             for p in plans]  # each notice once: above, under "Not checked by this plan"
    body = render_markdown(shown, budget=max(4_000, BUDGET - used)) if plans else ""
    if not plans and not diagnostics and not failures and revision:
        tail.append(f"<sub>revision `{revision[:12]}` · kafka-reconciler</sub>")
    return "\n".join([*head, body, *tail]).rstrip("\n") + "\n"
