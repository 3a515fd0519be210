"""The first of the impact job's two queries: everything small, in one collect.

The broker side of a fleet (registered brokers, dynamic broker configs, static files) is a few thousand rows;
the inventory's size per cluster, its replication factors, the live overrides of the topics the manifests
declare, and the declared topics that are new or grow are a handful more. One Spark job reads them all (each
table once, column-pruned) and hands them to the driver, which resolves the broker side in Python
(`brokerside`) and the candidate changes with their risk (`candidates`) before the one large query over topics
and partitions.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.deletions import decide, like_pattern
from reconciler.impact.frames import is_in, pair_in
from reconciler.impact.inventory import Inventory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Row = tuple[Any, ...]


@dataclass
class Facts:
    brokers: list[tuple[str, int]] = field(default_factory=list)
    dynamic: list[Row] = field(default_factory=list)  # (cluster, entity, key, value): brokers entities
    static: list[Row] = field(default_factory=list)  # (cluster, broker, key, value)
    declared_live: list[Row] = field(default_factory=list)  # (cluster, topic, key, value) of declared topics
    topics: dict[str, tuple[int, int]] = field(default_factory=dict)  # cluster -> (topics, partitions)
    rfs_of: dict[str, set[int]] = field(default_factory=dict)  # cluster -> its topics' replication factors
    created: int = 0
    grown: int = 0
    deleted: list[dict[str, Any]] = field(default_factory=list)  # topics policy.deleteTopics deletes (`deletions`)

    @property
    def min_rf(self) -> dict[str, int | None]:
        """cluster -> the lowest replication factor of its topics (None when none is known)."""
        return {c: min(self.rfs_of.get(c, ()), default=None) for c in self.topics}

    @property
    def present(self) -> set[str]:
        return {c for c, _ in self.brokers} | set(self.topics)


def collect_json(spark: SparkSession, sections: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Every section in one Spark job, each row as JSON (the sections have different columns). `struct(*)`, not
    the columns' names: on Spark Connect, asking a DataFrame its columns is a round trip that analyses its plan."""
    from pyspark.sql import functions as F

    parts = [
        df.select(F.lit(name).alias("section"),
                  F.to_json(F.struct(F.col("*")), {"ignoreNullFields": "false"}).alias("row"))
        for name, df in sections.items()
    ]
    union = functools.reduce(lambda x, y: x.unionByName(y), parts)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in sections}
    for row in union.collect():
        out[row["section"]].append(json.loads(row["row"]))
    return out


def only(df: DataFrame, clusters: list[str]) -> DataFrame:
    return df.filter(is_in(df.sparkSession, "cluster", clusters))


def collect_facts(spark: SparkSession, inv: Inventory, after: AfterRows) -> Facts:
    from pyspark.sql import functions as F

    clusters = list(after.clusters)
    configs = only(inv.configs, clusters)
    topics = only(inv.topics, clusters)
    declared = {(c, e) for c, kind, e in after.declared if kind == "topics"}
    wanted = {(c, t) for c, t, *_ in after.topics}
    # membership in the manifests' lists is a predicate (frames.pair_in), not a join: a broadcast of a
    # driver-built table is a Spark job and stage of its own
    sections = {
        "brokers": only(inv.brokers, clusters).select("cluster", "broker"),
        "dynamic": configs.filter(F.col("entity_type") == "brokers").select("cluster", "entity", "key", "value"),
        "static": only(inv.static, clusters).select("cluster", "broker", "key", "value"),
        "declaredLive": configs.filter((F.col("entity_type") == "topics")
                                       & pair_in(spark, "cluster", "entity", declared))
        .select("cluster", F.col("entity").alias("topic"), "key", "value"),
        # one scan of the topics: per (cluster, replication factor), a plain hash aggregate (a set per cluster
        # would be an object one); and the live partition counts of the topics the manifests declare
        "topics": topics.groupBy("cluster", F.col("replication_factor").alias("rf")).agg(
            F.count(F.lit(1)).alias("n"), F.sum("partitions").alias("partitions")),
        "wantedLive": topics.filter(pair_in(spark, "cluster", "topic", wanted)).select(
            "cluster", "topic", "partitions"),
    }
    deletable = _deletable(inv, after)
    if deletable is not None:
        sections["deletable"] = deletable
    s = collect_json(spark, sections)
    present, grown = _declared_topics(after.topics, s["wantedLive"])
    return Facts(
        brokers=[(r["cluster"], r["broker"]) for r in s["brokers"]],
        dynamic=[(r["cluster"], r["entity"], r["key"], r["value"]) for r in s["dynamic"]],
        static=[(r["cluster"], r["broker"], r["key"], r["value"]) for r in s["static"]],
        declared_live=[(r["cluster"], r["topic"], r["key"], r["value"]) for r in s["declaredLive"]],
        topics=_per_cluster(s["topics"]),
        rfs_of=_rfs(s["topics"]),
        created=len(after.topics) - present,
        grown=grown,
        deleted=decide(s.get("deletable", []), after.delete_topics, ((c, t) for c, t, *_ in after.topics)),
    )


