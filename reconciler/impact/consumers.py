"""Consumers at risk: per consumer group, the unread records a lowered retention makes eligible for deletion, in
one Spark query over the job's topic rows and the inventory's offset tables (`reconciler.unread` is the same
arithmetic in plain Python, and says what it means).

The topics are those whose effective `retention.ms` or `retention.bytes` the plan's rules say is lowered in a way
that deletes data (`retention-lowered`, `retention-bytes-lowered`: never on a compact-only topic), with the values
before and after and the partitions they hit (`Changes.per_topic`). Their committed group offsets meet them in a
join on (cluster, topic); that much smaller set meets the partitions' log offsets on (cluster, topic, partition);
every boundary and bracket is a column expression over the partition's own row (its `at` array of (age, offset));
one aggregate per (cluster, topic, group) and its state. No Python runs on the executors.

Records at risk are counted per record (an upper bound of what a retention check deletes at once: Kafka deletes
whole segments, see `unread`), as a range when the inventory read no offset at the new retention exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.impact.facts import collect_json, only
from reconciler.impact.job import cached
from reconciler.impact.riskexpr import mask_of
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, SourceRef
from reconciler.policy.model import PolicySet

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from reconciler.impact.inventory import Inventory
    from reconciler.impact.job import Changes

SAMPLE = 200  # group rows in the summary (every row is in consumers_at_risk/ with --out)
POLICY_ROWS = 5_000  # rows above the lowest maxUnreadLoss limit judged on the driver
BROADCAST_ROWS = 500_000  # committed offsets on lowered topics broadcast to the log offsets' scan (~40 MB)
RULES = {"retention.ms": "retention-lowered", "retention.bytes": "retention-bytes-lowered"}
AT_RISK_DDL = ("cluster STRING, topic STRING, group STRING, records_min BIGINT, records_max BIGINT, "
               "bytes_min BIGINT, bytes_max BIGINT, lag_records BIGINT, lag_ms_min BIGINT, lag_ms_max BIGINT, "
               "partitions INT, behind_start INT, read_at BIGINT, retention_ms_before STRING, "
               "retention_ms_after STRING, retention_bytes_before STRING, retention_bytes_after STRING, "
               "state STRING, protocol_type STRING, members INT, client_ids ARRAY<STRING>")


@dataclass
class AtRisk:
    rows: DataFrame  # AT_RISK_DDL: one row per (cluster, topic, group) that loses unread records


def _retention_entry(key: str) -> Column:
    """The topic row's entry for `key` where its rule fires (else null): before, after, the partitions it hits."""
    from pyspark.sql import functions as F

    bit = F.lit(mask_of([RULES[key]]))
    hit = F.filter("entries", lambda x: (x["key"] == key) & (x["mask"].bitwiseAND(bit) != 0))
    return F.get(hit, 0)


def _applies(entry: Column) -> Column:
    """The entry changes this row's partition (it hits all of the topic's, or lists this one)."""
    from pyspark.sql import functions as F

    return entry.isNotNull() & (entry["part_ids"].isNull() | F.array_contains(entry["part_ids"], F.col("partition")))


def _number(entry: Column, side: str) -> Column:
    """The entry's value on one side as a number where it changes this partition, else null (unchanged)."""
    from pyspark.sql import functions as F

    return F.when(_applies(entry), entry[side].try_cast("long"))


def _lookups() -> list[Column]:
    """Per (group, partition), over its `at` entries exploded (`a`): what the boundaries need, as plain
    aggregates. The offsets are non-increasing in age (ListOffsets by timestamp is monotone), so the nearest age
    read below a retention has the least offset of those below it, the nearest above the greatest of those above."""
    from pyspark.sql import functions as F

    age, offset, out = F.col("a.age_ms"), F.col("a.offset"), []
    for side in ("ms_b", "ms_a"):
        ms = F.col(side)
        out += [F.max(F.when(age == ms, offset)).alias(f"{side}_exact"),
                F.min(F.when(age < ms, offset)).alias(f"{side}_younger"),
                F.max(F.when(age > ms, offset)).alias(f"{side}_older")]
    position = F.greatest(F.col("committed"), F.col("log_start"))
    return [*out, F.max(F.when(position < offset, age)).alias("older_than"),
            F.min(F.when(offset <= position, age)).alias("younger_than")]


def _time_bound(side: str) -> tuple[Column, Column]:
    """(low, high) first offset time retention keeps: exact where the ages read include it, else bracketed by
    the ages around it (`unread.time_boundary`); unlimited (null, negative): the log start."""
    from pyspark.sql import functions as F

    ms, start, end = F.col(side), F.col("log_start"), F.col("log_end")

    def clamp(offset: Column) -> Column:
        return F.least(F.greatest(offset, start), end)

    none = ms.isNull() | (ms < 0)
    exact = F.col(f"{side}_exact")
    high = F.when(none, start).otherwise(clamp(F.coalesce(exact, F.col(f"{side}_younger"), end)))
    low = F.when(none, start).otherwise(clamp(F.coalesce(exact, F.col(f"{side}_older"), start)))
    return low, high


