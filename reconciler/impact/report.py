"""Impact reports from the summary dict: JSON (SPEC §8 shape and more), Markdown (one PR comment, well under
GitHub's 65,536 characters). Pure functions of the summary; `outputs.py` writes the files of `--out`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic
from reconciler.impact.kafka4 import markdown as kafka4_markdown
from reconciler.impact.moves import markdown as moves_markdown
from reconciler.impact.policy_counts import policy_change_markdown, policy_markdown
from reconciler.model import SourceRef
from reconciler.render.consumers import markdown as consumer_markdown
from reconciler.units import counted, short

BUDGET = 60_000
BADGE = {"safe": "✅", "disruptive": "⚠️", "destructive": "🛑"}
KEY_ROWS, RULE_ROWS, CLUSTER_ROWS, EXAMPLE_ROWS, DELETION_ROWS = 40, 30, 20, 15, 30


SENSITIVE = "(sensitive)"
_ROW_SCOPES = (("topicChanges", "topics"), ("brokerChanges", "brokers"))


def redacted(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with the values of sensitive keys (`Catalog.is_sensitive`: passwords, SCRAM credentials,
    keys of a type Kafka does not know) replaced by the marker, as every report shows it. The inventory already
    stores only the marker for them; this holds whatever a summary was computed from."""
    catalog = load_catalog()
    out = dict(summary)
    for rows, scope in _ROW_SCOPES:
        if isinstance(summary.get(rows), list):
            out[rows] = [
                {**r, "before": SENSITIVE if r.get("before") is not None else None,
                 "after": SENSITIVE if r.get("after") is not None else None, "reasons": _masked(r)}
                if isinstance(r, dict) and catalog.is_sensitive(str(r.get("key")), scope) else r
                for r in summary[rows]
            ]
    return out


def _masked(row: dict[str, Any]) -> list[str]:
    """A sensitive row's reasons with its values replaced by the marker wherever they appear."""
    values = sorted({str(v) for v in (row.get("before"), row.get("after")) if v not in (None, "", SENSITIVE)},
                    key=len, reverse=True)
    out = []
    for reason in row.get("reasons") or ():
        for value in values:
            reason = str(reason).replace(value, SENSITIVE)
        out.append(str(reason))
    return out


def render_json(summary: dict[str, Any]) -> str:
    return json.dumps(redacted(summary), indent=2, ensure_ascii=False) + "\n"


def count(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def size(n: int | None) -> str:
    if n is None:
        return "–"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _cell(text: str) -> str:
    """Manifest and live text as a code span in a table cell (no HTML or mentions inside code spans); a
    backtick or line break would end it, a pipe would end the cell."""
    return "`" + re.sub(r"[`\r\n]", "?", text).replace("|", "\\|") + "`"


def _prose(reasons: Sequence[str] | None) -> str:
    """Reasons as plain text in a table cell: Markdown and HTML punctuation escaped (no links, mentions, markup
    or cell breaks from a value), line breaks as spaces; "–" when no rule fires."""
    if not reasons:
        return "–"
    text = "; ".join(re.sub(r"[\r\n]+", " ", str(r)) for r in reasons)
    return re.sub(r"([\\`*_\[\]<>#!|@~&:])", r"\\\1", text)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], right_from: int, right_to: int | None = None
           ) -> list[str]:
    align = ["---:" if right_from <= i < (right_to or len(head)) else "---" for i in range(len(head))]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _of(part: int, whole: int | None) -> str:
    return count(part) if not whole else f"{part:,} of {whole:,}"


def _deleted(s: dict[str, Any]) -> dict[str, Any]:
    """The report's `topicsDeleted` (empty when nothing is deleted, or from a summary made before it existed)."""
    found = s.get("topicsDeleted") or {}
    return found if found.get("topics") else {}


