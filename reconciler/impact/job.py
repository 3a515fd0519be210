"""The impact job: which (topic, key) effective values change, per topic, in two Spark queries.

1. `facts`: one small collect (broker side, the declared topics' live overrides, counts). The driver resolves
   the broker side (`brokerside`), the declared overrides (`overrides`) and from them every candidate change
   with its values and risk (`candidates`).
2. One query over the inventory's large tables, each read once: topics, the overrides that shield a candidate
   key and the partition sizes go through one shuffle by (cluster, topic) into a plain hash aggregate (a row per
   topic); the replicas and sizes of the few topics that need them per partition, with the declared topics'
   candidates, go through a second one (lists per topic); they meet in a shuffled hash join with the clusters'
   candidates broadcast. Each topic row then knows its changed keys (`entries`, array expressions over its own
   data), from which `aggregate` builds every summary section in one more shuffle.
The topic rows are cached: the summary's facts and its samples both read them, and Spark would otherwise compute
them twice (1M topics, warm: 11.7 s cached against 13.4-14.0 s, 10 stages against 8).
Undeclared topics' overrides never change (apply leaves them alone), so a topic with no candidate key of its
cluster cannot change: the topics of other clusters are never read. `full=True` makes every topic key a
candidate of every cluster (slower; the same result, which the tests check).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.brokerside import BrokerSide, broker_side
from reconciler.impact.candidates import CAND_DDL, NO_RF, POLICY_KEY, Candidates, candidates, key_index
from reconciler.impact.facts import Facts, collect_facts, only
from reconciler.impact.frames import is_in, local_df, pair_in
from reconciler.impact.inventory import Inventory
from reconciler.impact.overrides import declared_overrides
from reconciler.impact.riskexpr import risk_name, rules_of_mask

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger(__name__)
_CACHED: list[DataFrame] = []  # the topic rows this module cached last (released by the next run)
BROKER_SCHEMA = ("cluster STRING, broker INT, key STRING, topic_key STRING, before STRING, after STRING, "
                 "rules ARRAY<STRING>, risk STRING, reasons ARRAY<STRING>")


@dataclass
class Changes:
    """The job's topic rows and what the driver resolved (broker side, facts), for `aggregate` and the Parquet
    detail tables. `per_topic`: one row per changed topic (cluster, topic, partitions, rf, topic_bytes, reps,
    psizes, entries), `entries` its changed keys; part_ids/brokers of an entry are null when the change hits
    every partition (a uniform broker side)."""

    per_topic: DataFrame
    sizes_known: bool  # the inventory has partition sizes (else every bytes figure is null)
    broker_side: BrokerSide
    facts: Facts
    clusters: list[str]
    spark: SparkSession
    reasons: list[tuple[str, ...]]  # the plan's reasons of every rating, by the id an entry carries (`why`)
    declared_brokers: list[tuple[str, int]] = field(default_factory=list)  # (cluster, broker): spec.brokers

    @property
    def topics(self) -> DataFrame:
        """(cluster, topic, key, partitions, rf, src, before, after, part_ids, brokers, rules, mask, risk,
        reasons, topic_bytes, bytes): one row per changed (topic, key); mask: the rules as a bit set
        (riskexpr.mask_of); reasons: the plan's, looked up by id in a broadcast table of the driver's."""
        from pyspark.sql import functions as F

        t = self.per_topic.select("*", F.explode("entries").alias("e"))
        why = local_df(self.spark, [(i, list(r)) for i, r in enumerate(self.reasons)],
                       "why INT, reasons ARRAY<STRING>")
        t = t.join(F.broadcast(why), F.col("e.why") == why["why"], "left")
        return t.select(
            "cluster", "topic", "e.key", "partitions", "rf", "e.src", "e.before", "e.after", "e.part_ids",
            "e.brokers", rules_of_mask(F.col("e.mask")).alias("rules"), "e.mask",
            risk_name(F.col("e.level")).alias("risk"), "reasons", "topic_bytes",
            bytes_of(F.col("e.part_ids"), self.sizes_known).alias("bytes"))

    @property
    def brokers(self) -> DataFrame:
        """(cluster, broker, key, topic_key, before, after, rules, risk): the changed broker values."""
        return local_df(self.spark, self.broker_side.rows, BROKER_SCHEMA)


def release_cached() -> None:
    """Free the topic rows this module cached (a long-lived session or a shared Spark Connect server keeps
    cached data until told; the next `compute_changes` does it too)."""
    for stale in _CACHED:
        stale.unpersist()
    _CACHED.clear()


def cached(df: DataFrame) -> DataFrame:
    """`df` cached until the next run's `release_cached` (rows several queries of this run read)."""
    df = df.cache()
    _CACHED.append(df)
    return df


