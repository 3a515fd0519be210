"""Replica moves in the fleet impact: per cluster, the partitions a plan would reassign and the bytes their new
replicas copy (reconciler/reassign/), computed with Spark over the inventory's assignments, racks and sizes.

Which brokers receive a replica is the plan's choice (`reassign.placement`, Python), but how many replicas each
partition gains is not: every replica that may stay stays, so a partition gains `wanted - kept` replicas, where
`wanted` is the replication factor declared (else its own count) and `kept` its replicas off the drained brokers,
less (with `placement: rackAware` on brokers that all have a rack) those sharing a rack that a broker on an unused
rack can replace; with explicit `replicas:`, the declared brokers it lacks. Each gained replica copies the whole
partition from its leader (its preferred leader sends). So the bytes to move, per cluster and per sending broker,
are the plan's own, without placing a replica (tests/integration/test_impact_moves.py holds the two to the same
numbers). The inventory has no reassignment in flight: a move already running is counted as still to do.

Pure Spark (DataFrame built-ins, a broadcast of the manifests' small tables); the driver sees one row per cluster
and per sending broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reconciler.impact.frames import is_in, local_df, pair_in
from reconciler.model import DesiredState

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from reconciler.impact.inventory import Inventory

CLUSTER_DDL = "cluster STRING, cmode STRING, drain ARRAY<INT>, throttle BIGINT"
TOPIC_DDL = "cluster STRING, topic STRING, rf INT, tmode STRING, explicit MAP<STRING, ARRAY<INT>>"


def manifest_rows(states: Mapping[str, DesiredState]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(clusters, topics): each cluster's default placement, drained brokers and throttle; each declared topic
    that may move (a replication factor, a placement or replicas declared)."""
    clusters, topics = [], []
    for name, state in sorted(states.items()):
        spec = state.cluster
        clusters.append((name, spec.placement.default, list(spec.placement.drain), spec.reassignment.throttle))
        for t in state.topics.values():
            if t.replication_factor is not None or t.placement is not None or t.replicas is not None:
                explicit = {str(p): list(r) for p, r in t.replicas.items()} if t.replicas is not None else None
                topics.append((name, t.name, t.replication_factor, t.placement, explicit))
    return clusters, topics


def only(df: DataFrame, clusters: list[str]) -> DataFrame:
    return df.filter(is_in(df.sparkSession, "cluster", clusters))


def _sizes(inv: Inventory, clusters: list[str]) -> DataFrame | None:
    """(cluster, topic, partition, size_bytes): the inventory's sizes, else the leaders' sizes it read with the
    offsets (DescribeLogDirs); None when it has neither."""
    from pyspark.sql import functions as F

    if inv.sizes is not None:
        return only(inv.sizes, clusters)
    logs = (inv.offsets or {}).get("log_offsets")
    if logs is None:
        return None
    return only(logs, clusters).filter(F.col("size_bytes").isNotNull()).select(
        "cluster", "topic", "partition", "size_bytes")


def _gained(mode: Column, racked: Column) -> tuple[Column, Column]:
    """(replicas gained, whether the partition's replicas change) of a joined partition row."""
    from pyspark.sql import functions as F

    def rack(b: Column) -> Column:
        return F.element_at("racks", b)

    replicas, drain, usable = F.col("replicas"), F.col("drain"), F.col("usable")
    kept = F.array_except(replicas, drain)
    want = F.coalesce(F.col("rf"), F.size(replicas))
    kept_racks = F.filter(F.transform(kept, rack), lambda r: r.isNotNull())
    used = F.array_distinct(kept_racks)
    twins = F.size(kept_racks) - F.size(used)
    free = F.size(F.array_except(F.array_distinct(F.filter(F.transform(F.array_except(usable, replicas), rack),
                                                           lambda r: r.isNotNull())), used))
    spread = F.when((mode == "rackAware") & racked, F.least(twins, free)).otherwise(F.lit(0))
    stay = F.size(kept) - spread
    declared = F.element_at("explicit", F.col("partition").cast("string"))
    gained = F.when(declared.isNotNull(), F.size(F.array_except(declared, replicas))).otherwise(
        F.greatest(want - stay, F.lit(0)))
    changed = F.when(declared.isNotNull(), declared != replicas).otherwise(
        (gained > 0) | (want < stay) | (F.size(kept) < F.size(replicas)) | (spread > 0))
    return gained, changed