def deleted_headline(d: dict[str, Any]) -> str:
    """"2 topic(s) deleted (5 partitions, 1.0 KiB)": bytes known only for some topics are a lower bound."""
    known = "" if d["bytes"] is None else f", {'at least ' if d['bytesUnknown'] else ''}{size(d['bytes'])}"
    return f"{d['topics']:,} topic(s) deleted ({d['partitions']:,} partitions{known})"


def headline(s: dict[str, Any]) -> str:
    deleted = _deleted(s)
    first = f"{deleted_headline(deleted)}; " if deleted else ""
    if groups := (s.get("consumers") or {}).get("groupsAtRisk"):
        first = f"{groups:,} consumer group(s) would lose unread records; {first}"
    if not (s["topicsAffected"] or s["brokersAffected"]):
        return f"{first}no effective config changes in {len(s['clusters'])} cluster(s)"
    return (f"{first}{s['clustersAffected']:,} cluster(s), {s['brokersAffected']:,} broker(s), "
            f"{s['topicsAffected']:,} topic(s), {s['partitionsAffected']:,} partition(s) affected"
            + ("" if s["bytesAffected"] is None else f", {size(s['bytesAffected'])}"))


def deletion_rows(d: dict[str, Any], shown: int) -> list[dict[str, Any]]:
    """The topics deleted, most bytes first (unknown sizes last), then most partitions; at most `shown`."""
    return sorted(d.get("rows") or (), key=lambda r: (r["bytes"] is None, -(r["bytes"] or 0), -r["partitions"],
                                                      r["cluster"], r["topic"]))[:shown]


def _deletions(s: dict[str, Any]) -> list[str]:
    """The first section, as the PR comment puts deletions first: every topic policy.deleteTopics deletes."""
    d = _deleted(s)
    if not d:
        return []
    rows = deletion_rows(d, DELETION_ROWS)
    unknown = f" (the inventory has no sizes for {d['bytesUnknown']:,} of them)" if d["bytesUnknown"] else ""
    out = [f"### {BADGE['destructive']} Topics to DELETE ({d['topics']:,} in {d['clusters']:,} cluster(s)): every "
           "record they hold is lost", "",
           f"{d['partitions']:,} partitions, {d['replicas']:,} replicas, {size(d['bytes'])}{unknown}, named by "
           "`policy.deleteTopics`.", ""]
    out += _table(["cluster", "topic", "partitions", "replicas", "bytes", "why"], [
        [_cell(r["cluster"]), _cell(r["topic"]), count(r["partitions"]), count(r["replicas"]), size(r["bytes"]),
         _prose(r.get("reasons"))] for r in rows], 2, 5)
    return [*out, *_more(len(d.get("rows") or ()), len(rows), "topics to delete"), ""]