def _size_bound(side: str) -> tuple[Column, Column]:
    """(low, high) first offset size retention keeps, the records' mean size standing for each; size not
    known: anything between the log start and end (`unread.size_boundary`)."""
    from pyspark.sql import functions as F

    limit, start, end, size = F.col(side), F.col("log_start"), F.col("log_end"), F.col("size_bytes")
    records = end - start
    cut = start + (records.cast("decimal(38,0)") * (size - limit) / size).cast("long")
    none = limit.isNull() | (limit < 0)
    keep = none | (records <= 0) | (size <= limit)
    low = F.when(keep, start).when(size.isNull(), start).otherwise(cut)
    high = F.when(none, start).when(size.isNull(), end).when(keep, start).otherwise(cut)
    return low, high


def _per_partition(gp: DataFrame) -> DataFrame:
    """A row per (group, partition): its records at risk (low, high), bytes, lag in records and in time.

    The partition's `at` array is exploded and reduced with plain conditional aggregates (`_lookups`), grouped by
    the join's keys plus the group, so no shuffle is added and no higher-order function (interpreted per element)
    runs: the boundaries and brackets are then ordinary expressions, in projections that each name what the next
    reads."""
    from pyspark.sql import functions as F

    consts = ("committed", "log_start", "log_end", "size_bytes", "read_at", "ms_b", "ms_a", "by_b", "by_a")
    exploded = gp.select("cluster", "topic", "partition", "group", *consts, F.explode_outer("at").alias("a"))
    looked = exploded.groupBy("cluster", "topic", "partition", "group", *consts).agg(*_lookups())
    (tbl, tbh), (sbl, sbh) = _time_bound("ms_b"), _size_bound("by_b")
    (tal, tah), (sal, sah) = _time_bound("ms_a"), _size_bound("by_a")
    c, start, end = F.col("committed"), F.col("log_start"), F.col("log_end")
    position = F.greatest(c, start)
    caught_up = position >= end
    bounds = looked.select(
        "cluster", "topic", "group", "read_at", *consts[:4], *consts[5:],
        F.greatest(tbl, sbl).alias("old_lo"), F.greatest(tbh, sbh).alias("old_hi"),
        F.greatest(tal, sal).alias("new_lo"), F.greatest(tah, sah).alias("new_hi"),
        F.when(caught_up, F.lit(0)).otherwise(F.coalesce("older_than", F.lit(0))).alias("age_lo"),
        F.when(caught_up, F.lit(0)).otherwise(F.col("younger_than")).alias("age_hi"))
    rec_lo = F.greatest(F.lit(0), F.col("new_lo") - F.greatest(c, F.col("old_hi")))
    rec_hi = F.greatest(F.lit(0), F.col("new_hi") - F.greatest(c, F.col("old_lo")))
    risk = bounds.select("*", rec_lo.alias("rec_lo"), rec_hi.alias("rec_hi"))
    n, size = end - start, F.col("size_bytes")

    def to_bytes(records: Column) -> Column:
        return F.when(n > 0, (records.cast("decimal(38,0)") * size / n).cast("long")).otherwise(F.lit(0))

    return risk.select(
        "cluster", "topic", "group", "read_at", "ms_b", "ms_a", "by_b", "by_a", "rec_lo", "rec_hi",
        to_bytes(F.col("rec_lo")).alias("b_lo"),
        to_bytes(F.col("rec_hi")).alias("b_hi"), size.isNull().alias("size_unknown"),
        F.greatest(F.lit(0), end - position).alias("lag"), "age_lo", "age_hi", (c < start).alias("behind"))