def compute_changes(spark: SparkSession, inv: Inventory, after: AfterRows, *, full: bool = False) -> Changes:
    """Small facts to the driver, the candidates there, then the topic rows as one plan."""
    release_cached()  # a long-lived session: never reuse a previous run's rows, free their memory
    started = time.monotonic()
    facts = collect_facts(spark, inv, after)
    log.info("impact: small facts collected in %.1fs (%d brokers)", time.monotonic() - started, len(facts.brokers))
    started = time.monotonic()
    clusters = list(after.clusters)
    bs = broker_side(facts.brokers, facts.dynamic, facts.static, after, facts.min_rf)
    cands = candidates(bs, declared_overrides(facts.declared_live, after), clusters, facts.rfs_of, full=full)
    log.info("impact: broker side and %d rated candidate changes on the driver in %.2fs", len(cands),
             time.monotonic() - started)
    sizes = only(inv.sizes, clusters) if inv.sizes is not None else None
    gone = [(r["cluster"], r["topic"]) for r in facts.deleted]  # deleted by apply: no value after, no change
    per_topic = _per_topic(spark, inv, sizes, cands, gone).cache()
    _CACHED.append(per_topic)
    return Changes(per_topic, sizes is not None, bs, facts, clusters, spark, cands.reasons, list(after.brokers))


def _per_topic(spark: SparkSession, inv: Inventory, sizes: DataFrame | None, cands: Candidates,
               gone: list[tuple[str, str]]) -> DataFrame:
    """A row per topic of a cluster with candidates, with its entries (changed keys, often none); the topics
    `policy.deleteTopics` deletes (`gone`) are counted apart (`deletions`), never as config changes."""
    from pyspark.sql import functions as F

    topics = _topics(spark, inv, sizes, cands, gone)
    lists = _lists(spark, inv, sizes, cands)
    by_cluster = local_df(spark, sorted(cands.by_cluster.items()), f"cluster STRING, ccands ARRAY<{CAND_DDL}>")
    t = (topics.join(lists.hint("shuffle_hash"), ["cluster", "topic"], "left")
         .join(F.broadcast(by_cluster), "cluster", "left"))
    declared = F.coalesce(F.size("dcands"), F.lit(0)) > 0
    cand = F.when(declared, F.flatten("dcands")).otherwise(F.coalesce("ccands", F.array().cast(f"array<{CAND_DDL}>")))
    reps = F.coalesce("reps", F.array().cast("array<struct<partition:int,replicas:array<int>>>"))
    t = t.select("cluster", "topic", "partitions", "rf", "shield", "pol", "topic_bytes", reps.alias("reps"),
                 "psizes", cand.alias("cands"))
    t = t.select("*", F.array_sort(F.array_distinct(F.flatten(F.transform("reps", lambda p: p["replicas"]))))
                 .alias("hosts"))
    entries = _entries()
    # no filter on the entries: Spark would push it below this projection and compute them twice; a topic
    # without entries makes no facts, no samples and no detail rows
    return t.select("*", entries.alias("entries")).drop("cands", "shield", "pol")


