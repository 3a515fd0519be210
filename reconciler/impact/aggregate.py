"""The blast radius from the job's topic rows, in ONE Spark job: every section of the summary is a set of "fact"
rows (per key, per topic and risk level, per topic and rule, hosts) reduced by a single hash aggregate, plus the
samples. The topic rows are cached partitioned by (cluster, topic), so the unions of partitions within a topic
(a topic counts once, with the union of its keys' partitions) need no shuffle of their own; rule sets travel as
bit masks (`bit_or`), never as arrays, so no aggregate falls back to Spark's sort-based object aggregation.
`tally` adds up the few thousand rows this returns, with the broker side the driver resolved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.impact.facts import collect_json
from reconciler.impact.job import Changes
from reconciler.impact.riskexpr import severity
from reconciler.impact.tally import broker_sections, tally, unpack

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Rows = list[dict[str, Any]]


def _deletion(t: DataFrame) -> Column:
    """Bytes a retention decrease is expected to delete from this row's partitions. `retention.ms` lowered
    from B to A: the affected bytes × (B − A) ÷ B, assuming data is spread evenly over the retained time (from
    unlimited, -1, no estimate: the data's age is unknown). `retention.bytes` lowered to A: per affected
    partition, its share of the bytes above A (the partitions' mean size stands for each). A topic counts once,
    with the larger of its estimates; compaction is not considered (as if cleanup.policy includes delete)."""
    from pyspark.sql import functions as F

    before, after = F.col("before").try_cast("double"), F.col("after").try_cast("double")
    size, n = F.col("bytes").cast("double"), F.col("parts").cast("double")
    by_time = F.when((F.col("key") == "retention.ms") & (after >= 0) & (before > 0) & (after < before),
                     size * (before - after) / before)
    by_size = F.when((F.col("key") == "retention.bytes") & (after >= 0) & ((before < 0) | (after < before))
                     & (n > 0), n * F.greatest(F.lit(0.0), size / n - after))
    return F.coalesce(by_time, by_size)


FACT_COLS = ("section", "cluster", "dim", "broker", "topics", "parts", "bytes", "level", "mask", "est")


def _fact(df: DataFrame, section: str, dim: Column | str | None, **cols: Column) -> DataFrame:
    from pyspark.sql import functions as F

    default: dict[str, Column] = {
        "broker": F.lit(None).cast("int"), "topics": F.lit(1).cast("long"), "parts": F.lit(0).cast("long"),
        "bytes": F.lit(None).cast("long"), "level": F.lit(0), "mask": F.lit(0).cast("long"),
        "est": F.lit(None).cast("double")}
    dim_col = F.lit(None).cast("string") if dim is None else F.col(dim) if isinstance(dim, str) else dim
    out = [F.lit(section).alias("section"), F.col("cluster"), dim_col.cast("string").alias("dim")]
    out += [(cols.get(name, default[name])).alias(name) for name in FACT_COLS[3:]]
    return df.select(*out)


def _per_topic(x: DataFrame, by: list[str]) -> DataFrame:
    """Within a topic (and rule): the union of the rows' partitions (p = -1 stands for all of them) and the
    bytes of that union, in two hash aggregates on data already partitioned by (cluster, topic)."""
    from pyspark.sql import functions as F

    per_p = x.groupBy(*by, "p").agg(
        F.first("partitions").alias("partitions"), F.first("topic_bytes").alias("topic_bytes"),
        F.first("size").alias("size"), F.max("level").alias("level"), F.bit_or("mask").alias("mask"),
        F.max("est").alias("est"))
    g = per_p.groupBy(*by).agg(
        F.max((F.col("p") < 0).cast("int")).alias("all"), F.sum((F.col("p") >= 0).cast("int")).alias("n"),
        F.sum(F.when(F.col("p") >= 0, F.col("size"))).alias("sz"), F.first("partitions").alias("partitions"),
        F.first("topic_bytes").alias("topic_bytes"), F.max("level").alias("level"), F.bit_or("mask").alias("mask"),
        F.max("est").alias("est"))
    every = F.col("all") == 1
    return g.select("*", F.when(every, F.col("partitions")).otherwise(F.col("n")).cast("long").alias("parts"),
                    F.when(every, F.col("topic_bytes")).otherwise(F.col("sz")).cast("long").alias("bytes_u"))


def _sections(ch: Changes, sample: int) -> dict[str, DataFrame]:
    """The topic side of the summary: one aggregate over the (cached) topic rows, plus the samples."""
    from pyspark.sql import functions as F

    t = ch.topics.select(
        "*", F.when(F.col("part_ids").isNull(), F.col("partitions")).otherwise(F.size("part_ids")).alias("parts"),
        severity(F.col("risk")).alias("level"))
    t = t.withColumn("est", _deletion(t))
    x = t.select("*", F.explode(F.coalesce("part_ids", F.array(F.lit(-1)))).alias("p")).withColumn(
        "size", F.col("psizes")[F.col("p")])
    topics = _per_topic(x, ["cluster", "topic"])
    rules = _per_topic(x.select("*", F.explode("rules").alias("rule")), ["cluster", "topic", "rule"])
    facts = [
        _fact(t, "keys", "key", parts=F.col("parts").cast("long"), bytes=F.col("bytes"), level=F.col("level"),
              mask=F.col("mask")),
        _fact(topics, "topics", F.col("level"), parts=F.col("parts"), bytes=F.col("bytes_u"),
              level=F.col("level"), est=F.col("est")),
        _fact(rules, "rules", "rule", parts=F.col("parts"), bytes=F.col("bytes_u")),
        # per-replica rows carry the brokers where their value changes (a broker counts once: the aggregate's key)
        _fact(t.filter(F.col("brokers").isNotNull()), "hosts", "key", broker=F.explode("brokers"),
              topics=F.lit(0).cast("long")),
    ]
    union = facts[0]
    for f in facts[1:]:
        union = union.unionByName(f)
    summed = union.groupBy("section", "cluster", "dim", "broker").agg(
        F.sum("topics").alias("topics"), F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes"),
        F.max("level").alias("level"), F.bit_or("mask").alias("mask"), F.sum("est").alias("est"))
    samples = t.select("cluster", "topic", "key", "before", "after", F.col("parts").alias("partitions"), "risk",
                       "rules").orderBy(F.col("level").desc(), F.col("partitions").desc(), "cluster", "topic",
                                        "key").limit(sample)
    return {"facts": summed, "overrideHosts": ch.override_hosts, "sampleTopics": samples}


def summary(spark: SparkSession, ch: Changes, *, sample: int = 20) -> dict[str, Any]:
    """The report's JSON: the topic side in one Spark job, the broker side from the driver's rows."""
    collected = collect_json(spark, _sections(ch, sample))
    s = unpack(collected["facts"], ch.sizes_known) | {"sampleTopics": collected["sampleTopics"]}
    s["hosts"] += collected["overrideHosts"]  # (cluster, key, broker), distinct
    s |= broker_sections(ch, s["hosts"], sample)
    for r in s["keys"]:  # the rules of topic rows name their rule keys too
        s["ruleKeys"] += [{"rule": rule, "key": r["key"]} for rule in r["rules"] or []]
    return tally(s, ch)