def consumers_at_risk(ch: Changes, inv: Inventory) -> AtRisk | None:
    """The groups losing unread records, or None when the inventory has no offsets."""
    from pyspark.sql import functions as F

    if inv.offsets is None:
        return None
    lowered = ch.per_topic.select("cluster", "topic", _retention_entry("retention.ms").alias("ms"),
                                  _retention_entry("retention.bytes").alias("by")).filter(
        F.col("ms").isNotNull() | F.col("by").isNotNull())
    committed = only(inv.offsets["group_offsets"], ch.clusters)
    logs = only(inv.offsets["log_offsets"], ch.clusters)
    ms, by = F.col("ms"), F.col("by")
    gp = committed.join(lowered, ["cluster", "topic"]).filter(_applies(ms) | _applies(by)).select(
        "cluster", "topic", "partition", "group", "committed", _number(ms, "before").alias("ms_b"),
        _number(ms, "after").alias("ms_a"), _number(by, "before").alias("by_b"),
        _number(by, "after").alias("by_a"))
    # the (group, partition) pairs on lowered topics are few next to the partitions: counted (and cached), then
    # broadcast to the scan of the log offsets, which is then never shuffled; past BROADCAST_ROWS, both shuffle
    gp = cached(gp)
    small = gp.count() <= BROADCAST_ROWS
    parts = _per_partition((F.broadcast(gp) if small else gp).join(logs, ["cluster", "topic", "partition"]))
    size_unknown = F.max(F.col("size_unknown").cast("int")) == 0
    per_group = parts.groupBy("cluster", "topic", "group").agg(
        F.sum("rec_lo").alias("records_min"), F.sum("rec_hi").alias("records_max"),
        F.when(size_unknown, F.sum("b_lo")).alias("bytes_min"), F.when(size_unknown, F.sum("b_hi")).alias("bytes_max"),
        F.sum("lag").alias("lag_records"), F.max("age_lo").alias("lag_ms_min"),
        F.when(F.max(F.col("age_hi").isNull().cast("int")) == 0, F.max("age_hi")).alias("lag_ms_max"),
        F.sum((F.col("rec_hi") > 0).cast("int")).alias("partitions"),
        F.sum(F.col("behind").cast("int")).alias("behind_start"), F.min("read_at").alias("read_at"),
        # the values the plan shows (canonical LONGs: the number is the text); max: the same on every partition
        *(F.max(c).cast("string").alias(name) for c, name in (
            ("ms_b", "retention_ms_before"), ("ms_a", "retention_ms_after"), ("by_b", "retention_bytes_before"),
            ("by_a", "retention_bytes_after"))),
    ).filter(F.col("records_max") > 0)
    groups = only(inv.offsets["groups"], ch.clusters)
    rows = per_group.join(groups, ["cluster", "group"], "left").select(
        "cluster", "topic", "group", "records_min", "records_max", "bytes_min", "bytes_max", "lag_records",
        "lag_ms_min", "lag_ms_max", F.col("partitions").cast("int"), F.col("behind_start").cast("int"), "read_at",
        "retention_ms_before", "retention_ms_after", "retention_bytes_before", "retention_bytes_after",
        F.coalesce("state", F.lit("")).alias("state"), F.coalesce("protocol_type", F.lit("")).alias("protocol_type"),
        "members", F.coalesce("client_ids", F.array().cast("array<string>")).alias("client_ids"))
    return AtRisk(rows)


def _active() -> Column:
    from pyspark.sql import functions as F

    from reconciler.unread import ACTIVE_STATES

    return (F.coalesce(F.col("members"), F.lit(0)) > 0) | F.col("state").isin(sorted(ACTIVE_STATES))


@dataclass(frozen=True)
class Judge:
    """What judges the groups at risk: the policies (`maxUnreadLoss`), the clusters' labels, and where each
    (cluster, topic)'s lowered retention is written."""

    policies: PolicySet
    labels: Mapping[str, Mapping[str, str]]
    where: Callable[[str, str], SourceRef | None]


def judge_of(states: Mapping[str, DesiredState], policies: PolicySet) -> Judge:
    """The manifest line of the value that lowers a topic's retention: its own retention.ms/.bytes, else the
    cluster default's log.retention.ms/.bytes, else its declaration, else the Cluster document."""
    def where(cluster: str, topic: str) -> SourceRef | None:
        state = states.get(cluster)
        if state is None:
            return None
        declared = state.topics.get(topic)
        for key in ("retention.ms", "retention.bytes"):
            if declared is not None and key in declared.config:
                return declared.config[key].source or declared.source
        default = state.entities.get(EntityRef("brokers", DEFAULT_ENTITY))
        for key in ("log.retention.ms", "log.retention.bytes"):
            if default is not None and key in default.config:
                return default.config[key].source or default.source
        return declared.source if declared is not None else state.cluster.source

    return Judge(policies, {n: dict(s.cluster.labels) for n, s in states.items()}, where)