def _topics(spark: SparkSession, inv: Inventory, sizes: DataFrame | None, cands: Candidates,
            gone: list[tuple[str, str]]) -> DataFrame:
    """(cluster, topic, partitions, rf, shield, pol, topic_bytes): topics, shields and sizes in one shuffle and
    one hash aggregate; every topic of a cluster with candidates, and the declared topics elsewhere. `shield`: the
    topic's overridden candidate keys as a bit set (`candidates.key_index`); `pol`: its own cleanup.policy, read
    where a rating depends on it (`Candidates.policy_clusters`): 0 none, 1 with `delete`, 2 without."""
    from pyspark.sql import functions as F

    none = F.lit(None)
    cols = ("cluster", "topic", "partitions", "rf", "present", "shield", "pol", "size")
    whole = sorted(c for c, x in cands.by_cluster.items() if x)
    elsewhere = [ct for ct in cands.by_topic if not cands.by_cluster.get(ct[0])]
    clusters, wanted = _clusters_or_topics(spark, whole, elsewhere)
    kept = wanted & ~pair_in(spark, "cluster", "topic", gone) if gone else wanted
    topics = only(inv.topics, clusters).filter(kept).select(
        "cluster", "topic", "partitions", F.col("replication_factor").alias("rf"), F.lit(1).alias("present"),
        F.lit(0).cast("long").alias("shield"), F.lit(0).alias("pol"), none.cast("long").alias("size"))
    index = F.array(*[F.lit(k) for k in key_index()])
    policy = (F.col("key") == POLICY_KEY) & is_in(spark, "cluster", cands.policy_clusters)
    value = F.coalesce(F.trim("value"), F.lit(""))
    with_delete = (value == "") | F.exists(F.split(value, ","), lambda p: F.lower(F.trim(p)) == "delete")
    shields = only(inv.configs, clusters).filter(
        (F.col("entity_type") == "topics") & (pair_in(spark, "cluster", "key", cands.pairs) | policy)).select(
        "cluster", F.col("entity").alias("topic"), none.cast("int").alias("partitions"), none.cast("int").alias("rf"),
        F.lit(0).alias("present"), F.call_function("shiftleft", F.lit(1).cast("long"),
                                             (F.array_position(index, F.col("key")) - 1).cast("int"))
        .alias("shield"), F.when(F.col("key") == POLICY_KEY, F.when(with_delete, 1).otherwise(2)).otherwise(0)
        .alias("pol"), none.cast("long").alias("size"))
    union = topics.unionByName(shields)
    if sizes is not None:
        union = union.unionByName(sizes.filter(wanted).select(
            "cluster", "topic", none.cast("int").alias("partitions"), none.cast("int").alias("rf"),
            F.lit(0).alias("present"), F.lit(0).cast("long").alias("shield"), F.lit(0).alias("pol"),
            F.col("size_bytes").alias("size")))
    return union.select(*cols).groupBy("cluster", "topic").agg(
        F.max("present").alias("present"), F.max("partitions").alias("partitions"), F.max("rf").alias("rf"),
        F.bit_or("shield").alias("shield"), F.max("pol").alias("pol"), F.sum("size").alias("topic_bytes"),
    ).filter(F.col("present") == 1).drop("present")


