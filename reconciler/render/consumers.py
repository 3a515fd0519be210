"""The "Consumers at risk" section: the groups a lowered retention makes lose records they have not read (PURE).

Rendered from the impact summary's `consumers` (`impact/consumers.py`) for the PR comment, the impact report's
Markdown and HTML, and from `unread.GroupRisk` rows for `describe`. Every figure says what it is: counts per
record (an upper bound: Kafka deletes whole segments), a range where the offsets at the new retention were not
read exactly, the lag in time as the bracket of the ages read, and when the offsets were read. Group, client and
topic names come from the brokers: shown as code spans, control characters escaped, clipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from reconciler.errors import clip, printable
from reconciler.render.md_text import code, plain
from reconciler.units import short
from reconciler.unread import GroupRisk

ROWS = 20
BADGE = "🛑"


def name(text: object, limit: int = 80) -> str:
    """A name from the brokers as one safe line (escaped, clipped)."""
    return printable(clip(str(text), limit))


def records(r: Sequence[int | None]) -> str:
    """`~1.2 M`, `1.0 M–1.3 M` (a range where the boundary was bracketed), `~42`."""
    low, high = int(r[0] or 0), int(r[1] or 0)
    return f"~{_count(high)}" if _count(low) == _count(high) else f"{_count(low)}–{_count(high)}"


def _count(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return str(n)


def duration(ms: int | None) -> str:
    return short("retention.ms", str(ms)) if ms is not None else "?"


def lag(span: Sequence[int | None]) -> str:
    """The lag in time as the ages read bracket it: "2d–3d behind", "more than 365d behind"."""
    low, high = span[0] or 0, span[1]
    if high == 0:
        return "caught up"
    if high is None:
        return f"more than {duration(low)} behind"
    if not low:
        return f"less than {duration(high)} behind"
    return f"{duration(low)}–{duration(high)} behind"


def retention(row: dict[str, Any]) -> str:
    """"retention 1d", "retention.bytes 1 GiB", or both, as the new settings."""
    parts = []
    ms, by = row.get("retentionMs") or (None, None), row.get("retentionBytes") or (None, None)
    if ms[1] is not None:
        parts.append(f"retention {short('retention.ms', str(ms[1]))}")
    if by[1] is not None:
        parts.append(f"retention.bytes {short('retention.bytes', str(by[1]))}")
    return " and ".join(parts) or "the new retention"


def state(row: dict[str, Any]) -> str:
    """"active (2 members: billing-1, billing-2)", "empty (no member: offsets expire offsets.retention.minutes
    after it emptied)", or the broker's state name."""
    if row.get("active"):
        ids = [name(c, 40) for c in row.get("clientIds") or () if c]
        members = row.get("members")
        who = f"{members} member(s)" if members is not None else "members not described"
        return f"active ({who}{': ' + ', '.join(ids[:3]) + (' …' if len(ids) > 3 else '') if ids else ''})"
    if row.get("state") == "Empty":
        return "empty (no member now; Kafka drops its offsets offsets.retention.minutes after it emptied)"
    return name(row.get("state") or "state not known", 40)


def sentence(row: dict[str, Any], md: bool = True) -> str:
    """"`billing` on `payments` (prod-eu-1) is 2d–3d behind: retention 1d would delete ~1.2 M records it has not
    read"."""
    def n(text: object) -> str:
        return code(name(text)) if md else name(text)

    behind = lag(row.get("lagMs") or (0, None))
    before = f" ({row['behindLogStart']} partition(s) already behind the log start)" if row.get("behindLogStart") \
        else ""
    return (f"{n(row['group'])} on {n(row['topic'])} ({n(row['cluster'])}) is {behind}{before}: "
            f"{retention(row)} would delete {records(row['records'])} records it has not read")


