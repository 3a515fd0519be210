"""The blast radius from the job's change rows: totals, per key, per risk rule, per cluster (SPEC §8 JSON).

A topic counts once however many of its keys change; its affected partitions are the union over its keys
(all of them, unless per-broker values limit a change to the partitions with a replica on some brokers);
bytes are the sizes of those partitions (null when the inventory has no sizes). `byKey` counts, per key,
the topics whose effective value of that key changes and the brokers on which it changes (broker-level
keys have no topics). `changes` of a cluster = changed (topic, key) plus changed (broker, key) values.
Lists are sorted most affected first. Only small aggregates are collected to the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.impact.job import Changes
from reconciler.impact.riskexpr import RULES
from reconciler.model import RISK_ORDER

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

SUMMARY_FORMAT = 1


def _severity(risk: Column) -> Column:
    from pyspark.sql import functions as F

    expr = F.lit(0)
    for name, level in RISK_ORDER.items():
        expr = F.when(risk == name, F.lit(level)).otherwise(expr)
    return expr


def _risk_name(level: Column) -> Column:
    from pyspark.sql import functions as F

    expr = F.lit("safe")
    for name, value in RISK_ORDER.items():
        expr = F.when(level == value, F.lit(name)).otherwise(expr)
    return expr


def _union(rows: DataFrame, by: list[str], sizes: DataFrame | None) -> DataFrame:
    """Per group (within one topic): affected partitions as the union of the rows' partitions, and bytes."""
    from pyspark.sql import functions as F

    g = rows.groupBy(*by).agg(
        F.first("partitions").alias("topic_partitions"),
        F.max(F.col("part_ids").isNull().cast("int")).alias("all"),
        F.array_distinct(F.flatten(F.collect_list(F.coalesce("part_ids", F.array().cast("array<int>")))))
        .alias("ids"),
        F.max(_severity(F.col("risk"))).alias("level"),
    )
    g = g.withColumn("all", (F.col("all") == 1) | (F.size("ids") == F.col("topic_partitions")))
    g = g.withColumn("parts", F.when(F.col("all"), F.col("topic_partitions")).otherwise(F.size("ids")))
    if sizes is None:
        return g.withColumn("bytes", F.lit(None).cast("long"))
    whole = sizes.join(g.filter("all").select("cluster", "topic").distinct(), ["cluster", "topic"], "left_semi")
    whole = whole.groupBy("cluster", "topic").agg(F.sum("size_bytes").alias("topic_bytes"))
    part = (
        g.filter(~F.col("all")).select(*by, F.explode("ids").alias("partition"))
        .join(sizes, ["cluster", "topic", "partition"]).groupBy(*by).agg(F.sum("size_bytes").alias("part_bytes"))
    )
    g = g.join(whole, ["cluster", "topic"], "left").join(part, by, "left")
    bytes_ = F.when(F.col("all"), F.col("topic_bytes")).otherwise(F.col("part_bytes"))
    return g.withColumn("bytes", F.coalesce(bytes_, F.lit(0)).cast("long"))


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def summary(spark: SparkSession, ch: Changes, *, sample: int = 20) -> dict[str, Any]:
    from pyspark.sql import functions as F

    t, b = ch.topics, ch.brokers
    per_topic = _union(t, ["cluster", "topic"], ch.sizes).cache()
    totals = per_topic.agg(
        F.count(F.lit(1)).alias("topics"), F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes")
    ).first()
    assert totals is not None
    key_clusters = t.select("key", "cluster").unionByName(ch.broker_hits.select("key", "cluster")).distinct()
    by_key = (
        t.groupBy("key").agg(
            F.count(F.lit(1)).alias("topics"),
            F.sum(F.when(F.col("part_ids").isNull(), F.col("partitions")).otherwise(F.size("part_ids")))
            .alias("partitions"),
            F.max(_severity(F.col("risk"))).alias("level_t"),
            F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules_t"),
        )
        .join(ch.broker_hits.groupBy("key").agg(F.count(F.lit(1)).alias("brokers")), "key", "full")
        .join(key_clusters.groupBy("key").agg(F.count(F.lit(1)).alias("clusters")), "key", "left")
        .join(
            b.withColumn("key", F.coalesce("topic_key", "key")).groupBy("key").agg(
                F.max(_severity(F.col("risk"))).alias("level_b"),
                F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules_b"),
            ), "key", "left",
        )
    )
    by_key_bytes = None
    if ch.sizes is not None:
        by_key_bytes = _union(t, ["cluster", "topic", "key"], ch.sizes).groupBy("key").agg(
            F.sum("bytes").alias("bytes"))
    if by_key_bytes is not None:
        by_key = by_key.join(by_key_bytes, "key", "left")
    else:
        by_key = by_key.withColumn("bytes", F.lit(None).cast("long"))
    keys = _rows(by_key.select(
        "key", F.coalesce("clusters", F.lit(0)).alias("clusters"), F.coalesce("brokers", F.lit(0)).alias("brokers"),
        F.coalesce("topics", F.lit(0)).alias("topics"), F.coalesce("partitions", F.lit(0)).alias("partitions"),
        "bytes",
        _risk_name(F.greatest(F.coalesce("level_t", F.lit(0)), F.coalesce("level_b", F.lit(0)))).alias("risk"),
        F.array_distinct(F.concat(F.coalesce("rules_t", F.array()), F.coalesce("rules_b", F.array()))).alias("rules"),
    ))
    keys.sort(key=lambda r: (-r["topics"], -r["partitions"], -r["brokers"], r["key"]))
    return {
        "format": SUMMARY_FORMAT,
        "clusters": ch.clusters,
        **_totals(ch, totals, per_topic),
        "byKey": keys,
        "byRule": _by_rule(ch),
        "byCluster": _by_cluster(ch, per_topic),
        **_context(ch),
        "topicChanges": _sample_topics(t, sample),
        "brokerChanges": _sample_brokers(b, sample),
    }