def section(ch: Changes, inv: Inventory, meta: dict[str, Any], judge: Judge | None = None
            ) -> tuple[dict[str, Any], DataFrame | None]:
    """The summary's `consumers`: rollups (fleet, per cluster) and the groups most at risk, in one Spark job; the
    clusters assessed without offsets and when each cluster's were read (inventory.json); with `judge`, the
    `maxUnreadLoss` violations (`policy`: diagnostics as JSON)."""
    from pyspark.sql import functions as F

    from reconciler.policy.unread import threshold

    offsets = meta.get("offsets") or {}
    coverage = {c: offsets.get(c) or {"notRead": "the inventory has no offsets of this cluster (taken before "
                                                 "offsets were read, or by an older version)"}
                for c in ch.clusters}
    found = consumers_at_risk(ch, inv)
    if found is None:
        return {"known": False, "assessedAtMs": int(time.time() * 1000), "clusters": _coverage(coverage),
                "groupsAtRisk": 0, "rows": [], "policy": []}, None
    rows = cached(found.rows.withColumn("active", _active()))  # the rollups and the samples all read them
    by_cluster = rows.groupBy("cluster").agg(  # the fleet's totals are their sums (a group is a cluster's)
        F.countDistinct("group").alias("groups"), F.countDistinct("topic").alias("topics"),
        F.count(F.lit(1)).alias("pairs"), F.sum("records_min").alias("recordsMin"),
        F.sum("records_max").alias("recordsMax"),
        F.when(F.count(F.when(F.col("bytes_max").isNull(), 1)) == 0, F.sum("bytes_max")).alias("bytesMax"),
        F.countDistinct(F.when(F.col("active"), F.col("group"))).alias("activeGroups"))
    top = rows.orderBy(F.col("records_max").desc(), "cluster", "topic", "group").limit(SAMPLE)
    sections = {"byCluster": by_cluster, "rows": top}
    limit = threshold(judge.policies) if judge is not None else None
    if limit is not None:  # the rows that can break a rule: above the lowest limit (bounded)
        sections["over"] = rows.filter(F.col("records_max") > limit).select(
            "cluster", "topic", "group", F.array("records_min", "records_max").alias("records")).limit(POLICY_ROWS)
    got = collect_json(ch.spark, sections)
    total = _totals(got["byCluster"])
    return {
        "known": True,
        "assessedAtMs": int(time.time() * 1000),
        "clusters": _coverage(coverage),
        "groupsAtRisk": int(total.get("groups") or 0),
        "activeGroupsAtRisk": int(total.get("activeGroups") or 0),
        "topicsAtRisk": int(total.get("topics") or 0),
        "groupTopicsAtRisk": int(total.get("pairs") or 0),
        "recordsAtRisk": [int(total.get("recordsMin") or 0), int(total.get("recordsMax") or 0)],
        "bytesAtRisk": total.get("bytesMax"),
        "clustersAtRisk": len(got["byCluster"]),
        "byCluster": sorted(got["byCluster"], key=lambda r: (-r["recordsMax"], r["cluster"])),
        "rows": [_row(r) for r in got["rows"]],
        "policy": _judged(judge, got.get("over") or []),
    }, rows  # cached: --out writes consumers_at_risk/ from it


def _totals(by_cluster: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: sum(r[k] or 0 for r in by_cluster)
                           for k in ("groups", "topics", "pairs", "recordsMin", "recordsMax", "activeGroups")}
    out["bytesMax"] = None if any(r["bytesMax"] is None for r in by_cluster) else sum(r["bytesMax"] for r in by_cluster)
    return out


def _judged(judge: Judge | None, over: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """maxUnreadLoss violations as diagnostics (JSON: severity, message, file, line, key)."""
    from reconciler.manifests.policy import today
    from reconciler.policy.unread import unread_violations

    if judge is None or not over:
        return []
    out = []
    for v in unread_violations(judge.policies, judge.labels, over, judge.where, today()):
        d = v.diagnostic()
        out.append({"severity": d.severity, "message": d.message, "key": d.key,
                    "file": d.source.file if d.source else None, "line": d.source.line if d.source else None})
    return out


def _coverage(coverage: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"cluster": c, **v} for c, v in sorted(coverage.items())]


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": r["cluster"], "topic": r["topic"], "group": r["group"],
        "records": [r["records_min"], r["records_max"]], "bytes": None if r["bytes_max"] is None
        else [r["bytes_min"], r["bytes_max"]], "lagRecords": r["lag_records"],
        "lagMs": [r["lag_ms_min"], r["lag_ms_max"]], "partitions": r["partitions"],
        "behindLogStart": r["behind_start"], "readAtMs": r["read_at"],
        "retentionMs": [r["retention_ms_before"], r["retention_ms_after"]],
        "retentionBytes": [r["retention_bytes_before"], r["retention_bytes_after"]],
        "state": r["state"], "protocolType": r["protocol_type"], "members": r["members"],
        "clientIds": list(r["client_ids"] or []), "active": bool(r["active"]),
    }


def with_consumer_reasons(summary: dict[str, Any]) -> None:
    """The sampled topic changes whose groups lose unread records carry that reason, rated destructive (they
    already are: only a change the plan's retention rules rate destructive reaches the groups)."""
    from reconciler.render.consumers import reasons

    found = reasons(summary.get("consumers"))
    for row in summary.get("topicChanges") or ():
        extra = found.get((row["cluster"], row["topic"])) if row.get("key") in RULES else None
        if extra:
            row["reasons"] = [*row.get("reasons", []), *extra]
            row["risk"] = "destructive"
