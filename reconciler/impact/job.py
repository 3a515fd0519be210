"""The impact job: effective topic and broker configs before (inventory) and after (manifests), and the
rows whose effective value changes. DataFrames, joins and built-in functions only; Python touches only the
small per-(cluster, key) facts it collects to build expressions (never a per-row Python function).

Effective value of topic config k of topic t on broker b (KIP-226 precedence):
    override(t, k)  if the topic overrides k,  else  broker_value(b, k)  (`layers.broker_effective`).
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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import (
    CONFIG_SCHEMA,
    DECLARED_SCHEMA,
    POLICY_SCHEMA,
    STATIC_SCHEMA,
    TOPIC_SCHEMA,
    AfterRows,
)
from reconciler.impact.frames import local_df
from reconciler.impact.inventory import Inventory
from reconciler.impact.layers import ENTITY_COLS, after_entities, broker_effective, same
from reconciler.impact.riskexpr import applicable, with_risk, with_rules

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CAND = ("cluster", "topic", "key", "partitions", "rf", "ob", "oa", "src")


@dataclass
class Changes:
    """The job's detail rows (materialised) and the inputs the aggregation needs."""

    # (cluster, topic, key, partitions, rf, src, before, after, part_ids, brokers, rules, risk, topic_bytes, bytes)
    # part_ids/brokers: null when every partition is affected (uniform broker side)
    topics: DataFrame
    brokers: DataFrame  # (cluster, broker, key, topic_key, before, after, rules, risk)
    broker_hits: DataFrame  # (cluster, broker, key): brokers where the effective value of key changes
    scope_topics: DataFrame  # topics of the selected clusters (cluster, topic, partitions, rf)
    brokers_all: DataFrame
    sizes: DataFrame | None  # sizes of the partitions some row affects in part (None: no sizes known)
    declared_topics: DataFrame
    clusters: list[str]


def pin(df: DataFrame) -> DataFrame:
    """Materialise and cut the lineage: later queries start from these rows, not from a plan that grows
    with every step (Catalyst analyses whole plans on every DataFrame call; long plans cost seconds each)."""
    return df.localCheckpoint(eager=True)


