"""The blast radius from the job's topic rows, in the job's second query: every section of the summary is a set
of "fact" rows (per key, per topic and risk level, per topic and rule, hosts) that each topic row makes with
array expressions over its own entries (a topic counts once, with the union of its keys' partitions and their
bytes), reduced by one hash aggregate; rule sets travel as bit masks (`bit_or`), never as arrays, so no
aggregate falls back to Spark's sort-based object aggregation. The samples are a top-N of the same rows.
`tally` adds up the few thousand rows this returns, with the broker side the driver resolved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.impact.facts import collect_json
from reconciler.impact.job import Changes, bytes_of, parts_of
from reconciler.impact.riskexpr import RULES, mask_of, risk_name, rules_of_mask
from reconciler.impact.tally import broker_sections, tally, unpack

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Rows = list[dict[str, Any]]
FACT_DDL = ("struct<section:string,dim:string,broker:int,topics:bigint,parts:bigint,bytes:bigint,level:int,"
            "mask:bigint,est:double>")


def _fires(mask: Column, rule: str) -> Column:
    from pyspark.sql import functions as F

    return mask.bitwiseAND(F.lit(mask_of([rule]))) != 0


def _deletion(key: Column, before: Column, after: Column, size: Column, parts: Column, mask: Column) -> Column:
    """Bytes a retention decrease is expected to delete from a change's partitions, where the plan's rule says
    it deletes data (`retention-lowered`, `retention-bytes-lowered`: never on a topic whose cleanup.policy lacks
    `delete`). `retention.ms` lowered from B to A: the affected bytes × (B − A) ÷ B, assuming data is spread
    evenly over the retained time (from unlimited, -1, no estimate: the data's age is unknown). `retention.bytes`
    lowered to A: per affected partition, its share of the bytes above A (the partitions' mean size stands for
    each). A topic counts once, with the larger of its estimates; compaction of a `compact,delete` topic is not
    considered."""
    from pyspark.sql import functions as F

    b, a = before.try_cast("double"), after.try_cast("double")
    size, n = size.cast("double"), parts.cast("double")
    by_time = F.when((key == "retention.ms") & _fires(mask, "retention-lowered") & (a >= 0) & (b > 0) & (a < b),
                     size * (b - a) / b)
    by_size = F.when((key == "retention.bytes") & _fires(mask, "retention-bytes-lowered") & (a >= 0)
                     & ((b < 0) | (a < b)) & (n > 0), n * F.greatest(F.lit(0.0), size / n - a))
    return F.coalesce(by_time, by_size)


def _fact(section: str, dim: Column, broker: Column | None = None, topics: int = 1, parts: Column | None = None,
          size: Column | None = None, level: Column | None = None, mask: Column | None = None,
          est: Column | None = None) -> Column:
    from pyspark.sql import functions as F

    def lit(x: Column | None, default: Any) -> Column:
        return F.lit(default) if x is None else x

    return F.struct(F.lit(section).alias("section"), dim.cast("string").alias("dim"),
                    lit(broker, None).cast("int").alias("broker"), F.lit(topics).cast("long").alias("topics"),
                    lit(parts, 0).cast("long").alias("parts"), lit(size, None).cast("long").alias("bytes"),
                    lit(level, 0).cast("int").alias("level"), lit(mask, 0).cast("long").alias("mask"),
                    lit(est, None).cast("double").alias("est"))


def _union(entries: Column, sizes_known: bool) -> tuple[Column, Column]:
    """(partitions, bytes) of the union of the entries' partitions (any entry with all of them: the topic's)."""
    from pyspark.sql import functions as F

    every = F.exists(entries, lambda x: x["part_ids"].isNull())
    ids = F.when(every, F.lit(None).cast("array<int>")).otherwise(
        F.array_distinct(F.flatten(F.transform(entries, lambda x: x["part_ids"]))))
    return parts_of(ids), bytes_of(ids, sizes_known)


def _facts(t: DataFrame, sizes_known: bool) -> DataFrame:
    """A topic row's facts: one per changed key, one for the topic (its risk level), one per rule, one per
    (key, broker) hit; exploded, with the cluster."""
    from pyspark.sql import functions as F

    t = t.select("*", F.transform("entries", lambda x: F.struct(
        x["key"].alias("key"), x["level"].alias("level"), x["mask"].alias("mask"),
        parts_of(x["part_ids"]).alias("parts"), bytes_of(x["part_ids"], sizes_known).alias("bytes"),
        x["before"].alias("before"), x["after"].alias("after"))).alias("stats"))
    stats = F.col("stats")
    keys = F.transform(stats, lambda s: _fact("keys", s["key"], parts=s["parts"], size=s["bytes"],
                                              level=s["level"], mask=s["mask"]))
    level = F.array_max(F.transform(stats, lambda s: s["level"]))
    est = F.array_max(F.transform(stats, lambda s: _deletion(s["key"], s["before"], s["after"], s["bytes"],
                                                              s["parts"], s["mask"])))
    parts, size = _union(F.col("entries"), sizes_known)
    topic = F.when(F.size("entries") > 0, F.array(_fact("topics", level, parts=parts, size=size, level=level,
                                                         est=est))).otherwise(F.array().cast(f"array<{FACT_DDL}>"))
    mask = F.aggregate("entries", F.lit(0).cast("long"), lambda acc, x: acc.bitwiseOR(x["mask"]))
    names = F.array(*[F.lit(r) for r in RULES])

    def rule(i: Column) -> Column:
        with_rule = F.filter("entries", lambda x: F.call_function("shiftright", x["mask"], i).bitwiseAND(F.lit(1)) == 1)
        rparts, rsize = _union(with_rule, sizes_known)
        return _fact("rules", F.get(names, i), parts=rparts, size=rsize)

    fired = F.filter(F.sequence(F.lit(0), F.lit(len(RULES) - 1)),
                     lambda i: F.call_function("shiftright", mask, i).bitwiseAND(F.lit(1)) == 1)
    rules = F.transform(fired, rule)
    # a (key, broker) hit, with the rules the change fires there: each hit broker's own (values that differ
    # between brokers) or the entry's (a declared topic's own override: every replica host)
    hosts = F.flatten(F.transform("entries", lambda x: F.transform(
        F.coalesce(x["brokers"], F.when(x["own"], F.col("hosts")), F.array().cast("array<int>")),
        lambda b, i: _fact("hosts", x["key"], broker=b, topics=0,
                           mask=F.coalesce(F.get(x["bmasks"], i), x["mask"])))))
    return t.select("cluster", F.inline(F.concat(keys, topic, rules, hosts)))


def _samples(t: DataFrame, sample: int) -> DataFrame:
    from pyspark.sql import functions as F

    x = t.select("cluster", "topic", "partitions", F.explode("entries").alias("e"))
    rows = x.select("cluster", "topic", "e.key", "e.before", "e.after", parts_of(F.col("e.part_ids"))
                    .alias("partitions"), risk_name(F.col("e.level")).alias("risk"),
                    rules_of_mask(F.col("e.mask")).alias("rules"), F.col("e.why").alias("why"),
                    F.col("e.level").alias("level"))
    return rows.orderBy(F.col("level").desc(), F.col("partitions").desc(), "cluster", "topic", "key").limit(
        sample).drop("level")


def _sections(ch: Changes, sample: int) -> dict[str, DataFrame]:
    """The topic side of the summary: one aggregate over the topic rows' facts, plus the samples."""
    from pyspark.sql import functions as F

    facts = _facts(ch.per_topic, ch.sizes_known)
    summed = facts.groupBy("section", "cluster", "dim", "broker").agg(
        F.sum("topics").alias("topics"), F.sum("parts").alias("partitions"), F.sum("bytes").alias("bytes"),
        F.max("level").alias("level"), F.bit_or("mask").alias("mask"), F.sum("est").alias("est"))
    return {"facts": summed, "sampleTopics": _samples(ch.per_topic, sample)}


def summary(spark: SparkSession, ch: Changes, *, sample: int = 20) -> dict[str, Any]:
    """The report's JSON: the topic side in one Spark job, the broker side from the driver's rows."""
    collected = collect_json(spark, _sections(ch, sample))
    samples = [{**{k: v for k, v in r.items() if k != "why"}, "reasons": list(ch.reasons[r["why"] or 0])}
               for r in collected["sampleTopics"]]
    s = unpack(collected["facts"], ch.sizes_known) | {"sampleTopics": samples}
    s |= broker_sections(ch, s["hosts"], sample)
    for r in s["keys"]:  # the rules of topic rows name their rule keys too
        s["ruleKeys"] += [{"rule": rule, "key": r["key"]} for rule in r["rules"] or []]
    return tally(s, ch)
