"""A self-contained HTML impact report: inline CSS and SVG charts, no scripts, no external resources.

Made to be looked at: totals as cards with a share-of-fleet bar, the risk split of affected topics as one
stacked bar, bar charts per key and per cluster coloured by risk, then the rule table and examples.
Every piece of text from manifests or live state is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from reconciler.impact.report import count, headline, size
from reconciler.render.units import short

COLOURS = {"destructive": "#d1242f", "disruptive": "#d4a72c", "safe": "#2da44e"}
BARS = 25
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.sub{color:#59636e;margin-bottom:18px}
.cards{display:grid;grid-template-columns:repeat(5,1fr);gap:12px}
.card{background:#fff;border:1px solid #d1d9e0;border-radius:8px;padding:12px 14px}
.card .n{font-size:24px;font-weight:600}.card .l{color:#59636e;font-size:12px;text-transform:uppercase}
.card .of{color:#59636e;font-size:12px}
.track{height:6px;background:#eaeef2;border-radius:3px;margin-top:8px;overflow:hidden}
.fill{height:6px;background:#0969da}
.panel{background:#fff;border:1px solid #d1d9e0;border-radius:8px;padding:14px 16px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eaeef2}
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:1px 4px;border-radius:4px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px}
.legend span{margin-right:16px}.dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}
"""


def _pill(risk: str) -> str:
    return f'<span class="pill" style="background:{COLOURS[risk]}">{escape(risk)}</span>'


def _card(label: str, value: int | None, whole: int | None, shown: str | None = None) -> str:
    share = (value or 0) / whole if whole else 0.0
    of = f'<div class="of">of {count(whole)}</div>' if whole else '<div class="of">&nbsp;</div>'
    return (f'<div class="card"><div class="l">{escape(label)}</div><div class="n">{shown or count(value)}</div>'
            f'{of}<div class="track"><div class="fill" style="width:{100 * share:.1f}%"></div></div></div>')


def _risk_bar(by_risk: dict[str, int]) -> str:
    total = sum(by_risk.values())
    if not total:
        return '<p class="sub">No topic changes its effective configuration.</p>'
    x, rects = 0.0, []
    for risk in ("destructive", "disruptive", "safe"):
        width = 1000 * by_risk.get(risk, 0) / total
        if width:
            rects.append(f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="28" fill="{COLOURS[risk]}">'
                         f'<title>{risk}: {by_risk[risk]:,} topics</title></rect>')
        x += width
    legend = "".join(f'<span><i class="dot" style="background:{COLOURS[r]}"></i>{r}: {by_risk.get(r, 0):,}</span>'
                     for r in ("destructive", "disruptive", "safe"))
    return (f'<svg viewBox="0 0 1000 28" width="100%" height="28" role="img" aria-label="topics by risk">'
            f'{"".join(rects)}</svg><div class="legend">{legend}</div>')


def _bars(rows: Sequence[dict[str, Any]], label: str, value: str, title: str) -> str:
    rows = [r for r in rows if r[value]][:BARS]
    if not rows:
        return f'<p class="sub">No {escape(title)}.</p>'
    top = max(r[value] for r in rows)
    height, left, width = 22, 260, 620
    parts = []
    for i, r in enumerate(rows):
        y = i * height
        w = max(2.0, width * r[value] / top)
        name = str(r[label])
        shown = name if len(name) <= 38 else name[:36] + "…"
        parts.append(
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{escape(shown)}<title>{escape(name)}</title></text>'
            f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="{height - 8}" rx="3" '
            f'fill="{COLOURS[r["risk"]]}"><title>{escape(name)}: {r[value]:,} {escape(value)}</title></rect>'
            f'<text x="{left + w + 6:.1f}" y="{y + 15}">{r[value]:,}</text>'
        )
    total_h = height * len(rows)
    return (f'<svg viewBox="0 0 1000 {total_h}" width="100%" height="{total_h}" role="img" '
            f'aria-label="{escape(title)}">{"".join(parts)}</svg>')


def _rows(head: Sequence[str], rows: Sequence[Sequence[str]], right_from: int) -> str:
    th = "".join(f'<th class="{"r" if i >= right_from else ""}">{h}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"r" if i >= right_from else ""}">{c}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _code(text: object) -> str:
    return f"<code>{escape(str(text))}</code>"


def _change(key: str, before: str | None, after: str | None) -> str:
    return f"{_code(short(key, before))} → {_code(short(key, after))}"


def render_html(s: dict[str, Any]) -> str:
    inv = s["inventory"]
    source = (s.get("source") or {}).get("before", "the inventory")
    cards = "".join([
        _card("clusters", s["clustersAffected"], inv["clusters"]),
        _card("brokers", s["brokersAffected"], inv["brokers"]),
        _card("topics", s["topicsAffected"], inv["topics"]),
        _card("partitions", s["partitionsAffected"], inv["partitions"]),
        _card("bytes", s["bytesAffected"], None, size(s["bytesAffected"])),
    ])
    rules = _rows(["rule", "risk", "keys", "clusters", "brokers", "topics", "partitions"], [
        [_code(r["rule"]), _pill(r["risk"]), " ".join(_code(k) for k in r["keys"]), count(r["clusters"]),
         count(r["brokers"]), count(r["topics"]), count(r["partitions"])] for r in s["byRule"]], 3)
    examples = _rows(["cluster", "topic", "key", "before → after", "partitions", "risk"], [
        [_code(e["cluster"]), _code(e["topic"]), _code(e["key"]), _change(e["key"], e["before"], e["after"]),
         count(e["partitions"]), _pill(e["risk"])] for e in s["topicChanges"]], 4)
    brokers = _rows(["cluster", "broker", "key", "before → after", "risk"], [
        [_code(b["cluster"]), escape(str(b["broker"])), _code(b["key"]), _change(b["key"], b["before"], b["after"]),
         _pill(b["risk"])] for b in s["brokerChanges"]], 5)
    keys_table = _rows(["key", "risk", "clusters", "brokers", "topics", "partitions", "bytes"], [
        [_code(k["key"]), _pill(k["risk"]), count(k["clusters"]), count(k["brokers"]), count(k["topics"]),
         count(k["partitions"]), size(k["bytes"])] for k in s["byKey"]], 2)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Fleet impact: {escape(headline(s))}</title><style>{CSS}</style></head>
<body><main>
<h1>Fleet impact</h1>
<div class="sub">{escape(headline(s))} · the manifests compared with {escape(str(source))}</div>
<div class="cards">{cards}</div>
<h2>Affected topics by risk</h2><div class="panel">{_risk_bar(s["topicsByRisk"])}</div>
<h2>Topics affected per key</h2><div class="panel">{_bars(s["byKey"], "key", "topics", "topic changes")}
{keys_table}</div>
<h2>Most affected clusters</h2>
<div class="panel">{_bars(s["byCluster"], "cluster", "topics", "affected clusters")}</div>
<h2>Risk rules</h2><div class="panel">{rules}</div>
<h2>Examples of topic changes</h2><div class="panel">{examples}</div>
<h2>Broker config changes</h2><div class="panel">{brokers}</div>
<p class="sub">kafka-reconciler impact report · {count(s["topicChangesTotal"])} topic and
{count(s["brokerChangesTotal"])} broker config changes · details in topic_changes/ and broker_changes/ (Parquet)</p>
</main></body></html>
"""
