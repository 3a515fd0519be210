"""Effective broker-side values before and after: Kafka's precedence below the topic override.

For every registered broker and every effective key that any layer sets (before or after), the value is the
first found, layer-major then synonym-minor (ground truth §5: each overlay first removes the synonyms of the
keys it sets, so a dynamic `log.retention.ms` beats a static `log.retention.hours`):
  0 dynamic per-broker (/config/brokers/<id>)   1 dynamic cluster default (/config/brokers/<default>)
  2 static server.properties of the broker     3 static `<default>` file of the manifests    then Kafka's default
Read-only synonyms in a dynamic layer are ignored, as brokers do. Keys no layer sets on either side keep
Kafka's default on both: they cannot change, so they are not materialised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.impact import keys as K
from reconciler.impact.frames import local_df
from reconciler.model import DEFAULT_ENTITY, REPLICATION_THROTTLE_KEYS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ENTITY_COLS = ("cluster", "entity", "key", "value")


def same(a: Column, b: Column, key: Column, list_keys: Sequence[str]) -> Column:
    """Null-safe equality of two effective values; LIST values as sets."""
    from pyspark.sql import functions as F

    from reconciler.impact.riskexpr import norm

    is_list = key.isin(list(list_keys))
    return F.when(is_list, norm(a).eqNullSafe(norm(b)) & (a.isNull() == b.isNull())).otherwise(a.eqNullSafe(b))


def after_entities(before: DataFrame, desired: DataFrame, declared: DataFrame, policy: DataFrame,
                   prunable: bool) -> DataFrame:
    """What apply leaves: (cluster, entity, key, value) of one entity type, by the plan's ownership rules."""
    from pyspark.sql import functions as F

    decl = F.broadcast(declared.select("cluster", "entity").distinct().withColumn("_decl", F.lit(True)))
    dkeys = F.broadcast(desired.select("cluster", "entity", "key").withColumn("_dkey", F.lit(True)))
    b = (
        before.join(decl, ["cluster", "entity"], "left")
        .join(F.broadcast(policy), "cluster", "left")
        .join(dkeys, ["cluster", "entity", "key"], "left")
    )
    is_decl, has_key = F.coalesce(b["_decl"], F.lit(False)), F.coalesce(b["_dkey"], F.lit(False))
    pruned = F.coalesce(b["prune"], F.lit(False)) & F.lit(prunable)
    ignored = F.coalesce(F.array_contains(b["ignore_keys"], b["key"]), F.lit(False))
    throttle = b["key"].isin(sorted(REPLICATION_THROTTLE_KEYS)) & ~has_key
    keep = (~is_decl & ~pruned) | (is_decl & (ignored | throttle))
    return b.filter(keep).select(*ENTITY_COLS).unionByName(desired.select(*ENTITY_COLS))


def _layers(side: str, dynamic: DataFrame, static: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    dyn = dynamic.select(
        "cluster", F.col("entity").alias("scope"),
        F.when(F.col("entity") == DEFAULT_ENTITY, 1).otherwise(0).alias("layer"), "key", "value",
    )
    sta = static.select(
        "cluster", F.col("broker").alias("scope"),
        F.when(F.col("broker") == DEFAULT_ENTITY, 3).otherwise(2).alias("layer"), "key", "value",
    )
    return dyn.unionByName(sta).withColumn("side", F.lit(side))


def broker_effective(spark: SparkSession, brokers: DataFrame, before: tuple[DataFrame, DataFrame],
                     after: tuple[DataFrame, DataFrame]) -> DataFrame:
    """(cluster, broker, key, is_topic, broker_key, vb, va, changed) from (dynamic, static) of each side."""
    from pyspark.sql import functions as F

    syn = F.broadcast(local_df(spark, list(K.synonym_rows()), K.SYNONYM_SCHEMA))
    info = F.broadcast(local_df(spark, list(K.key_rows()), K.KEY_SCHEMA))
    rows = _layers("b", *before).unionByName(_layers("a", *after))
    rows = rows.join(syn, rows["key"] == syn["broker_key"], "left").select(
        "cluster", "scope", "layer", "side",
        F.coalesce("target", "key").alias("target"),
        F.coalesce("rank", F.lit(0)).alias("rank"),
        F.coalesce("dynamic", F.lit(True)).alias("dynamic"),
        F.when(F.coalesce("factor", F.lit(1)) > 1,
               F.coalesce((F.trim("value").try_cast("long") * F.col("factor")).cast("string"), "value"))
        .otherwise(F.col("value")).alias("value"),
    ).filter(F.col("dynamic") | (F.col("layer") >= 2))
    rows = rows.withColumn("prio", F.col("layer") * 100 + F.col("rank"))
    regs = brokers.select("cluster", "broker")
    cluster_wide = rows.filter(F.col("scope") == DEFAULT_ENTITY).join(regs, "cluster")
    per_broker = rows.filter(F.col("scope") != DEFAULT_ENTITY).withColumn(
        "broker", F.col("scope").try_cast("int")
    ).join(regs, ["cluster", "broker"])  # overrides of unregistered brokers affect no replica
    cols = ["cluster", "broker", "target", "side", "value", "prio"]
    chosen = (
        cluster_wide.select(*cols).unionByName(per_broker.select(*cols))
        .groupBy("cluster", "broker", "target")
        .agg(
            F.min_by(F.col("value"), F.when(F.col("side") == "b", F.col("prio"))).alias("vb0"),
            F.min_by(F.col("value"), F.when(F.col("side") == "a", F.col("prio"))).alias("va0"),
            F.max((F.col("side") == "b").cast("int")).alias("has_b"),
            F.max((F.col("side") == "a").cast("int")).alias("has_a"),
        )
    )
    grid = rows.select("cluster", "target").distinct().join(regs, "cluster")
    full = grid.join(chosen, ["cluster", "broker", "target"], "left").join(info, "target", "left")
    vb = F.when(F.col("has_b") == 1, F.col("vb0")).otherwise(F.col("default_value"))
    va = F.when(F.col("has_a") == 1, F.col("va0")).otherwise(F.col("default_value"))
    out = full.select(
        "cluster", "broker", F.col("target").alias("key"),
        F.coalesce("is_topic", F.lit(False)).alias("is_topic"),
        F.coalesce("broker_key", "target").alias("broker_key"),
        vb.alias("vb"), va.alias("va"),
    )
    return out.withColumn("changed", ~same(F.col("vb"), F.col("va"), F.col("key"), K.list_keys()))