def read_at(section: dict[str, Any]) -> str:
    """When the offsets were read: the oldest read of the clusters assessed, and how long before the report."""
    times = [c["readAtMs"] for c in section.get("clusters") or () if c.get("readAtMs")]
    if not times:
        return ""
    oldest = min(times)
    when = datetime.fromtimestamp(oldest / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    assessed = section.get("assessedAtMs")
    ago = f", {duration(max(0, int(assessed) - oldest))} before this report" if assessed else ""
    return f"Offsets read {when}{ago}: groups keep consuming, so these are the figures of that moment."


def not_read(section: dict[str, Any]) -> list[str]:
    return [f"{code(name(c['cluster']), True)}: {plain(name(c['notRead'], 200))}"
            for c in section.get("clusters") or () if c.get("notRead")]


def markdown(section: dict[str, Any] | None, heading: str = "###", *, policy: bool = True) -> list[str]:
    """The section's Markdown lines (empty when no assessed cluster has offsets and none is at risk); `policy`:
    with its maxUnreadLoss violations (the PR comment shows them in its Policy section instead)."""
    if not section or not (section.get("groupsAtRisk") or section.get("topicsLowered", 1) or section.get("policy")):
        return []  # no retention goes down: nobody can lose unread records, nothing to say
    missing = not_read(section)
    if not section.get("groupsAtRisk"):
        if not section.get("known"):
            return [f"{heading} Consumers at risk: not known", "",
                    "No consumer offsets for the clusters assessed: " + "; ".join(missing), ""] if missing else []
        out = [f"{heading} ✅ Consumers at risk: none", "",
               "No consumer group loses records it has not read. " + read_at(section), ""]
        return out + ([f"Offsets not read: {'; '.join(missing)}", ""] if missing else [])
    rows = section.get("rows") or []
    out = [f"{heading} {BADGE} Consumers at risk: {section['groupsAtRisk']:,} group(s) in "
           f"{section['clustersAtRisk']:,} cluster(s) would lose {records(section['recordsAtRisk'])} records they "
           "have not read", ""]
    out += [f"- {BADGE} {sentence(r)}" for r in rows[:ROWS]]
    if len(rows) > ROWS or section.get("groupTopicsAtRisk", 0) > len(rows):
        out.append(f"- … {section.get('groupTopicsAtRisk', len(rows)) - ROWS:,} more (group, topic) pairs in "
                   "report.json / consumers_at_risk/")
    out += ["", "| cluster | topic | group | unread records deleted | bytes | lag | state |",
            "| --- | --- | --- | ---: | ---: | --- | --- |"]
    out += [f"| {code(name(r['cluster']), True)} | {code(name(r['topic']), True)} | {code(name(r['group']), True)} "
            f"| {records(r['records'])} | {size_range(r.get('bytes'))} | {lag(r['lagMs'])} | {plain(state(r))} |"
            for r in rows[:ROWS]]
    out += ["", "Rated destructive: the change deletes records these groups have not consumed. Counts are per record "
            "(Kafka deletes whole segments, so the first retention check may delete fewer; the rest goes as the "
            "segments age), a range where the snapshot did not read offsets at the new retention. "
            + read_at(section)]
    if missing:
        out += ["", f"Offsets not read (groups there are not counted): {'; '.join(missing)}"]
    out += policy_lines(section) if policy else []
    return [*out, ""]


def policy_lines(section: dict[str, Any]) -> list[str]:
    """The maxUnreadLoss violations (an error blocks the pull request as every policy error does)."""
    found = section.get("policy") or []
    if not found:
        return []
    out = ["", f"**Policy** (`maxUnreadLoss`): {len(found)} violation(s)", ""]
    for d in found[:ROWS]:
        where = f"`{name(d['file'], 200)}:{d['line']}` " if d.get("file") else ""
        out.append(f"- {'🛑' if d['severity'] == 'error' else '⚠️'} {where}{plain(name(d['message'], 1000))}")
    return out


def size_range(b: Sequence[int] | None) -> str:
    if not b:
        return "–"
    low, high = b
    return f"~{_size(high)}" if _size(low) == _size(high) else f"{_size(low)}–{_size(high)}"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def reasons(section: dict[str, Any] | None) -> dict[tuple[str, str], list[str]]:
    """(cluster, topic) -> the destructive reasons its groups at risk add to the change (plain text)."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in (section or {}).get("rows") or ():
        out.setdefault((r["cluster"], r["topic"]), []).append(
            f"consumer group {name(r['group'])} would lose {records(r['records'])} records it has not read")
    return out


def risk_row(g: GroupRisk, retention_ms: Sequence[int | None], retention_bytes: Sequence[int | None],
             read_at_ms: int | None) -> dict[str, Any]:
    """A `GroupRisk` (plain-Python arithmetic, `describe`) in the shape of the impact summary's rows."""
    def text(v: int | None) -> str | None:
        return None if v is None else str(v)

    return {"cluster": g.cluster, "topic": g.topic, "group": g.group, "records": list(g.records),
            "bytes": None if g.bytes is None else list(g.bytes), "lagRecords": g.lag_records, "lagMs": list(g.lag_ms),
            "partitions": g.partitions, "behindLogStart": g.behind_start, "readAtMs": read_at_ms,
            "retentionMs": [text(v) for v in retention_ms], "retentionBytes": [text(v) for v in retention_bytes],
            "state": g.state.state, "protocolType": g.state.protocol_type, "members": g.state.members,
            "clientIds": list(g.state.client_ids), "active": g.state.active}