def risk_split(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Per risk level, most severe first, what it rates: "2 topic(s), 5 broker value(s)": the topics' ratings and
    the broker values' (`brokerValuesByRisk`), each the plan's own, so a level is named only where a change has
    it; levels with nothing are left out."""
    topics, brokers = s.get("topicsByRisk") or {}, s.get("brokerValuesByRisk") or {}
    out = []
    for risk in ("destructive", "disruptive", "safe"):
        parts = [f"{n:,} {what}" for n, what in ((topics.get(risk, 0), "topic(s)"),
                                                 (brokers.get(risk, 0), "broker value(s)")) if n]
        if parts:
            out.append((risk, ", ".join(parts)))
    return out


def _revision(change: dict[str, Any]) -> str:
    """" at `abc123` (changes since `origin/main`: 3 files under clusters/)": commit ids and counts only; the
    commit subject and file names stay in the HTML and JSON, where they cannot become Markdown."""
    if not change.get("head"):
        return ""
    text = f" at {_cell(str(change['head']))}" + (" with uncommitted changes" if change.get("dirty") else "")
    if change.get("base") and change.get("files") is not None:
        text += f" (changes since {_cell(str(change['base']))}: {len(change['files']):,} file(s) under clusters/)"
    return text


def render_markdown(summary: dict[str, Any], *, consumers: bool = True) -> str:
    """The report's Markdown; `consumers=False` leaves out the "Consumers at risk" section (the PR comment shows it
    at its own top)."""
    s = redacted(summary)
    inv = s["inventory"]
    lines = [f"## Fleet impact: {headline(s)}", "", *_deletions(s)]
    if consumers:
        lines += consumer_markdown(s.get("consumers"))  # who loses records they have not read: near the top
    if (split := risk_split(s)) and any(r != "safe" for r, _ in split):
        lines += [" · ".join(f"{BADGE[r]} **{r}**: {text}" for r, text in split), ""]
    source = s.get("source") or {}
    if source:
        lines += [f"Compared: the manifests{_revision(source.get('change') or {})} against "
                  f"{source.get('before', 'the inventory')}.", ""]
    lines += _table(
        ["", "clusters", "brokers", "topics", "partitions", "bytes"],
        [["affected", _of(s["clustersAffected"], inv["clusters"]), _of(s["brokersAffected"], inv["brokers"]),
          _of(s["topicsAffected"], inv["topics"]), _of(s["partitionsAffected"], inv["partitions"]),
          size(s["bytesAffected"])]],
        1,
    )
    if unregistered := s.get("brokersNotRegistered"):
        lines += ["", "Declared in cluster.yaml but not registered when the state was read (their changes are not "
                      "counted): " + ", ".join(f"{_cell(u['cluster'])} broker(s) {', '.join(map(str, u['brokers']))}"
                                            for u in unregistered)]
    if s["missingClusters"]:
        lines += ["", f"Not in the inventory (nothing to compare): {', '.join(map(_cell, s['missingClusters']))}"]
    if s["topicsCreated"] or s["partitionIncreases"]:
        lines += ["", f"Also: {s['topicsCreated']:,} topic(s) created, {s['partitionIncreases']:,} partition "
                      "increase(s) (not counted above: they have no value before)."]
    lines += policy_markdown(s.get("policy"), _cell)  # kind Policy across the fleet (policy_counts)
    lines += policy_change_markdown(s.get("policy") or {}, _cell)
    lines += _access(s.get("access"))
    lines += kafka4_markdown(s.get("kafka4"), _cell)  # group configs, subscriptions, feature levels
    lines += moves_markdown(s.get("moves"))
    lines += _sections(s)
    text = "\n".join(lines) + "\n"
    if len(text) > BUDGET:  # the tables are bounded; this guards odd cases (very long names)
        text = text[:BUDGET].rsplit("\n", 1)[0] + "\n\n… (cut to fit a comment: see report.json / report.html)\n"
    return text


def _access(a: dict[str, Any] | None) -> list[str]:
    """ACL entries added and removed per cluster and the principals losing access (impact/access.py)."""
    if not a:
        return []
    out = ["", "### Access (ACLs)", ""]
    if a.get("note"):
        return [*out, _cell(str(a["note"]))]
    losing = a["principalsLosingAccess"]
    out += [f"{counted(a['entriesAdded'], 'ACL entry', 'ACL entries')} added, {a['entriesRemoved']:,} removed"
            + (f"; 🔒 losing access: {', '.join(_cell(p) for p in losing)}" if losing else ""), ""]
    return out + _table(["cluster", "entries added", "entries removed", "losing access", "why"], [
        [_cell(c["cluster"]), count(c["entriesAdded"]), count(c["entriesRemoved"]),
         ", ".join(_cell(p) for p in c["principalsLosingAccess"]), _prose(c["reasons"])]
        for c in a["clusters"][:CLUSTER_ROWS]], 1, 3)


def _sections(s: dict[str, Any]) -> list[str]:
    out: list[str] = []
    keys = s["byKey"][:KEY_ROWS]
    if keys:
        out += ["", "### By key", ""]
        out += _table(["key", "risk", "clusters", "brokers", "topics", "partitions", "bytes"], [
            [_cell(k["key"]), f"{BADGE[k['risk']]} {k['risk']}", count(k["clusters"]), count(k["brokers"]),
             count(k["topics"]), count(k["partitions"]), size(k["bytes"])] for k in keys], 2)
        out += _more(len(s["byKey"]), len(keys), "keys")
    rules = s["byRule"][:RULE_ROWS]
    if rules:
        out += ["", "### By risk rule", ""]
        out += _table(["rule", "risk", "keys", "clusters", "brokers", "topics", "partitions"], [
            [_cell(r["rule"]), f"{BADGE[r['risk']]} {r['risk']}", ", ".join(_cell(k) for k in r["keys"][:4]),
             count(r["clusters"]), count(r["brokers"]), count(r["topics"]), count(r["partitions"])]
            for r in rules], 3)
    clusters = s["byCluster"][:CLUSTER_ROWS]
    if clusters:
        gone = any(c.get("topicsDeleted") for c in s["byCluster"])  # columns only when some cluster deletes
        out += ["", f"### Most affected clusters ({len(clusters)} of {len(s['byCluster']):,})", ""]
        out += _table(["cluster", "risk", "brokers", "topics", "partitions", "bytes", "changes",
                       *(["topics deleted", "bytes deleted"] if gone else [])], [
            [_cell(c["cluster"]), f"{BADGE[c['risk']]} {c['risk']}", count(c["brokers"]), count(c["topics"]),
             count(c["partitions"]), size(c["bytes"]), count(c["changes"]),
             *([count(c.get("topicsDeleted", 0)), size(c.get("topicBytesDeleted"))] if gone else [])]
            for c in clusters], 2)
    examples = s["topicChanges"][:EXAMPLE_ROWS]
    if examples:
        out += ["", f"### Examples (of {s['topicChangesTotal']:,} topic config changes)", ""]
        out += _table(["cluster", "topic", "key", "before → after", "risk", "partitions", "why"], [
            [_cell(e["cluster"]), _cell(e["topic"]), _cell(e["key"]), _arrow(e["key"], e["before"], e["after"]),
             f"{BADGE[e['risk']]} {e['risk']}", count(e["partitions"]), _prose(e.get("reasons"))]
            for e in examples], 5, 6)
    brokers = s["brokerChanges"][:EXAMPLE_ROWS]
    if brokers:
        out += ["", f"### Broker configs (of {s['brokerChangesTotal']:,} broker config changes)", ""]
        out += _table(["cluster", "broker", "key", "before → after", "risk", "why"], [
            [_cell(b["cluster"]), str(b["broker"]), _cell(b["key"]), _arrow(b["key"], b["before"], b["after"]),
             f"{BADGE[b['risk']]} {b['risk']}", _prose(b.get("reasons"))] for b in brokers], 5, 5)
    return out


def _arrow(key: str, before: str | None, after: str | None) -> str:
    return f"{_cell(short(key, before))} → {_cell(short(key, after))}"


def _more(total: int, shown: int, what: str) -> list[str]:
    return [] if total <= shown else ["", f"… and {total - shown:,} more {what} in report.json"]


def comment_parts(summary: dict[str, Any]) -> tuple[str, list[str], list[Diagnostic]]:
    """What `plan --git-base … --inventory` takes from the impact's JSON: the Markdown for its "Fleet impact"
    section (without the consumers), the "Consumers at risk" section for its top (with the maxUnreadLoss
    warnings), and the maxUnreadLoss errors as policy diagnostics (they block the pull request as every policy error
    does, in the comment's Policy section)."""
    section = summary.get("consumers") or {}
    said = section.get("policy") or []
    found = [Diagnostic(d["severity"], d["message"],
                        SourceRef(d["file"], int(d["line"])) if d.get("file") and d.get("line") else None, d.get("key"))
             for d in said if d["severity"] == "error"]
    warnings = {**section, "policy": [d for d in said if d["severity"] != "error"]}  # they stay in the section
    return render_markdown(summary, consumers=False), consumer_markdown(warnings), found