def _deletable(inv: Inventory, after: AfterRows) -> DataFrame | None:
    """(cluster, topic, partitions, rf, replicas, bytes) of the topics of the clusters that opt into
    `policy.deleteTopics` whose names may match an entry (`deletions.like_pattern`, a superset the driver narrows
    with the plan's predicate): topics, replica sets and sizes in one shuffle, a row per topic. None when no
    cluster opts in (the query is then unchanged)."""
    from pyspark.sql import functions as F

    policies = {c: entries for c, entries in after.delete_topics.items() if entries}
    if not policies:
        return None
    spark = inv.topics.sparkSession
    by_entries: dict[tuple[str, ...], list[str]] = {}  # clusters sharing entries (fleet defaults) share a test
    for c, entries in sorted(policies.items()):
        by_entries.setdefault(tuple(entries), []).append(c)
    tests = [is_in(spark, "cluster", cs) & functools.reduce(
        lambda x, y: x | y, [F.col("topic").like(like_pattern(e)) for e in entries])
        for entries, cs in by_entries.items()]
    wanted = functools.reduce(lambda x, y: x | y, tests)
    clusters = sorted(policies)
    none = F.lit(None)

    def rows(df: DataFrame, partitions: Any, rf: Any, size: Any, present: int) -> DataFrame:
        return only(df, clusters).filter(wanted).select(
            "cluster", "topic", F.lit(present).alias("present"), partitions.cast("int").alias("partitions"),
            rf.cast("int").alias("rf"), size.cast("long").alias("size"))

    union = rows(inv.topics, F.col("partitions"), none, none, 1).unionByName(
        rows(inv.partitions, none, F.size("replicas"), none, 0))
    if inv.sizes is not None:
        union = union.unionByName(rows(inv.sizes, none, none, F.col("size_bytes"), 0))
    return union.groupBy("cluster", "topic").agg(
        F.max("present").alias("present"), F.max("partitions").alias("partitions"), F.max("rf").alias("rf"),
        F.sum("rf").alias("replicas"), F.sum("size").alias("bytes"),
    ).filter(F.col("present") == 1).drop("present")


def _declared_topics(declared: list[Row], live: list[dict[str, Any]]) -> tuple[int, int]:
    """(declared topics that exist, those whose declared partition count is above the live one)."""
    wanted = {(c, t): partitions for c, t, partitions, *_ in declared}  # one row per declared topic
    found = [(wanted[(r["cluster"], r["topic"])], r["partitions"]) for r in live
             if (r["cluster"], r["topic"]) in wanted]
    return len(found), sum(1 for want, have in found if want is not None and have is not None and want > have)


def _rfs(rows: list[dict[str, Any]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for r in rows:
        if r["rf"] is not None:
            out.setdefault(r["cluster"], set()).add(r["rf"])
    return out


def _per_cluster(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """cluster -> (topics, partitions) from rows per (cluster, replication factor)."""
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        n, parts = out.get(r["cluster"], (0, 0))
        out[r["cluster"]] = (n + r["n"], parts + int(r["partitions"] or 0))
    return out