def _totals(ch: Changes, totals: Any, per_topic: DataFrame) -> dict[str, Any]:
    clusters = (
        ch.topics.select("cluster").unionByName(ch.broker_hits.select("cluster")).distinct().count()
    )
    brokers = ch.broker_hits.select("cluster", "broker").distinct().count()
    by_risk = {name: 0 for name in sorted(RISK_ORDER, key=RISK_ORDER.__getitem__, reverse=True)}
    for r in per_topic.groupBy("level").count().collect():
        by_risk[_level_name(r["level"])] = r["count"]
    return {
        "clustersAffected": clusters,
        "brokersAffected": brokers,
        "topicsAffected": totals["topics"],
        "partitionsAffected": int(totals["partitions"] or 0),
        "bytesAffected": None if ch.sizes is None else int(totals["bytes"] or 0),
        "topicsByRisk": by_risk,
        "brokerChangesTotal": ch.brokers.count(),
        "topicChangesTotal": ch.topics.count(),
    }


def _level_name(level: int | None) -> str:
    return next((n for n, v in RISK_ORDER.items() if v == (level or 0)), "safe")


def _by_rule(ch: Changes) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    exploded = ch.topics.select("*", F.explode("rules").alias("rule"))
    per = _union(exploded, ["cluster", "topic", "rule"], ch.sizes)
    topics = _rows(per.groupBy("rule").agg(
        F.countDistinct("cluster").alias("clusters"), F.count(F.lit(1)).alias("topics"),
        F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes"),
    ))
    keys = {r["rule"]: r["keys"] for r in _rows(
        exploded.groupBy("rule").agg(F.array_sort(F.collect_set("key")).alias("keys")))}
    brokers = _rows(ch.brokers.select("cluster", "broker", "key", F.explode("rules").alias("rule"))
                    .groupBy("rule").agg(F.countDistinct("cluster", "broker").alias("brokers"),
                                         F.array_sort(F.collect_set("key")).alias("keys"),
                                         F.countDistinct("cluster").alias("clusters")))
    out: dict[str, dict[str, Any]] = {}
    for r in topics:
        out[r["rule"]] = {**r, "brokers": 0, "keys": keys.get(r["rule"], [])}
    for r in brokers:
        row = out.setdefault(r["rule"], {"rule": r["rule"], "clusters": r["clusters"], "topics": 0,
                                          "partitions": 0, "bytes": None if ch.sizes is None else 0, "keys": []})
        row["brokers"] = r["brokers"]
        row["keys"] = sorted(set(row["keys"]) | set(r["keys"]))
    for row in out.values():
        rule = RULES[row["rule"]]
        row["risk"] = rule.risk
        row["partitions"] = int(row["partitions"] or 0)
    order = sorted(out.values(), key=lambda r: (-RISK_ORDER[r["risk"]], -r["topics"], -r["brokers"], r["rule"]))
    return [{k: r[k] for k in ("rule", "risk", "keys", "clusters", "brokers", "topics", "partitions", "bytes")}
            for r in order]