def _only(df: DataFrame, clusters: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    return df.filter(F.col("cluster").isin(clusters))


def _entities(df: DataFrame, entity_type: str) -> DataFrame:
    from pyspark.sql import functions as F

    return df.filter(F.col("entity_type") == entity_type).select(*ENTITY_COLS)


@dataclass
class _Scope:
    """The inventory and the manifests' after-state, restricted to the clusters the change touches."""

    clusters: list[str]
    brokers: DataFrame
    topics: DataFrame  # (cluster, topic, partitions, rf)
    configs: DataFrame
    partitions: DataFrame
    desired: DataFrame
    declared: DataFrame
    policy: DataFrame
    static_after: DataFrame


@dataclass
class _Facts:
    """What one small collect tells the driver: the (cluster, key) pairs changed at the broker side, the
    clusters where that change is uneven across brokers, and the risk rules that can apply."""

    changed_ck: list[tuple[Any, Any]]
    mixed_clusters: list[str]
    rules: Any


def compute_changes(spark: SparkSession, inv: Inventory, after: AfterRows, *, full: bool = False) -> Changes:
    """The detail rows of a change, in named steps: broker side, override changes, the facts that shape the
    rest, candidate (topic, key) pairs, then uniform and per-replica rows, broker rows and broker hits."""
    from pyspark.sql import functions as F

    scope = _scope(spark, inv, after)
    be, ck = _broker_side(spark, inv, scope)
    decl_t = scope.declared.filter(F.col("entity_type") == "topics").select("cluster", "entity")
    ovr_b, d_full, d = _override_changes(scope, decl_t)
    facts = _facts(ck, d, be, full)
    changed_pairs = local_df(spark, facts.changed_ck, "cluster STRING, key STRING")
    cand = _candidates(spark, scope, ck, (ovr_b, d_full, d), decl_t, changed_pairs, full)
    uni = _uniform_rows(cand, facts.rules)
    reps = _replicas(scope, d, facts.mixed_clusters)
    per_topic = _per_replica_rows(cand, reps, be, facts.rules)
    cols = ["cluster", "topic", "key", "partitions", "rf", "src", "before", "after", "part_ids", "brokers",
            "rules"]
    topic_rows = with_risk(uni.select(*cols).unionByName(per_topic.select(*cols)))
    broker_rows = _broker_rows(be, scope.topics, facts.rules)
    sizes = _only(inv.sizes, scope.clusters) if inv.sizes is not None else None
    topic_rows, part_sizes = _with_bytes(pin(topic_rows), sizes)
    if sizes is not None:
        topic_rows = pin(topic_rows)
    hits = pin(_broker_hits(be, topic_rows, changed_pairs, reps))
    topic_decl = local_df(spark, after.topics, TOPIC_SCHEMA)
    return Changes(topic_rows, broker_rows, hits, scope.topics, scope.brokers, part_sizes, topic_decl,
                   scope.clusters)


def _scope(spark: SparkSession, inv: Inventory, after: AfterRows) -> _Scope:
    from pyspark.sql import functions as F

    clusters = list(after.clusters)
    return _Scope(
        clusters=clusters,
        brokers=_only(inv.brokers, clusters),
        topics=_only(inv.topics, clusters).select(
            "cluster", "topic", "partitions", F.col("replication_factor").alias("rf")
        ),
        configs=_only(inv.configs, clusters),
        partitions=_only(inv.partitions, clusters),
        desired=local_df(spark, after.configs, CONFIG_SCHEMA),
        declared=local_df(spark, after.declared, DECLARED_SCHEMA),
        policy=local_df(spark, after.policies, POLICY_SCHEMA),
        static_after=local_df(spark, after.static, STATIC_SCHEMA),
    )


def _broker_side(spark: SparkSession, inv: Inventory, scope: _Scope) -> tuple[DataFrame, DataFrame]:
    """Broker-side effective values before and after (dynamic <default> and per-broker, static layers), and
    per (cluster, topic key): whether it changes anywhere and whether uniformly across the cluster's brokers."""
    from pyspark.sql import functions as F

    decl_b = scope.declared.filter(F.col("entity_type") == "brokers")
    dyn_b = _entities(scope.configs, "brokers")
    dyn_a = after_entities(dyn_b, _entities(scope.desired, "brokers"), decl_b, scope.policy, prunable=True)
    be = pin(broker_effective(spark, scope.brokers, (dyn_b, _only(inv.static, scope.clusters)),
                              (dyn_a, scope.static_after)))
    ck = (
        be.filter("is_topic").groupBy("cluster", "key").agg(
            F.max(F.col("changed").cast("int")).alias("any_changed"),
            F.size(F.collect_set(F.struct(F.coalesce("vb", F.lit("\0")), F.coalesce("va", F.lit("\0")))))
            .alias("states"),
            F.first("vb").alias("cvb"), F.first("va").alias("cva"),
        ).withColumn("uniform", F.col("states") == 1)
    )
    return be, ck


def _override_changes(scope: _Scope, decl_t: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Topic overrides: all live ones, those of declared topics before/after (the only ones that can change:
    undeclared topics keep their live config), and the changed ones."""
    from pyspark.sql import functions as F

    ovr_b = _entities(scope.configs, "topics")
    ovr_b_decl = ovr_b.join(F.broadcast(decl_t), ["cluster", "entity"], "left_semi")
    ovr_a_decl = after_entities(ovr_b_decl, _entities(scope.desired, "topics"), decl_t, scope.policy,
                                prunable=False)
    d_full = pin(
        ovr_b_decl.select("cluster", F.col("entity").alias("topic"), "key", F.col("value").alias("ob"))
        .join(ovr_a_decl.select("cluster", F.col("entity").alias("topic"), "key", F.col("value").alias("oa")),
              ["cluster", "topic", "key"], "full")
    )
    d = d_full.filter(~same(F.col("ob"), F.col("oa"), F.col("key"), K.list_keys()))
    return ovr_b, d_full, d


def _facts(ck: DataFrame, d: DataFrame, be: DataFrame, full: bool) -> _Facts:
    """The few facts that shape the plan, in one small collect: which (cluster, key) change on the broker
    side and whether uniformly, where overrides change, which keys change at all (for the risk rules)."""
    from pyspark.sql import functions as F

    def fact(kind: str, df: DataFrame, changed: Any, uniform: Any) -> DataFrame:
        return df.select(F.lit(kind).alias("kind"), F.col("cluster").cast("string"), "key",
                         F.lit(changed).cast("boolean").alias("changed"),
                         F.lit(uniform).cast("boolean").alias("uniform"))

    rows = (
        fact("ck", ck, F.col("any_changed") == 1, F.col("uniform"))
        .unionByName(fact("d", d.select("cluster", "key").distinct(), None, None))
        .unionByName(fact("be", be.filter("changed").select(F.lit(None).alias("cluster"), "key").distinct(),
                          None, None))
        .collect()
    )
    all_keys = {r[2] for r in rows if r[0] != "ck" or r[3]}
    if full:
        all_keys |= set(K.topic_keys())
    return _Facts(
        changed_ck=[(r[1], r[2]) for r in rows if r[0] == "ck" and r[3]],
        mixed_clusters=sorted({r[1] for r in rows if r[0] == "ck" and r[3] and not r[4]}),
        rules=applicable(all_keys),
    )


def _candidates(
    spark: SparkSession, scope: _Scope, ck: DataFrame, overrides: tuple[DataFrame, DataFrame, DataFrame],
    decl_t: DataFrame, changed_pairs: DataFrame, full: bool,
) -> DataFrame:
    """Every topic × every key changed at the broker side (src "broker"), plus changed overrides elsewhere
    (src "override"), with the overrides before/after and the broker-side facts of (cluster, key)."""
    from pyspark.sql import functions as F

    ovr_b, d_full, d = overrides
    if full:
        covered = local_df(spark, [(k,) for k in K.topic_keys()], "key STRING")
        c1 = scope.topics.crossJoin(F.broadcast(covered))
        c2 = d.join(F.broadcast(covered), "key", "left_anti")
    else:
        covered = changed_pairs
        c1 = scope.topics.join(F.broadcast(covered), "cluster")
        c2 = d.join(F.broadcast(covered), ["cluster", "key"], "left_anti")
    decl_flag = decl_t.select("cluster", F.col("entity").alias("topic"), F.lit(True).alias("_decl"))
    # only the overrides of the candidate keys can shield a topic: filter them before the big join
    shields = ovr_b.select("cluster", F.col("entity").alias("topic"), "key", F.col("value").alias("ob"))
    if not full:
        shields = shields.join(F.broadcast(covered), ["cluster", "key"], "left_semi")
    c1 = (
        c1.join(shields, ["cluster", "topic", "key"], "left")
        .join(F.broadcast(d_full.select("cluster", "topic", "key", F.col("oa").alias("oa_d"))),
              ["cluster", "topic", "key"], "left")
        .join(F.broadcast(decl_flag), ["cluster", "topic"], "left")
        .withColumn("oa", F.when(F.col("_decl").isNotNull(), F.col("oa_d")).otherwise(F.col("ob")))
        .withColumn("src", F.lit("broker"))
    )
    c2 = c2.join(scope.topics, ["cluster", "topic"]).withColumn("src", F.lit("override"))
    info = local_df(spark, list(K.key_rows()), K.KEY_SCHEMA).select(
        F.col("target").alias("key"), "default_value"
    )
    return (
        c1.select(*CAND).unionByName(c2.select(*CAND))
        .join(F.broadcast(ck.select("cluster", "key", "uniform", "cvb", "cva")), ["cluster", "key"], "left")
        .join(F.broadcast(info), "key", "left")
        .withColumn("uniform", F.coalesce("uniform", F.lit(True)))
    )


def _uniform_rows(cand: DataFrame, rules: Any) -> DataFrame:
    """Uniform broker side: one value per topic, every partition affected."""
    from pyspark.sql import functions as F

    eb = F.coalesce("ob", "cvb", "default_value")
    ea = F.coalesce("oa", "cva", "default_value")
    uni = (
        cand.filter("uniform").select("*", eb.alias("before"), ea.alias("after"))
        .filter(~same(F.col("before"), F.col("after"), F.col("key"), K.list_keys()))
        .withColumn("part_ids", F.lit(None).cast("array<int>"))
        .withColumn("brokers", F.lit(None).cast("array<int>"))
    )
    return with_rules(uni, "key", "before", "after", "rf", rules)


def _replicas(scope: _Scope, d: DataFrame, mixed_clusters: list[str]) -> DataFrame:
    """Replicas, read once: every topic of a cluster whose broker side changes unevenly, and the topics whose
    override changes (to count the brokers hosting them)."""
    from pyspark.sql import functions as F

    d_topics = F.broadcast(d.select("cluster", "topic").distinct().withColumn("_d", F.lit(True)))
    return pin(
        scope.partitions.join(d_topics, ["cluster", "topic"], "left")
        .filter(F.col("_d").isNotNull() | F.col("cluster").isin(mixed_clusters))
        .select("cluster", "topic", "partition", F.explode("replicas").alias("broker"))
    )


def _per_replica_rows(cand: DataFrame, reps: DataFrame, be: DataFrame, rules: Any) -> DataFrame:
    """Mixed broker side: a partition is affected if the value changes on any broker hosting a replica; the
    row shows the values on the lowest such broker."""
    from pyspark.sql import functions as F

    per_rep = (
        cand.filter(~F.col("uniform")).join(reps, ["cluster", "topic"])
        .join(be.filter("is_topic").select("cluster", "broker", "key", "vb", "va"), ["cluster", "broker", "key"])
        .select("*", F.coalesce("ob", "vb").alias("before"), F.coalesce("oa", "va").alias("after"))
        .filter(~same(F.col("before"), F.col("after"), F.col("key"), K.list_keys()))
    )
    per_rep = with_rules(per_rep, "key", "before", "after", "rf", rules)
    return per_rep.groupBy("cluster", "topic", "key").agg(
        F.first("partitions").alias("partitions"), F.first("rf").alias("rf"), F.first("src").alias("src"),
        F.min_by(F.struct("before", "after"), F.col("broker")).alias("shown"),
        F.array_sort(F.collect_set("partition")).alias("part_ids"),
        F.array_sort(F.collect_set("broker")).alias("brokers"),
        F.array_distinct(F.flatten(F.collect_list("rules"))).alias("rules"),
    ).select("*", F.col("shown.before").alias("before"), F.col("shown.after").alias("after")).drop("shown")


def _broker_rows(be: DataFrame, topics: DataFrame, rules: Any) -> DataFrame:
    """Brokers: their own effective values, rated with the lowest replication factor of the cluster."""
    from pyspark.sql import functions as F

    min_rf = topics.groupBy("cluster").agg(F.min("rf").alias("min_rf"))
    rows = with_rules(be.filter("changed").join(F.broadcast(min_rf), "cluster", "left"),
                      "key", "vb", "va", "min_rf", rules)
    return rows.select(
        "cluster", "broker", F.col("broker_key").alias("key"),
        F.when(F.col("is_topic"), F.col("key")).alias("topic_key"),
        F.col("vb").alias("before"), F.col("va").alias("after"), "rules", "risk",
    )


def _broker_hits(be: DataFrame, topic_rows: DataFrame, changed_pairs: DataFrame, reps: DataFrame) -> DataFrame:
    """(cluster, broker, key) where the effective value of key changes on that broker."""
    from pyspark.sql import functions as F

    return (
        be.filter("changed").select("cluster", "broker", "key")
        .unionByName(topic_rows.select("cluster", "key", F.explode("brokers").alias("broker")))
        .unionByName(
            # uniform rows whose broker side is unchanged (override changes): count their replicas' hosts;
            # where the broker side changed uniformly, every broker of the cluster is already a hit
            topic_rows.filter(F.col("brokers").isNull())
            .join(F.broadcast(changed_pairs), ["cluster", "key"], "left_anti")
            .select("cluster", "topic", "key").join(reps, ["cluster", "topic"])
            .select("cluster", "broker", "key")
        )
        .distinct()
    )


def _with_bytes(rows: DataFrame, sizes: DataFrame | None) -> tuple[DataFrame, DataFrame | None]:
    """Add `topic_bytes` (the whole topic) and `bytes` (the row's affected partitions); also return the sizes
    of the partitions that rows affect only in part (the aggregation's unions need nothing else)."""
    from pyspark.sql import functions as F

    if sizes is None:
        none = F.lit(None).cast("long")
        return rows.withColumn("topic_bytes", none).withColumn("bytes", none), None
    # sizes is the big table (one row per partition): read it once, through a broadcast hash table of the
    # affected topics, never shuffled; keep the partitions that rows affect only in part
    affected = F.broadcast(rows.groupBy("cluster", "topic").agg(F.max(F.col("part_ids").isNotNull()).alias("_some")))
    sized = pin(sizes.join(affected, ["cluster", "topic"]))
    whole = sized.groupBy("cluster", "topic").agg(F.sum("size_bytes").alias("topic_bytes"))
    partial = rows.filter(F.col("part_ids").isNotNull()).select(
        "cluster", "topic", "key", F.explode("part_ids").alias("partition"))
    part_sizes = pin(sized.filter("_some").join(F.broadcast(partial.select("cluster", "topic", "partition")
                                                            .distinct()), ["cluster", "topic", "partition"],
                                                "left_semi").drop("_some"))
    per_row = partial.join(part_sizes, ["cluster", "topic", "partition"]).groupBy("cluster", "topic", "key").agg(
        F.sum("size_bytes").alias("part_bytes"))
    rows = rows.join(whole, ["cluster", "topic"], "left").join(per_row, ["cluster", "topic", "key"], "left")
    bytes_ = F.when(F.col("part_ids").isNull(), F.coalesce("topic_bytes", F.lit(0))).otherwise(
        F.coalesce("part_bytes", F.lit(0)))
    return rows.withColumn("bytes", bytes_.cast("long")).drop("part_bytes"), part_sizes
