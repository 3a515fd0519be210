"""The blast radius from the job's change rows: totals, per key, per risk rule, per cluster (SPEC §8 JSON).

A topic counts once however many of its keys change; its affected partitions are the union over its keys
(all of them, unless per-broker values limit a change to the partitions with a replica on some brokers);
bytes are the sizes of those partitions (null when the inventory has no sizes). `byKey` counts, per key,
the topics whose effective value of that key changes and the brokers on which it changes (broker-level
keys have no topics). `changes` of a cluster = changed (topic, key) plus changed (broker, key) values.
Lists are sorted most affected first. Only small aggregates are collected to the driver.
"""

from __future__ import annotations

import functools
import json
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


def _sections(ch: Changes, sample: int) -> dict[str, DataFrame]:
    """Every aggregate the summary needs, as DataFrames of small row counts."""
    from pyspark.sql import functions as F

    t, b, hits, sizes = ch.topics, ch.brokers, ch.broker_hits, ch.sizes
    per_topic = _union(t, ["cluster", "topic"], sizes)
    one = F.lit(1)
    key_clusters = t.select("key", "cluster").unionByName(hits.select("key", "cluster")).distinct()
    by_key = (
        t.groupBy("key").agg(
            F.count(one).alias("topics"),
            F.sum(F.when(F.col("part_ids").isNull(), F.col("partitions")).otherwise(F.size("part_ids")))
            .alias("partitions"),
            F.max(_severity(F.col("risk"))).alias("level_t"),
            F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules_t"),
        )
        .join(hits.groupBy("key").agg(F.count(one).alias("brokers")), "key", "full")
        .join(key_clusters.groupBy("key").agg(F.count(one).alias("clusters")), "key", "left")
        .join(b.withColumn("key", F.coalesce("topic_key", "key")).groupBy("key").agg(
            F.max(_severity(F.col("risk"))).alias("level_b"),
            F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules_b"),
        ), "key", "left")
    )
    if sizes is not None:
        key_bytes = _union(t, ["cluster", "topic", "key"], sizes).groupBy("key").agg(F.sum("bytes").alias("bytes"))
        by_key = by_key.join(key_bytes, "key", "left")
    else:
        by_key = by_key.withColumn("bytes", F.lit(None).cast("long"))
    exploded = t.select("*", F.explode("rules").alias("rule"))
    per_rule = _union(exploded, ["cluster", "topic", "rule"], sizes)
    cluster_changes = t.select("cluster", "risk").unionByName(b.select("cluster", "risk")).groupBy("cluster").agg(
        F.count(one).alias("changes"), F.max(_severity(F.col("risk"))).alias("level_c"))
    by_cluster = (
        cluster_changes
        .join(per_topic.groupBy("cluster").agg(F.count(one).alias("topics"), F.sum("parts").alias("partitions"),
                                               F.sum("bytes").alias("bytes"), F.max("level").alias("level_t")),
              "cluster", "left")
        .join(hits.groupBy("cluster").agg(F.countDistinct("broker").alias("brokers")), "cluster", "left")
    )
    parts = F.when(F.col("part_ids").isNull(), F.col("partitions")).otherwise(F.size("part_ids"))
    declared, scope = ch.declared_topics, ch.scope_topics
    return {
        "totals": per_topic.agg(F.count(one).alias("topics"), F.sum("parts").alias("partitions"),
                                F.sum("bytes").alias("bytes")),
        "byRisk": per_topic.groupBy("level").agg(F.count(one).alias("topics")),
        "clusters": t.select("cluster").unionByName(hits.select("cluster")).distinct().agg(F.count(one).alias("n")),
        "brokers": hits.select("cluster", "broker").distinct().agg(F.count(one).alias("n")),
        "topicChanges": t.agg(F.count(one).alias("n")),
        "brokerChanges": b.agg(F.count(one).alias("n")),
        "byKey": by_key,
        "ruleTopics": per_rule.groupBy("rule").agg(
            F.countDistinct("cluster").alias("clusters"), F.count(one).alias("topics"),
            F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes")),
        "ruleKeys": exploded.groupBy("rule").agg(F.array_sort(F.collect_set("key")).alias("keys")),
        "ruleBrokers": b.select("cluster", "broker", "key", F.explode("rules").alias("rule")).groupBy("rule").agg(
            F.countDistinct("cluster", "broker").alias("brokers"), F.countDistinct("cluster").alias("clusters"),
            F.array_sort(F.collect_set("key")).alias("keys")),
        "byCluster": by_cluster,
        "inventory": scope.agg(F.count(one).alias("topics"), F.sum("partitions").alias("partitions")),
        "inventoryBrokers": ch.brokers_all.agg(F.count(one).alias("n")),
        "present": ch.brokers_all.select("cluster").unionByName(scope.select("cluster")).distinct(),
        "created": declared.join(scope.select("cluster", "topic"), ["cluster", "topic"], "left_anti").agg(
            F.count(one).alias("n")),
        "grown": declared.alias("d").join(scope.alias("l"), ["cluster", "topic"])
        .filter(F.col("d.partitions") > F.col("l.partitions")).agg(F.count(one).alias("n")),
        "sampleTopics": t.select("cluster", "topic", "key", "before", "after", parts.alias("partitions"), "risk",
                                 "rules")
        .orderBy(_severity(F.col("risk")).desc(), F.col("partitions").desc(), "cluster", "topic", "key").limit(sample),
        "sampleBrokers": b.select("cluster", "broker", "key", "before", "after", "risk", "rules")
        .orderBy(_severity(F.col("risk")).desc(), "cluster", "broker", "key").limit(sample),
    }


def collect_sections(sections: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """All sections in one Spark job (each job costs ~1 s of scheduling on a small machine)."""
    from pyspark.sql import functions as F

    parts = [
        df.select(F.lit(name).alias("section"),
                  F.to_json(F.struct(*df.columns), {"ignoreNullFields": "false"}).alias("row"))
        for name, df in sections.items()
    ]
    union = functools.reduce(lambda x, y: x.unionByName(y), parts)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in sections}
    for row in union.collect():
        out[row["section"]].append(json.loads(row["row"]))
    return out


def summary(spark: SparkSession, ch: Changes, *, sample: int = 20) -> dict[str, Any]:
    s = collect_sections(_sections(ch, sample))
    totals = s["totals"][0]
    by_risk = {name: 0 for name in sorted(RISK_ORDER, key=RISK_ORDER.__getitem__, reverse=True)}
    for r in s["byRisk"]:
        by_risk[_level_name(r["level"])] = r["topics"]
    present = {r["cluster"] for r in s["present"]}
    inventory = s["inventory"][0]
    return {
        "format": SUMMARY_FORMAT,
        "clusters": ch.clusters,
        "clustersAffected": s["clusters"][0]["n"],
        "brokersAffected": s["brokers"][0]["n"],
        "topicsAffected": totals["topics"],
        "partitionsAffected": int(totals["partitions"] or 0),
        "bytesAffected": None if ch.sizes is None else int(totals["bytes"] or 0),
        "topicsByRisk": by_risk,
        "topicChangesTotal": s["topicChanges"][0]["n"],
        "brokerChangesTotal": s["brokerChanges"][0]["n"],
        "byKey": _by_key(s["byKey"]),
        "byRule": _by_rule(s, ch.sizes is not None),
        "byCluster": _by_cluster(s["byCluster"], ch.sizes is not None),
        "inventory": {
            "clusters": len(present), "brokers": s["inventoryBrokers"][0]["n"],
            "topics": inventory["topics"], "partitions": int(inventory["partitions"] or 0),
        },
        "missingClusters": sorted(set(ch.clusters) - present),
        "topicsCreated": s["created"][0]["n"],
        "partitionIncreases": s["grown"][0]["n"],
        "topicChanges": s["sampleTopics"],
        "brokerChanges": s["sampleBrokers"],
    }


def _level_name(level: int | None) -> str:
    return next((n for n, v in RISK_ORDER.items() if v == (level or 0)), "safe")


def _by_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [
        {
            "key": r["key"], "clusters": r["clusters"] or 0, "brokers": r["brokers"] or 0,
            "topics": r["topics"] or 0, "partitions": int(r["partitions"] or 0), "bytes": r["bytes"],
            "risk": _level_name(max(r["level_t"] or 0, r["level_b"] or 0)),
            "rules": _rule_order(set(r["rules_t"] or []) | set(r["rules_b"] or [])),
        }
        for r in rows
    ]
    out.sort(key=lambda r: (-r["topics"], -r["partitions"], -r["brokers"], r["key"]))
    return out


def _rule_order(ids: set[str]) -> list[str]:
    order = list(RULES)
    return sorted(ids, key=order.index)


def _by_rule(s: dict[str, list[dict[str, Any]]], has_sizes: bool) -> list[dict[str, Any]]:
    keys = {r["rule"]: r["keys"] for r in s["ruleKeys"]}
    out: dict[str, dict[str, Any]] = {}
    for r in s["ruleTopics"]:
        out[r["rule"]] = {**r, "brokers": 0, "keys": keys.get(r["rule"], [])}
    for r in s["ruleBrokers"]:
        row = out.setdefault(r["rule"], {"rule": r["rule"], "clusters": r["clusters"], "topics": 0,
                                          "partitions": 0, "bytes": 0 if has_sizes else None, "keys": []})
        row["brokers"] = r["brokers"]
        row["keys"] = sorted(set(row["keys"]) | set(r["keys"]))
    for row in out.values():
        row["risk"] = RULES[row["rule"]].risk
        row["partitions"] = int(row["partitions"] or 0)
    order = sorted(out.values(), key=lambda r: (-RISK_ORDER[r["risk"]], -r["topics"], -r["brokers"], r["rule"]))
    return [{k: r[k] for k in ("rule", "risk", "keys", "clusters", "brokers", "topics", "partitions", "bytes")}
            for r in order]


def _by_cluster(rows: list[dict[str, Any]], has_sizes: bool) -> list[dict[str, Any]]:
    out = [
        {
            "cluster": r["cluster"], "brokers": r["brokers"] or 0, "topics": r["topics"] or 0,
            "partitions": int(r["partitions"] or 0),
            "bytes": (r["bytes"] or 0) if has_sizes else None, "changes": r["changes"],
            "risk": _level_name(max(r["level_t"] or 0, r["level_c"] or 0)),
        }
        for r in rows
    ]
    out.sort(key=lambda r: (-r["topics"], -r["partitions"], -r["changes"], r["cluster"]))
    return out
