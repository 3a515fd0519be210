"""Topic deletions in the fleet impact: the live topics a cluster's `policy.deleteTopics` deletes, with their size.

`plan` deletes an undeclared live topic that an entry of the cluster's `policy.deleteTopics` names (an exact name
or a shell pattern), never an internal one (`diff.topics.plan_deletions`). The job finds the same topics in the
inventory: Spark keeps only the topics, partitions and sizes of the opted-in clusters whose names may match
(`like_pattern`: a SQL LIKE pattern that matches at least every name the entry matches), summed per topic in the
first query's collect; the driver then decides each topic with the plan's own predicate
(`diff.topics.deletion_match`) and the declared topics of the manifests. No Python runs on the executors.

Each deletion is rated as the plan rates its `TopicDelete`: destructive, with the plan's reason, plus the bytes
of the topic's partitions when the inventory has sizes for them. The inventory does not record the topics
already marked for deletion (`/admin/delete_topics`), which the plan does not list again: the job counts them.
Pure Python (the Spark part is `facts.collect_facts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.diff.topics import deletion_match
from reconciler.plan import TopicDelete

Row = dict[str, Any]


def like_pattern(entry: str) -> str:
    """A SQL LIKE pattern (escape `\\`) matching every name that `entry` matches as an exact name or with
    `fnmatchcase` (`*` -> `%`, `?` -> `_`), possibly more: from a `[` set on, anything (`%`). A prefilter only:
    `deletion_match` decides."""
    out = []
    for ch in entry:
        if ch == "*":
            out.append("%")
        elif ch == "?":
            out.append("_")
        elif ch == "[":
            out.append("%")
            break
        elif ch in "%_\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def reasons(topic: str, partitions: int, rf: int, matched: str, size: int | None) -> list[str]:
    """The plan's reasons for deleting the topic (`TopicDelete.reasons`), and its bytes when known."""
    from reconciler.impact.report import size as shown

    planned = TopicDelete(topic, partitions, rf, 0, matched)  # the version guards apply only, not the reasons
    extra = [] if size is None else [f"{shown(size)} in its partitions ({size:,} bytes, the inventory's sizes)"]
    return [*planned.reasons, *extra]


def decide(candidates: Iterable[Row], policies: Mapping[str, tuple[str, ...]],
           declared: Iterable[tuple[str, str]]) -> list[Row]:
    """The topics deleted, from the prefiltered inventory rows (cluster, topic, partitions, rf, replicas, bytes):
    undeclared, named by an entry of the cluster's policy (`deletion_match`: never internal), sorted by cluster,
    then topic. `rf` is the largest replica set, as the plan reads it; `bytes` null without sizes for it."""
    decl = set(declared)
    out = []
    for r in candidates:
        c, t = r["cluster"], r["topic"]
        matched = deletion_match(policies.get(c, ()), t)
        if matched is None or (c, t) in decl:
            continue
        partitions, rf = int(r["partitions"] or 0), int(r["rf"] or 0)
        size = None if r["bytes"] is None else int(r["bytes"])
        out.append({"cluster": c, "topic": t, "partitions": partitions, "replicationFactor": rf,
                    "replicas": int(r["replicas"] or 0), "bytes": size, "matched": matched, "risk": "destructive",
                    "reasons": reasons(t, partitions, rf, matched, size)})
    out.sort(key=lambda r: (r["cluster"], r["topic"]))
    return out


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def section(rows: list[Row]) -> dict[str, Any]:
    """The report's `topicsDeleted`: totals, per cluster (most bytes, then most partitions first) and every
    topic. Bytes: the sum of the topics whose sizes the inventory has (null when it has none of them)."""
    per: dict[str, list[Row]] = {}
    for r in rows:
        per.setdefault(r["cluster"], []).append(r)

    def counts(rs: list[Row]) -> dict[str, Any]:
        return {"topics": len(rs), "partitions": sum(r["partitions"] for r in rs),
                "replicas": sum(r["replicas"] for r in rs), "bytes": _sum(r["bytes"] for r in rs),
                "bytesUnknown": sum(1 for r in rs if r["bytes"] is None)}

    by_cluster = [{"cluster": c, **counts(rs), "risk": "destructive"} for c, rs in per.items()]
    by_cluster.sort(key=lambda r: (-(r["bytes"] or 0), -r["partitions"], r["cluster"]))
    return {**counts(rows), "clusters": len(per), "byCluster": by_cluster, "rows": rows}
