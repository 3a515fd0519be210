"""The end-of-pass summary of `reconcile`: a table for people (stderr) and JSON for tools (stdout).

Pure: built from the pass result only; the table is a `render.styled.Table` that the command line lays out
with rich. Values in drift lines are the plan's display values (secrets are
already `(sensitive)` there).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from reconciler.errors import printable
from reconciler.gitops.drift import DriftReport
from reconciler.gitops.reconcile import Outcome, PassResult
from reconciler.plan import Plan
from reconciler.render.styled import Block, Table, line

_ORDER = ("applied", "not-taken", "planned", "in-sync", "refused", "failed", "skipped")
MAX_DRIFT_LINES = 20  # per cluster in the table view; JSON has all
DETAIL_WIDTH = 80  # the table's last column; failures are repeated in full below it


def _changes(plan: Plan | None) -> str:
    """`~1 -1 (destructive)`, `+2 1 topic`: only what is there."""
    if plan is None:
        return "-"
    c = plan.counts
    if not c.total:
        return "none"
    parts = [f"{sign}{n}" for sign, n in (("+", c.add), ("~", c.change), ("-", c.remove)) if n]
    if c.topics_created:
        parts.append(f"{c.topics_created} topic{'s' if c.topics_created > 1 else ''}")
    if c.partitions_added:
        parts.append(f"{c.partitions_added} partition{'s' if c.partitions_added > 1 else ''}")
    if c.topics_deleted:
        parts.append(f"{c.topics_deleted} topic{'s' if c.topics_deleted > 1 else ''} deleted")
    return " ".join(parts) + ("" if plan.max_risk == "safe" else f" ({plan.max_risk})")


def _drift_cell(drift: DriftReport | None) -> str:
    if drift is None:
        return "-"
    if drift.since is None:
        return "n/a"
    return str(len(drift.items))


def _detail(o: Outcome) -> str:
    if o.error:
        errors = [d.message for d in o.diagnostics if d.severity == "error"]
        first = printable(o.error.splitlines()[0] + (f": {errors[0]}" if errors else ""))
        return first if len(first) <= DETAIL_WIDTH else first[:DETAIL_WIDTH - 1] + "…"
    if o.audit_path:
        return f"audit {o.audit_path}"
    return ""


def text_lines(text: str) -> list[str]:
    """A message as the lines it was written in (a hint's `check:` lines), each one escaped on its own: a cron
    log reads text, not `\\n`. Later lines are indented: no text from a manifest or ZooKeeper starts a line."""
    first, *rest = text.split("\n")
    return [printable(first), *(printable(part if part.startswith(" ") else f"  {part}") for part in rest)]


def _value(value: str | None) -> str:
    return "(absent)" if value is None else value


def _drift_lines(o: Outcome) -> list[str]:
    d = o.drift
    if d is None or (not d.items and not d.note) or d.since is None:
        return []
    since = d.since
    revision = since.revision or "(no revision)"
    lines = [f"drift in {o.cluster} since the apply of {revision} by {since.user} at {since.time}:"]
    for item in d.items[:MAX_DRIFT_LINES]:
        what = f"  {item.entity} {item.key}"
        if item.key != "*":
            what += f": applied {_value(item.expected)}, live {_value(item.live)}"
        when = [f"modified {item.modified}"] if item.modified else []
        when += [f"change notification {item.notified}"] if item.notified else []
        lines.append(f"{what} ({', '.join([*when, 'by ' + item.by])})")
    if len(d.items) > MAX_DRIFT_LINES:
        lines.append(f"  … {len(d.items) - MAX_DRIFT_LINES} more (see --format json)")
    if d.note:
        lines.append(f"  note: {d.note}")
    return lines


_STATUS_STYLE = {"applied": "plan.add", "planned": "plan.change", "refused": "warning", "failed": "plan.remove",
                 "not-taken": "plan.remove"}


def policy_drift_lines(o: Outcome) -> list[str]:
    """The team's policies broken in ZooKeeper as read (kind Policy): drift from them, never applied."""
    if not o.policy_drift:
        return []
    shown = [f"  {text}" for text in o.policy_drift[:MAX_DRIFT_LINES]]
    more = len(o.policy_drift) - len(shown)
    return [f"policy drift in {o.cluster}: {len(o.policy_drift)} violation(s) in live state:", *shown,
            *([f"  … and {more} more (JSON has all)"] if more > 0 else [])]


def summary_blocks(result: PassResult) -> list[Block]:
    """The table of clusters, a count line, the drift details and every failure's diagnostics."""
    rev = result.revision
    # audit entries, revisions and errors quote text from ZooKeeper, git and the manifests: one line each,
    # always (a newline in an audit field must not start a line a CI runner reads as a workflow command)
    blocks: list[Block] = [line(printable(f"reconcile of {rev.describe() if rev else 'an unversioned directory'} "
                                          f"({result.started})"), "heading")]
    if result.error:
        blocks += [line(text, "plan.remove") for text in text_lines(f"error: {result.error}")]
    if result.outcomes:
        rows = tuple(
            ((o.cluster, None), (o.status, _STATUS_STYLE.get(o.status)), (_changes(o.plan), None),
             (_drift_cell(o.drift), None), (f"{o.seconds:.1f}s", None), (_detail(o), None))
            for o in result.outcomes
        )
        blocks.append(Table(("CLUSTER", "STATUS", "CHANGES", "DRIFT", "TIME", "DETAIL"), rows))
    counts: Counter[str] = Counter(o.status for o in result.outcomes)
    shown = ", ".join(f"{counts[s]} {s}" for s in _ORDER if counts[s])
    blocks.append(line(f"{len(result.outcomes)} cluster(s): {shown or 'none'}; {result.failures} failure(s)"))
    for o in result.outcomes:
        blocks += [line(printable(text)) for text in _drift_lines(o)]
        blocks += [line(printable(text)) for text in policy_drift_lines(o)]
    for o in result.outcomes:
        if o.failed:
            failure = text_lines(f"{o.cluster} {o.status}: {o.error or 'see the diagnostics'}")
            blocks += [line(text, "plan.remove" if i == 0 else None) for i, text in enumerate(failure)]
            blocks += [line(f"  {d.render()}") for d in o.diagnostics if d.severity == "error"]
            if o.verification is not None:
                blocks += [line(printable(f"  {p.line}")) for p in o.verification.problems()]
    return blocks


def _revision_json(result: PassResult) -> dict[str, Any] | None:
    rev = result.revision
    if rev is None:
        return None
    return {"sha": rev.sha, "recorded": rev.recorded, "author": rev.author, "time": rev.time,
            "subject": rev.subject, "dirty": rev.dirty}


def _outcome_json(o: Outcome) -> dict[str, Any]:
    plan = o.plan
    counts = plan.counts if plan is not None else None
    return {
        "cluster": o.cluster,
        "status": o.status,
        "failed": o.failed,
        "seconds": o.seconds,
        "planId": plan.plan_id if plan is not None else None,
        "maxRisk": plan.max_risk if plan is not None and not plan.is_empty else None,
        "changes": None if counts is None else {
            "add": counts.add, "change": counts.change, "remove": counts.remove,
            "topicsCreated": counts.topics_created, "partitionsAdded": counts.partitions_added,
            "topicsDeleted": counts.topics_deleted,
            **({"aclEntries": counts.acl_entries} if counts.acl_entries else {}),
        },
        "auditEntry": o.audit_path,
        "error": o.error,
        "diagnostics": [d.render() for d in o.diagnostics],
        "drift": o.drift.to_json() if o.drift is not None else None,
        "policyDrift": list(o.policy_drift),
        "verification": o.verification.to_json() if o.verification is not None else None,
    }


def summary_json(result: PassResult) -> dict[str, Any]:
    return {
        "revision": _revision_json(result),
        "started": result.started,
        "finished": result.finished,
        "failures": result.failures,
        "error": result.error,
        "problems": [d.render() for d in result.problems],
        "clusters": [_outcome_json(o) for o in result.outcomes],
    }