def assess_moves(spark: SparkSession, inv: Inventory, states: Mapping[str, DesiredState]) -> dict[str, Any] | None:
    """The summary's `moves` section (None when no cluster declares anything that can move a replica): per
    cluster the partitions whose replicas change, the replicas they gain, the bytes copied (null without sizes),
    the most any one broker sends and what that takes at least at the cluster's throttle."""
    from pyspark.sql import functions as F

    clusters_rows, topic_rows = manifest_rows(states)
    drain = sorted(c for c, _, d, _ in clusters_rows if d)
    racking = sorted(c for c, mode, _, _ in clusters_rows if mode == "rackAware")
    if not topic_rows and not drain and not racking:
        return None
    names = sorted(states)
    wanted = is_in(spark, "cluster", sorted({*drain, *racking})) | pair_in(
        spark, "cluster", "topic", [(c, t) for c, t, *_ in topic_rows])
    parts = only(inv.partitions, names).filter(wanted)
    cl = local_df(spark, clusters_rows, CLUSTER_DDL)
    tp = local_df(spark, topic_rows, TOPIC_DDL)
    brokers = only(inv.brokers, names).groupBy("cluster").agg(
        F.map_from_entries(F.collect_list(F.struct("broker", "rack"))).alias("racks"),
        F.collect_list("broker").alias("registered"))
    rows = (parts.join(F.broadcast(cl), "cluster").join(F.broadcast(tp), ["cluster", "topic"], "left")
            .join(F.broadcast(brokers), "cluster", "left"))
    rows = rows.withColumn("usable", F.array_except(F.coalesce("registered", F.array().cast("array<int>")), "drain"))
    racked = (F.size("usable") > 0) & (F.size(F.filter("usable", lambda b: F.element_at("racks", b).isNull())) == 0)
    gained, changed = _gained(F.coalesce("tmode", "cmode"), racked)
    rows = rows.select("cluster", "topic", "partition", "throttle", F.element_at("replicas", 1).alias("leader"),
                       gained.alias("gained"), changed.alias("changed")).filter("changed")
    sizes = _sizes(inv, names)
    if sizes is not None:
        rows = rows.join(sizes, ["cluster", "topic", "partition"], "left")
        copied = F.when(F.col("gained") > 0, F.col("gained") * F.col("size_bytes")).otherwise(F.lit(0))
        unknown = (F.col("gained") > 0) & F.col("size_bytes").isNull()
    else:
        copied, unknown = F.lit(None).cast("long"), F.col("gained") > 0
    rows = rows.select("*", copied.cast("long").alias("bytes"), unknown.alias("unknown"))
    per_sender = rows.groupBy("cluster", "leader").agg(F.sum("bytes").alias("sent"))
    per_cluster = rows.groupBy("cluster", "throttle").agg(
        F.count(F.lit(1)).alias("partitions"), F.countDistinct("topic").alias("topics"),
        F.sum("gained").alias("replicasAdded"), F.sum("bytes").alias("bytes"),
        F.sum(F.col("unknown").cast("int")).alias("bytesUnknown"))
    busiest = per_sender.groupBy("cluster").agg(F.max("sent").alias("mostSent"))
    found = per_cluster.join(busiest, "cluster", "left").orderBy(F.desc_nulls_last("bytes"), "cluster").collect()
    by_cluster = []
    for r in found:
        most = r["mostSent"]
        by_cluster.append({
            "cluster": r["cluster"], "topics": int(r["topics"]), "partitions": int(r["partitions"]),
            "replicasAdded": int(r["replicasAdded"] or 0), "bytes": None if sizes is None else int(r["bytes"] or 0),
            "bytesUnknown": int(r["bytesUnknown"] or 0), "throttle": int(r["throttle"]),
            "mostSentByOneBroker": None if most is None else int(most),
            "atLeastSeconds": None if most is None else round(int(most) / int(r["throttle"]), 1)})
    return {"clusters": len(by_cluster), "partitions": sum(c["partitions"] for c in by_cluster),
            "replicasAdded": sum(c["replicasAdded"] for c in by_cluster),
            "bytes": None if sizes is None else sum(c["bytes"] or 0 for c in by_cluster),
            "byCluster": by_cluster}


def markdown(m: dict[str, Any] | None) -> list[str]:
    """The report's section: what the fleet's reassignments copy, per cluster."""
    from reconciler.reassign.traffic import bytes_text
    from reconciler.render.md_text import code

    def size(n: int | None) -> str:
        return "unknown" if n is None else bytes_text(n)

    if not m or not m["clusters"]:
        return []
    out = [f"### Replica moves: {m['partitions']:,} partition(s) in {m['clusters']:,} cluster(s) gain "
           f"{m['replicasAdded']:,} replica(s), {size(m['bytes'])} to copy", "",
           "| cluster | topics | partitions | replicas added | bytes to copy | throttle | at least |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in m["byCluster"][:20]:
        took = "" if c["atLeastSeconds"] is None else f"{c['atLeastSeconds']:,.0f} s"
        out.append(f"| {code(c['cluster'])} | {c['topics']:,} | {c['partitions']:,} | {c['replicasAdded']:,} | "
                   f"{size(c['bytes'])} | {size(c['throttle'])}/s | {took} |")
    return [*out, ""]