def _lists(spark: SparkSession, inv: Inventory, sizes: DataFrame | None, cands: Candidates) -> DataFrame:
    """(cluster, topic, reps, psizes, dcands): per topic the replicas and partition sizes of the topics that
    need them (clusters with a mixed key, declared topics whose hosts count) and the declared topics'
    candidates, as lists (one shuffle; these topics are few)."""
    from pyspark.sql import functions as F

    none = F.lit(None)
    rep_t, size_t = "struct<partition:int,replicas:array<int>>", "struct<partition:int,size:bigint>"
    clusters, need = _clusters_or_topics(spark, cands.replica_clusters, cands.replica_topics)
    union = only(inv.partitions, clusters).filter(need).select(
        "cluster", "topic", F.struct("partition", "replicas").alias("rep"), none.cast(size_t).alias("psize"),
        none.cast(f"array<{CAND_DDL}>").alias("dc"))
    if sizes is not None:
        union = union.unionByName(sizes.filter(need).select(
            "cluster", "topic", none.cast(rep_t).alias("rep"),
            F.struct("partition", F.col("size_bytes").alias("size")).alias("psize"),
            none.cast(f"array<{CAND_DDL}>").alias("dc")))
    declared = local_df(spark, [(c, t, x) for (c, t), x in sorted(cands.by_topic.items())],
                        f"cluster STRING, topic STRING, dc ARRAY<{CAND_DDL}>")
    union = union.unionByName(declared.select("cluster", "topic", none.cast(rep_t).alias("rep"),
                                              none.cast(size_t).alias("psize"), "dc"))
    return union.groupBy("cluster", "topic").agg(
        F.collect_list("rep").alias("reps"), F.collect_list("psize").alias("psizes"),
        F.collect_list("dc").alias("dcands"))


def _clusters_or_topics(spark: SparkSession, clusters: list[str], topics: list[tuple[str, str]]
                        ) -> tuple[list[str], Column]:
    """Every topic of `clusters` and the listed (cluster, topic) elsewhere: the clusters to read (row groups to
    skip) and the predicate on (cluster, topic)."""
    return (sorted({*clusters, *(c for c, _ in topics)}),
            is_in(spark, "cluster", clusters) | pair_in(spark, "cluster", "topic", topics))


def _rating(rrf: Column, rv: Column, rf: Column, no_delete: Column) -> Column:
    """The rating of a pair for the topic's replication factor (keys not rated by it have only -1) and its
    cleanup-policy case: (mask, level, why)."""
    from pyspark.sql import functions as F

    def at(k: Column) -> Column:
        return F.get(rv, F.array_position(rrf, k) - 1)

    r = F.coalesce(at(F.coalesce(rf, F.lit(NO_RF))), at(F.lit(NO_RF)))
    return F.struct(*[F.when(no_delete, r["n" + f]).otherwise(r[f]).alias(f) for f in ("mask", "level", "why")])


def _entries() -> Column:
    """The topic row's candidates (`cands`) as entries (`_entry`), those that hit."""
    from pyspark.sql import functions as F

    return F.filter(F.transform(F.transform(F.transform("cands", _hit_brokers), _worst), _entry), lambda x: x["hit"])


# `_entry` in three steps, each naming what the next reads (a struct field), so that no expression is written out
# twice: the plan is linear in the candidate's parts. Written as one expression (a broker's rating inside the
# "worst broker" inside the values shown), it was 1.4 MB of Spark Connect plan for 13 candidates, 16 s of the
# server's analysis per query; the JVM's shared expression objects hid that on a classic session. Each broker's
# rating is also computed once instead of several times.

def _hit_brokers(e: Column) -> Column:
    """(e, hbs): the candidate and its hit brokers among the topic's hosts, each with its own values (pb) and
    rating (r) for the topic's replication factor and cleanup-policy case."""
    from pyspark.sql import functions as F

    def with_rating(b: Column) -> Column:
        pb = F.get(e["hv"], F.array_position(e["hb"], b) - 1)
        return F.struct(b.alias("b"), pb.alias("pb"))

    def rated(y: Column) -> Column:
        pb = y["pb"]
        return F.struct(y["b"].alias("b"), pb.alias("pb"),
                        _rating(pb["rrf"], pb["rv"], F.col("rf"), _no_delete(e, pb["ind"])).alias("r"))

    hit = F.transform(F.transform(F.filter("hosts", lambda b: F.array_contains(e["hb"], b)), with_rating), rated)
    return F.struct(e.alias("e"), hit.alias("hbs"))


