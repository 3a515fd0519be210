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
from reconciler.policy.evaluate import is_policy, split
from reconciler.render.common import all_totals, summary
from reconciler.render.markdown import BUDGET, headline, render_markdown

MARKER = "<!-- kafka-reconciler:plan -->"
REASONS_SHOWN = 30  # clusters listed with their reasons
IMPACT_BUDGET = 12_000
DIAGNOSTICS_SHOWN = 50
POLICY_SHOWN = 50  # policy violations listed (the rest: the workflow log)


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


def cut_markdown(text: str, budget: int) -> str:
    """`text` if it fits, else its leading blocks (paragraphs, lists, tables, fenced code: what a blank line
    outside a code fence ends) that fit, with every `<details>` and code fence still open closed, and a note.
    Never a cut inside a line or a block: half a code span or an unclosed fence would leave the text after it,
    which quotes manifests, live as Markdown or HTML."""
    if len(text) <= budget:
        return text
    note = "… (cut; see the report)"
    kept: list[str] = []
    block: list[str] = []
    fenced = False
    used = 0
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        block.append(line)
        if line.strip() or fenced:
            continue
        size = sum(len(x) + 1 for x in block)
        if used + size > budget - len(note) - 64:  # room for the closing tags and the note
            break
        kept += block
        used += size
        block = []
    closing = ["</details>"] * (sum(x.count("<details>") for x in kept) - sum(x.count("</details>") for x in kept))
    return "\n".join([*kept, *closing, "", note]).strip("\n")


def _where(d: Diagnostic) -> str:
    return f"`{_plain(d.source.file)}:{d.source.line}` " if d.source else ""


def policy_section(violations: Sequence[Diagnostic], changes: Sequence[str], base: str) -> list[str]:
    """The "Policy" section: what the base revision's policies find (errors block the check, like any other
    error), and the policies this branch changes with what their new versions would flag."""
    if not violations and not changes:
        return []
    errors = sum(d.severity == "error" for d in violations)
    warnings = len(violations) - errors
    badge = "🛑" if errors else "⚠️" if warnings else "✅"
    counts = ", ".join(x for x in (f"{errors} error(s) block this pull request" if errors else "",
                                   f"{warnings} warning(s)" if warnings else "") if x) or "no violation"
    by = f" of `{_plain(base)}`" if base else ""
    lines = [f"### {badge} Policy: {counts}", "", f"Judged by the policies{by} (`clusters/policies.yaml`)."]
    lines += [""] if violations else []
    ordered = sorted(violations, key=lambda d: (d.severity != "error", d.sort_key()))
    for d in ordered[:POLICY_SHOWN]:
        lines.append(f"- {'🛑' if d.severity == 'error' else '⚠️'} {_where(d)}{_plain(d.message)}")
    if len(ordered) > POLICY_SHOWN:
        lines.append(f"- … {len(ordered) - POLICY_SHOWN} more in the workflow log")
    if changes:
        lines += ["", "**This branch changes policies.** This check used the base's versions; the new ones judge "
                  "pull requests once merged:", ""]
        lines += [f"- {_plain(line)}" for line in changes]
    lines.append("")
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
    policy_changes: Sequence[str] = (), consumers: Sequence[str] = (),
) -> str:
    """`notices`: per cluster, what this check did not use (settings taken from the base revision);
    `policy_changes`: the policies the branch changes and what they would newly flag (policy.compare).

    One H2 headline first, carrying the worst of errors (invalid manifests, clusters that could not be planned,
    policy errors: the check fails) and risk; every section below is an H3 (issue 39, item 5)."""
    policy_found, other = split(diagnostics)
    policy_found += [d for p in plans for d in p.diagnostics if is_policy(d)]
    blocking = (sum(d.severity == "error" for d in other) + len(failures or {})
                + sum(d.severity == "error" for d in set(policy_found)))
    total = all_totals(plans)
    if blocking:
        changes = f" · {summary(total)}" if total.units else ""
        head = [MARKER, f"## 🛑 Kafka config plan: blocked by {blocking} error(s){changes}", ""]
    else:
        head = [MARKER, headline(total), ""]
    head += consumers  # "Consumers at risk" (render/consumers.py, from the impact): who loses unread records
    if notices:
        head += ["### ⚠️ Not checked by this plan", ""]
        head += [f"- `{_plain(c)}`: {_plain(n)}" for c, said in sorted(notices.items()) for n in said]
        head.append("")
    head += _changes(base, merge_base, reasons or {}, removed)
    found, diagnostics = policy_found, other
    head += policy_section(sorted(set(found), key=Diagnostic.sort_key), policy_changes, base)
    tail: list[str] = []
    if any(d.severity == "error" for d in diagnostics):  # policy errors alone: in their own section
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
        tail += ["### Fleet impact", "", cut_markdown(impact.strip(), IMPACT_BUDGET), ""]
    used = sum(len(x) + 1 for x in head + tail)
    said = notices or {}
    shown = [replace(p, warnings=tuple(w for w in p.warnings if w not in said.get(p.cluster, ())),
                     diagnostics=tuple(d for d in p.diagnostics if not is_policy(d)))
             for p in plans]  # each notice once: above, under "Not checked by this plan"; policy: in its section
    body = render_markdown(shown, budget=max(4_000, BUDGET - used), heading=False) if plans else ""
    if not plans and not diagnostics and not found and not failures and revision:
        tail.append(f"<sub>revision `{revision[:12]}` · kafka-reconciler</sub>")
    return "\n".join([*head, body, *tail]).rstrip("\n") + "\n"
