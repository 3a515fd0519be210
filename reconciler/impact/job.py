"""The impact job: effective topic and broker configs before (inventory) and after (manifests), and the rows
whose effective value changes. Two queries: one small collect (`facts`) from which the driver resolves the broker
side (`brokerside`), the declared topics' overrides and the risk of every value pair (`ratings`); then one query
over topics and partitions, with every small table broadcast, that `aggregate` reduces in a single collect.

Effective value of topic config k of topic t on broker b (KIP-226 precedence):
    override(t, k)  if the topic overrides k,  else  broker_value(b, k).
It changes where an input changes: the topic's own override (only topics the manifests declare can change
theirs: undeclared ones keep the live config), or the broker-side value of k somewhere in the cluster.
So the job evaluates exactly those (topic, key) pairs; every other pair has equal inputs, hence an equal
effective value (`full=True` evaluates all topics × all topic keys, and tests check both agree).
Per-broker values: when every broker of a cluster has the same broker-side value of k before and the same
after ("uniform"), a topic's value is the same on every replica and a change hits all its partitions.
Otherwise the job goes down to replicas: a partition is affected if the value changes on any broker
hosting one of its replicas; the row shows the values on the lowest such broker.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows
from reconciler.impact.brokerside import BrokerSide, broker_side
from reconciler.impact.facts import Facts, collect_facts, only
from reconciler.impact.frames import is_in, local_df, pair_in
from reconciler.impact.inventory import Inventory
from reconciler.impact.overrides import DeclaredOverrides, declared_overrides
from reconciler.impact.ratings import NO_RF, NULL, RATED_SCHEMA, rated_rows, rf_keys
from reconciler.impact.riskexpr import risk_name, rules_of_mask, severity

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger(__name__)
_CACHED: list[DataFrame] = []  # the detail rows this module cached last (released by the next run)
CAND = ("cluster", "topic", "key", "partitions", "rf", "ob", "oa", "src")
TOPIC_COLS = ("cluster", "topic", "key", "partitions", "rf", "src", "before", "after", "part_ids", "brokers",
              "rules", "mask", "risk")  # mask: the rules as a bit set (riskexpr.mask_of), for the aggregates
# a changed value before folding: per topic (partition and broker null) or per replica
ROW_COLS = ("cluster", "topic", "key", "partitions", "rf", "src", "before", "after", "partition", "broker")
BROKER_SCHEMA = ("cluster STRING, broker INT, key STRING, topic_key STRING, before STRING, after STRING, "
                 "rules ARRAY<STRING>, risk STRING")


@dataclass
class Changes:
    """The job's topic rows (a DataFrame: one row per changed (topic, key), cached for the aggregation) and
    what the driver resolved (broker side, facts), for `aggregate` and the Parquet detail tables."""

    # (cluster, topic, key, partitions, rf, src, before, after, part_ids, brokers, rules, risk, topic_bytes, bytes)
    # part_ids/brokers: null when every partition is affected (uniform broker side)
    topics: DataFrame
    override_hosts: DataFrame  # (cluster, key, broker): hosts of declared topics whose own override changes
    sizes_known: bool  # the inventory has partition sizes (else every bytes figure is null)
    broker_side: BrokerSide
    facts: Facts
    clusters: list[str]
    spark: SparkSession

    @property
    def brokers(self) -> DataFrame:
        """(cluster, broker, key, topic_key, before, after, rules, risk): the changed broker values."""
        return local_df(self.spark, self.broker_side.rows, BROKER_SCHEMA)


def compute_changes(spark: SparkSession, inv: Inventory, after: AfterRows, *, full: bool = False) -> Changes:
    """Small facts to the driver, the broker side and ratings there, then the topic rows as one plan."""
    # a previous run's rows (a long-lived session): never reuse them, free the memory; dependents first, since
    # uncaching a table that a cached plan reads makes Spark re-plan that plan (~0.7 s at 1M topics)
    for stale in reversed(_CACHED):
        stale.unpersist()
    _CACHED.clear()
    started = time.monotonic()
    facts = collect_facts(spark, inv, after)
    log.info("impact: small facts collected in %.1fs (%d brokers)", time.monotonic() - started, len(facts.brokers))
    started = time.monotonic()
    bs = broker_side(facts.brokers, facts.dynamic, facts.static, after, facts.min_rf)
    decl = declared_overrides(facts.declared_live, after)
    rated = rated_rows(bs, facts.declared_live, after, facts.rfs)
    log.info("impact: broker side, declared overrides and %s rated value pairs on the driver in %.2fs",
             "too many" if rated is None else len(rated), time.monotonic() - started)
    clusters = list(after.clusters)
    topics = only(inv.topics, clusters).selectExpr("cluster", "topic", "partitions", "replication_factor AS rf")
    cand = _candidates(spark, inv, clusters, topics, bs, decl, full)
    reps = _replicas(spark, inv.partitions, bs, decl)
    rows = _uniform_rows(cand)
    if bs.mixed_values():
        rows = rows.unionByName(_per_replica_rows(spark, cand, reps, bs))
    rows = _rate(spark, rows, rated).select(*TOPIC_COLS)
    sizes = only(inv.sizes, clusters) if inv.sizes is not None else None
    # with sizes the rows are read three times (their topics, partial partitions, the join): cache them
    if sizes is not None:
        rows = rows.cache()
        _CACHED.append(rows)
    rows = _with_bytes(rows, sizes)
    # cached, partitioned by topic: the summary's unions within a topic need no further shuffle (its sections
    # prune different columns, so without the cache Spark would not reuse one exchange but compute them again)
    rows = rows.repartition("cluster", "topic").cache()
    _CACHED.append(rows)
    hosts = _override_hosts(spark, reps, bs, decl)
    return Changes(rows, hosts, sizes is not None, bs, facts, clusters, spark)


COVERED_SCHEMA = ("cluster STRING, key STRING, changed BOOLEAN, uniform BOOLEAN, cvb STRING, cva STRING, "
                  "default_value STRING")


def _key_facts(bs: BrokerSide, cluster: str, key: str) -> tuple[bool, bool, str | None, str | None, str | None]:
    """(changed at the broker side, uniform, value before, value after, Kafka's default) of (cluster, key)."""
    uniform, changed, vb, va = bs.topic_keys.get((cluster, key), (True, False, None, None))
    return changed, uniform, vb, va, _defaults().get(key)


@functools.cache
def _defaults() -> dict[str, str | None]:
    return {r[0]: r[3] for r in K.key_rows() if r[1]}


def _candidates(spark: SparkSession, inv: Inventory, clusters: list[str], topics: DataFrame, bs: BrokerSide,
                decl: DeclaredOverrides, full: bool) -> DataFrame:
    """Every topic × every key changed at the broker side, with its live override (a shield) and, for a declared
    topic, its override after; plus the declared topics' changed overrides of other keys; each with the
    broker-side facts of its (cluster, key) and the key's default. Small tables go as few broadcasts as possible
    (each one is a Spark job): the covered (cluster, key) pairs, the declared topics, the other changes."""
    from pyspark.sql import functions as F

    pairs = [(c, k) for c in clusters for k in K.topic_keys()] if full else [
        (c, k) for c, k, *_ in bs.changed_pairs()]
    covered = local_df(spark, [(c, k, *_key_facts(bs, c, k)) for c, k in pairs], COVERED_SCHEMA)
    ovr = only(inv.configs, clusters).filter(F.col("entity_type") == "topics").select(
        "cluster", F.col("entity").alias("topic"), "key", F.col("value").alias("ob"))
    shields = ovr.filter(pair_in(spark, "cluster", "key", pairs))  # a predicate: no broadcast job
    keys_of = {c: {k for cc, k in pairs if cc == c} for c in clusters} if not full else None
    after_maps: dict[tuple[str, str], dict[str, str]] = {t: {} for t in decl.topics}
    for c, t, k, v in decl.after_values:
        if keys_of is None or k in keys_of.get(c, ()):
            after_maps.setdefault((c, t), {})[k] = v
    declared = local_df(spark, [(c, t, m) for (c, t), m in sorted(after_maps.items())],
                        "cluster STRING, topic STRING, oa_map MAP<STRING, STRING>")
    c1 = (
        topics.join(F.broadcast(covered), "cluster")
        .join(shields, ["cluster", "topic", "key"], "left")
        .join(F.broadcast(declared), ["cluster", "topic"], "left")
        .withColumn("oa", F.when(F.col("oa_map").isNotNull(), F.col("oa_map")[F.col("key")]).otherwise(F.col("ob")))
        .withColumn("src", F.when(F.col("changed"), F.lit("broker")).otherwise(F.lit("override")))
        .select(*CAND, *_FACT_COLS)
    )
    covered_set = set(pairs)
    others = [(c, t, k, ob, oa, *_key_facts(bs, c, k)[1:]) for c, t, k, ob, oa in decl.changed
              if (c, k) not in covered_set]
    if not others:
        return c1
    c2 = local_df(spark, others, "cluster STRING, topic STRING, key STRING, ob STRING, oa STRING, uniform BOOLEAN, "
                                 "cvb STRING, cva STRING, default_value STRING")
    c2 = c2.join(topics, ["cluster", "topic"]).withColumn("src", F.lit("override")).select(*CAND, *_FACT_COLS)
    return c1.unionByName(c2)


_FACT_COLS = ("uniform", "cvb", "cva", "default_value")


def _uniform_rows(cand: DataFrame) -> DataFrame:
    """Uniform broker side: one value per topic, every partition affected."""
    from pyspark.sql import functions as F

    before = F.coalesce("ob", "cvb", "default_value")
    after = F.coalesce("oa", "cva", "default_value")
    return (
        cand.filter("uniform").select("*", before.alias("before"), after.alias("after"))
        .filter(~_same(F.col("before"), F.col("after")))
        .select(*ROW_COLS[:-2], F.lit(None).cast("int").alias("partition"), F.lit(None).cast("int").alias("broker"))
    )


def _same(a: Column, b: Column) -> Column:
    """Null-safe equality of two effective values; LIST values as sets (as `brokerside.same` on the driver)."""
    from pyspark.sql import functions as F

    from reconciler.impact.riskexpr import norm

    is_list = F.col("key").isin(list(K.list_keys()))
    return F.when(is_list, norm(a).eqNullSafe(norm(b)) & (a.isNull() == b.isNull())).otherwise(a.eqNullSafe(b))


def _replicas(spark: SparkSession, partitions: DataFrame, bs: BrokerSide, decl: DeclaredOverrides) -> DataFrame:
    """(cluster, topic, partition, broker) of every topic of a cluster whose broker side differs between brokers,
    and of the declared topics whose override changes (to count the brokers hosting them). The partitions table is
    the inventory's largest: it is scanned once (only the row groups of those clusters, column-pruned) and the
    replicas are cached, since both the per-replica rows and the hosts read them."""
    from pyspark.sql import functions as F

    mixed = sorted({r[0] for r in bs.mixed_values()})
    listed = sorted({(c, t) for c, t, *_ in decl.changed if c not in mixed})
    wanted = only(partitions, sorted(set(mixed) | {c for c, _ in listed}))
    if listed:
        wanted = wanted.filter(is_in(spark, "cluster", mixed) | pair_in(spark, "cluster", "topic", listed))
    reps = wanted.select("cluster", "topic", "partition", F.explode("replicas").alias("broker")).cache()
    _CACHED.append(reps)
    return reps


def _per_replica_rows(spark: SparkSession, cand: DataFrame, reps: DataFrame, bs: BrokerSide) -> DataFrame:
    """Mixed broker side: one row per (topic, key, replica) whose value changes on that replica's broker."""
    from pyspark.sql import functions as F

    values = local_df(spark, bs.mixed_values(), "cluster STRING, broker INT, key STRING, vb STRING, va STRING")
    return (
        cand.filter(~F.col("uniform")).join(reps, ["cluster", "topic"])
        .join(F.broadcast(values), ["cluster", "broker", "key"])
        .select("*", F.coalesce("ob", "vb").alias("before"), F.coalesce("oa", "va").alias("after"))
        .filter(~_same(F.col("before"), F.col("after")))
        .select(*ROW_COLS)
    )


def _rate(spark: SparkSession, rows: DataFrame, rated: list[tuple[Any, ...]] | None) -> DataFrame:
    """Rules and risk from the driver's ratings (a broadcast join), or per row when the pairs were too many;
    then per-replica rows folded to one row per (topic, key): the lowest broker's values, all partitions."""
    from pyspark.sql import functions as F

    if rated is None:
        from reconciler.impact.riskexpr import applicable, rule_mask, with_rules

        keys = [r[0] for r in rows.select("key").distinct().collect()]
        rows = with_rules(rows, "key", "before", "after", "rf", applicable(keys))
        rows = rows.withColumn("mask", rule_mask(F.col("rules")))
    else:
        table = local_df(spark, rated, RATED_SCHEMA)
        rk = F.when(F.col("key").isin(rf_keys()), F.coalesce(F.col("rf"), F.lit(NO_RF))).otherwise(F.lit(NO_RF))
        rows = rows.select("*", F.coalesce("before", F.lit(NULL)).alias("_bk"),
                           F.coalesce("after", F.lit(NULL)).alias("_ak"), rk.alias("_rk"))
        rows = rows.join(F.broadcast(table), ["key", "_bk", "_ak", "_rk"], "left").drop("_bk", "_ak", "_rk")
    rows = rows.withColumn("risk_level", severity(F.col("risk")))
    whole = rows.filter(F.col("broker").isNull()).select(
        *ROW_COLS[:-2], F.lit(None).cast("array<int>").alias("part_ids"),
        F.lit(None).cast("array<int>").alias("brokers"), "rules", "mask", "risk_level")
    per_topic = rows.filter(F.col("broker").isNotNull()).groupBy("cluster", "topic", "key").agg(
        F.first("partitions").alias("partitions"), F.first("rf").alias("rf"), F.first("src").alias("src"),
        F.min_by(F.struct("before", "after"), F.col("broker")).alias("shown"),
        F.array_sort(F.collect_set("partition")).alias("part_ids"),
        F.array_sort(F.collect_set("broker")).alias("brokers"),
        F.bit_or("mask").alias("mask"),  # the union of the rules, without an array per replica
        F.max("risk_level").alias("risk_level"),
    ).select("*", F.col("shown.before").alias("before"), F.col("shown.after").alias("after"),
             rules_of_mask(F.col("mask")).alias("rules")).drop("shown")
    return whole.unionByName(per_topic).withColumn("risk", risk_name(F.col("risk_level"))).drop("risk_level")


def _override_hosts(spark: SparkSession, reps: DataFrame, bs: BrokerSide, decl: DeclaredOverrides) -> DataFrame:
    """(cluster, key, broker): the brokers hosting a declared topic whose own override changes its effective value
    where the broker side of that key is uniform and unchanged. The driver knows these (cluster, topic, key) from
    the manifests and the first query (as `_uniform_rows` finds them in Spark); their hosts are their replicas.
    The other hosts come with the topic rows: per-replica rows carry their brokers, and where the broker side
    changes uniformly every broker of the cluster is a hit already, through the broker rows."""
    from pyspark.sql import functions as F

    from reconciler.impact.brokerside import same

    lists = set(K.list_keys())
    hits = []
    for c, t, k, ob, oa in decl.changed:
        changed, uniform, vb, va, default = _key_facts(bs, c, k)
        before = next((v for v in (ob, vb, default) if v is not None), None)  # coalesce, as in Spark
        after = next((v for v in (oa, va, default) if v is not None), None)
        if uniform and not changed and not same(before, after, k in lists):
            hits.append((c, t, k))
    table = local_df(spark, hits, "cluster STRING, topic STRING, key STRING")
    return F.broadcast(table).join(reps, ["cluster", "topic"]).select("cluster", "key", "broker").distinct()


def _with_bytes(rows: DataFrame, sizes: DataFrame | None) -> DataFrame:
    """Add `topic_bytes` (the whole topic), `bytes` (the row's affected partitions) and, for rows that affect only
    some partitions, `psizes` (partition -> bytes: the summary's unions across keys need them)."""
    from pyspark.sql import functions as F

    if sizes is None:
        none = F.lit(None).cast("long")
        return (rows.withColumn("topic_bytes", none).withColumn("bytes", none)
                .withColumn("psizes", F.lit(None).cast("map<int,bigint>")))
    # sizes is the big table (one row per partition): read once, semi-joined to the affected topics
    affected = rows.groupBy("cluster", "topic").agg(F.max(F.col("part_ids").isNotNull()).alias("_some"))
    sized = sizes.join(affected, ["cluster", "topic"])
    whole = sized.groupBy("cluster", "topic").agg(F.sum("size_bytes").alias("topic_bytes"))
    partial = rows.filter(F.col("part_ids").isNotNull()).select(
        "cluster", "topic", "key", F.explode("part_ids").alias("partition"))
    per_row = partial.join(sized.filter("_some").drop("_some"), ["cluster", "topic", "partition"]).groupBy(
        "cluster", "topic", "key").agg(F.sum("size_bytes").alias("part_bytes"),
                                       F.map_from_entries(F.collect_list(F.struct("partition", "size_bytes")))
                                       .alias("psizes"))
    rows = rows.join(whole, ["cluster", "topic"], "left").join(per_row, ["cluster", "topic", "key"], "left")
    bytes_ = F.when(F.col("part_ids").isNull(), F.coalesce("topic_bytes", F.lit(0))).otherwise(
        F.coalesce("part_bytes", F.lit(0)))
    return rows.withColumn("bytes", bytes_.cast("long")).drop("part_bytes")