def _worst(x: Column) -> Column:
    """(e, hbs, level, worst): the highest risk level of the hit brokers and the first (lowest) broker with it."""
    from pyspark.sql import functions as F

    level = F.array_max(F.transform(x["hbs"], lambda y: y["r"]["level"]))
    worst = F.get(F.filter(x["hbs"], lambda y: y["r"]["level"] == level), 0)
    return F.struct(x["e"].alias("e"), x["hbs"].alias("hbs"), level.alias("level"), worst.alias("worst"))


def _no_delete(e: Column, inherited: Column) -> Column:
    """The topic's cleanup.policy after the change lacks `delete`: its own policy's case, else the inherited one."""
    from pyspark.sql import functions as F

    own_policy = F.coalesce(F.col("pol"), F.lit(0))
    return F.when(e["fixed"] | (own_policy == 0), inherited).otherwise(own_policy == 2)


def _entry(x: Column) -> Column:
    """A candidate on one topic row: does it hit, which partitions and brokers, values shown, rules, risk, reasons.
    Where brokers differ, the values and reasons shown are those of the most at risk hit broker (the lowest
    of them): they explain the entry's risk, the highest of its brokers'."""
    from pyspark.sql import functions as F

    e, hbs, worst = x["e"], x["hbs"], x["worst"]
    shielded = (e["idx"] >= 0) & (F.call_function("shiftright", F.col("shield"), e["idx"]).bitwiseAND(F.lit(1)) == 1)
    uniform = e["uniform"]
    rated = _rating(e["rrf"], e["rv"], F.col("rf"), _no_delete(e, e["ind"]))
    hit_brokers = F.transform(hbs, lambda y: y["b"])
    part_ids = F.array_sort(F.transform(F.filter("reps", lambda p: F.arrays_overlap(p["replicas"], e["hb"])),
                                        lambda p: p["partition"]))
    bmasks = F.transform(hbs, lambda y: y["r"]["mask"])
    mask = F.aggregate(bmasks, F.lit(0).cast("long"), lambda acc, m: acc.bitwiseOR(m))
    hit = ~shielded & F.when(uniform, e["changed"]).otherwise(F.size(hbs) > 0)
    fields = {
        "key": e["key"], "src": e["src"],
        "before": F.when(uniform, e["vb"]).otherwise(worst["pb"]["vb"]),
        "after": F.when(uniform, e["va"]).otherwise(worst["pb"]["va"]),
        "part_ids": F.when(~uniform, part_ids), "brokers": F.when(~uniform, hit_brokers),
        "bmasks": F.when(~uniform, bmasks),  # each hit broker's rules, for the brokers a rule hits
        "mask": F.when(uniform, rated["mask"]).otherwise(mask),
        "level": F.when(uniform, rated["level"]).otherwise(x["level"]),
        "why": F.when(uniform, rated["why"]).otherwise(worst["r"]["why"]),
        "own": e["own"], "hit": hit,
    }
    return F.struct(*[v.alias(k) for k, v in fields.items()])


def parts_of(ids: Column) -> Column:
    """Partitions a change hits: all of the topic's (ids null) or the listed ones."""
    from pyspark.sql import functions as F

    return F.when(ids.isNull(), F.col("partitions")).otherwise(F.size(ids)).cast("long")


def bytes_of(ids: Column, sizes_known: bool) -> Column:
    """Bytes of the partitions a change hits (the whole topic when ids is null); null without sizes."""
    from pyspark.sql import functions as F

    if not sizes_known:
        return F.lit(None).cast("long")
    psizes = F.coalesce("psizes", F.array().cast("array<struct<partition:int,size:bigint>>"))
    listed = F.aggregate(F.filter(psizes, lambda z: F.array_contains(ids, z["partition"])),
                         F.lit(0).cast("long"), lambda acc, z: acc + z["size"])
    return F.when(ids.isNull(), F.coalesce("topic_bytes", F.lit(0))).otherwise(listed).cast("long")
