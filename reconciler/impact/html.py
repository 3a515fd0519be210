"""A self-contained HTML impact report, rendered from `templates/report.html.j2` with Jinja2 autoescaping.

Made to be looked at: which change is assessed (revision range, files, clusters), totals as cards with a
share-of-fleet bar, the risk split of affected topics as one stacked bar, bar charts with labelled axes per
key and per cluster (clusters most at risk first), then the rule table and examples. Inline CSS and SVG only:
no scripts, no external resources. This module computes the chart geometry; the template writes the markup,
and autoescaping escapes every value from manifests or live state (nothing is marked safe).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.impact.report import DELETION_ROWS, count, deletion_rows, headline, redacted, size
from reconciler.impact.riskexpr import RULES
from reconciler.units import short

COLOURS = {"destructive": "#d1242f", "disruptive": "#d4a72c", "safe": "#2da44e"}
RISKS = ("destructive", "disruptive", "safe")
BARS = 25
TEMPLATES = Path(__file__).parent / "templates"
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.sub{color:#59636e;margin-bottom:18px}
.cards{display:grid;grid-template-columns:repeat(5,1fr);gap:12px;margin-top:18px}
.card{background:#fff;border:1px solid #d1d9e0;border-radius:8px;padding:12px 14px}
.card .n{font-size:24px;font-weight:600}.card .l{color:#59636e;font-size:12px;text-transform:uppercase}
.card .of{color:#59636e;font-size:12px}
.track{height:6px;background:#eaeef2;border-radius:3px;margin-top:8px;overflow:hidden}
.fill{height:6px;background:#0969da}
.panel{background:#fff;border:1px solid #d1d9e0;border-radius:8px;padding:14px 16px}
.assessed th{width:140px;color:#59636e;font-weight:normal}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2}
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:1px 4px;border-radius:4px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px}
.legend span{margin-right:16px}.dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}svg text.axis{fill:#59636e;font-style:italic}
ul.why{margin:0;padding-left:16px}.none{color:#59636e}
"""


def _card(label: str, value: int | None, whole: int | None, shown: str | None = None) -> dict[str, Any]:
    share = (value or 0) / whole if whole else 0.0
    return {"label": label, "shown": shown or count(value), "whole": count(whole) if whole else None,
            "share": 100 * share}


def _risk_bar(by_risk: dict[str, int]) -> dict[str, Any]:
    total = sum(by_risk.values())
    legend: list[dict[str, Any]] = [{"risk": r, "n": by_risk.get(r, 0), "colour": COLOURS[r]} for r in RISKS]
    if not total:
        return {"segments": [], "legend": legend}
    x, segments = 0.0, []
    for seg in legend:
        width = 1000 * int(seg["n"]) / total
        if width:
            segments.append({**seg, "x": x, "width": width})
        x += width
    return {"segments": segments, "legend": legend}


def _ticks(top: int) -> list[int]:
    """0, then two or three round values up to `top` (1, 2 or 5 × a power of ten)."""
    step = 1
    while top / step > 4:
        for factor in (2, 5, 10):
            if top / (step * factor) <= 4:
                step *= factor
                break
        else:
            step *= 10
    return list(range(0, top + 1, step))


def _bar_chart(rows: Sequence[dict[str, Any]], label: str, value: str, title: str, y_label: str) -> dict[str, Any]:
    """A horizontal bar chart: categories on the y axis (labelled `y_label`), `value` on a labelled x axis."""
    shown_rows = [r for r in rows if r[value]][:BARS]
    top = max((r[value] for r in shown_rows), default=0)
    bar, left, width, first = 22, 260, 620, 20
    bars = []
    for i, r in enumerate(shown_rows):
        name = str(r[label])
        bars.append({"y": first + i * bar, "name": name, "shown": name if len(name) <= 38 else name[:36] + "…",
                     "value": r[value], "risk": r["risk"], "colour": COLOURS[r["risk"]],
                     "width": max(2.0, width * r[value] / top)})
    axis_y = first + bar * len(shown_rows) + 2
    ticks = [{"x": left + width * t / top, "value": t} for t in _ticks(top)] if top else []
    return {"bars": bars, "title": title, "x_label": f"{value} affected", "y_label": y_label, "left": left,
            "width": width, "bar": bar, "top": first, "axis_y": axis_y, "ticks": ticks, "height": axis_y + 40}


def _with_values(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "before_shown": short(r["key"], r["before"]), "after_shown": short(r["key"], r["after"]),
             "reasons": list(r.get("reasons") or ())} for r in rows]