def _by_cluster(ch: Changes, per_topic: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    tc = per_topic.groupBy("cluster").agg(
        F.count(F.lit(1)).alias("topics"), F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes"),
        F.max("level").alias("level_t"),
    )
    changes = ch.topics.select("cluster", "risk").unionByName(ch.brokers.select("cluster", "risk")).groupBy(
        "cluster").agg(F.count(F.lit(1)).alias("changes"), F.max(_severity(F.col("risk"))).alias("level_c"))
    brokers = ch.broker_hits.groupBy("cluster").agg(F.countDistinct("broker").alias("brokers"))
    rows = _rows(
        changes.join(tc, "cluster", "left").join(brokers, "cluster", "left").select(
            "cluster", F.coalesce("brokers", F.lit(0)).alias("brokers"),
            F.coalesce("topics", F.lit(0)).alias("topics"),
            F.coalesce("partitions", F.lit(0)).cast("long").alias("partitions"), "bytes", "changes",
            _risk_name(F.greatest(F.coalesce("level_t", F.lit(0)), "level_c")).alias("risk"),
        )
    )
    for r in rows:
        if ch.sizes is not None and r["bytes"] is None:
            r["bytes"] = 0
    rows.sort(key=lambda r: (-r["topics"], -r["partitions"], -r["changes"], r["cluster"]))
    return rows


def _context(ch: Changes) -> dict[str, Any]:
    """How big the selected part of the fleet is, and what the manifests create rather than change."""
    from pyspark.sql import functions as F

    inv = ch.scope_topics.agg(F.count(F.lit(1)).alias("topics"), F.sum("partitions").alias("partitions")).first()
    assert inv is not None
    present = {r["cluster"] for r in ch.brokers_all.select("cluster").distinct().collect()}
    present |= {r["cluster"] for r in ch.scope_topics.select("cluster").distinct().collect()}
    declared = ch.declared_topics.join(ch.scope_topics.select("cluster", "topic"), ["cluster", "topic"], "left_anti")
    grown = ch.declared_topics.alias("d").join(ch.scope_topics.alias("l"), ["cluster", "topic"]).filter(
        F.col("d.partitions") > F.col("l.partitions"))
    return {
        "inventory": {
            "clusters": len(present), "brokers": ch.brokers_all.count(),
            "topics": inv["topics"], "partitions": int(inv["partitions"] or 0),
        },
        "missingClusters": sorted(set(ch.clusters) - present),
        "topicsCreated": declared.count(),
        "partitionIncreases": grown.count(),
    }


def _sample_topics(t: DataFrame, n: int) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    parts = F.when(F.col("part_ids").isNull(), F.col("partitions")).otherwise(F.size("part_ids"))
    df = t.select("cluster", "topic", "key", "before", "after", parts.alias("partitions"), "risk", "rules")
    return _rows(df.orderBy(_severity(F.col("risk")).desc(), F.col("partitions").desc(), "cluster", "topic", "key")
                 .limit(n))


def _sample_brokers(b: DataFrame, n: int) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    return _rows(b.select("cluster", "broker", "key", "before", "after", "risk", "rules")
                 .orderBy(_severity(F.col("risk")).desc(), "cluster", "broker", "key").limit(n))