def _meaning(rule: str) -> str:
    """A rule's reason with placeholders for its values ("retention lowered from X to Y: data older than Y is
    deleted"): what the rule means, whatever values fired it."""
    found = RULES.get(rule)
    if found is None:
        return ""
    return found.reason.format(key="the key", before="X", after="Y", detail="…")


def _with_meaning(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "meaning": _meaning(str(r["rule"]))} for r in rows]


def _deleted(s: dict[str, Any]) -> dict[str, Any] | None:
    """The topics policy.deleteTopics deletes: totals and the rows shown (most bytes first); None if none."""
    d = s.get("topicsDeleted") or {}
    if not d.get("topics"):
        return None
    rows = deletion_rows(d, DELETION_ROWS)
    return {**d, "shown": rows, "more": len(d.get("rows") or ()) - len(rows)}


def _consumers(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """The "Consumers at risk" panel: totals, rows with their figures as text, freshness, clusters not read."""
    from reconciler.render import consumers as C

    if not section or not (section.get("groupsAtRisk") or section.get("topicsLowered", 1)):
        return None  # no retention goes down: nothing to say
    rows = [{"cluster": C.name(r["cluster"]), "topic": C.name(r["topic"]), "group": C.name(r["group"]),
             "records": C.records(r["records"]), "bytes": C.size_range(r.get("bytes")), "lag": C.lag(r["lagMs"]),
             "state": C.state(r), "sentence": C.sentence(r, md=False)} for r in (section.get("rows") or [])[:50]]
    return {"groups": section.get("groupsAtRisk") or 0, "clusters": section.get("clustersAtRisk") or 0,
            "records": C.records(section.get("recordsAtRisk") or (0, 0)), "rows": rows,
            "more": max(0, (section.get("groupTopicsAtRisk") or 0) - len(rows)), "known": section.get("known"),
            "read_at": C.read_at(section),
            "not_read": [(C.name(c["cluster"]), C.name(c["notRead"], 200)) for c in section.get("clusters") or ()
                         if c.get("notRead")]}


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=False, keep_trailing_newline=True)
    env.filters["count"] = count
    env.filters["size"] = size
    return env


def render_html(summary: dict[str, Any]) -> str:
    s = redacted(summary)
    inv = s["inventory"]
    source = s.get("source") or {}
    by_cluster = s["byCluster"]
    context = {
        "css": CSS,
        "colours": COLOURS,
        "headline": headline(s),
        "before": str(source.get("before", "the inventory")),
        "change": {"head": None, "subject": None, "dirty": False, "base": source.get("gitBase"), "files": None,
                   **(source.get("change") or {})},
        "clusters": list(s["clusters"]),
        "cards": [
            _card("clusters", s["clustersAffected"], inv["clusters"]),
            _card("brokers", s["brokersAffected"], inv["brokers"]),
            _card("topics", s["topicsAffected"], inv["topics"]),
            _card("partitions", s["partitionsAffected"], inv["partitions"]),
            _card("bytes", s["bytesAffected"], None, size(s["bytesAffected"])),
        ],
        "risk_bar": _risk_bar(s["topicsByRisk"]),
        "broker_risks": [{"risk": r, "n": (s.get("brokerValuesByRisk") or {}).get(r, 0), "colour": COLOURS[r]}
                         for r in RISKS] if s.get("brokerValuesByRisk") else [],
        "unregistered": s.get("brokersNotRegistered") or [],
        "consumers": _consumers(s.get("consumers")),
        "by_key": s["byKey"],
        "by_key_chart": _bar_chart(s["byKey"], "key", "topics", "topic changes", "key"),
        "deleted": _deleted(s),
        "by_cluster": by_cluster,
        "has_deleted_topics": any(c.get("topicsDeleted") for c in by_cluster),
        "by_cluster_chart": _bar_chart(by_cluster, "cluster", "topics", "affected clusters", "cluster"),
        "has_deletion": any(c.get("bytesDeletedEstimate") for c in by_cluster),
        "by_rule": _with_meaning(s["byRule"]),
        "topic_changes": _with_values(s["topicChanges"]),
        "broker_changes": _with_values(s["brokerChanges"]),
        "topic_total": s["topicChangesTotal"],
        "broker_total": s["brokerChangesTotal"],
        "policy": s.get("policy"),  # kind Policy across the fleet (policy_counts), when the run computed it
        "access": s.get("access"),  # ACL entries and principals losing access (impact/access.py)
    }
    return str(_environment().get_template("report.html.j2").render(**context))
