"""The floor of the impact job: a minimal Spark program that computes the same blast-radius counts.

What it computes (the figures `bench/impact.py` compares): clustersAffected, brokersAffected, topicsAffected,
partitionsAffected, bytesAffected (null without a sizes table) and per key the topics and partitions whose
effective value changes. No risk rules, no samples, no report: it is the floor under the project's counts.

How, in two Spark queries and nothing else (no checkpoint, no cache, no Python UDF, no Python RDD):
  1. One small collect: the registered brokers, the dynamic broker configs, the static files and the
     overrides of the topics the manifests declare (a few thousand rows at any fleet size).
     The driver resolves the broker side in Python: effective value of every (cluster, broker, key) before and
     after (layer-major, synonym-minor, read-only synonyms ignored in dynamic layers, apply's ownership rules
     for the after side), which (cluster, topic key) change and whether every broker agrees, the declared
     topics' override changes, and the brokers whose own value changes.
  2. One query from Parquet: topics, the overrides of the changed keys (as a map per topic), the replicas
     (only of clusters whose broker side differs across brokers, and of declared topics whose override
     changes) and the sizes are each shuffled once by (cluster, topic) and joined co-partitioned (shuffled
     hash joins); the driver's facts join as broadcast tables (candidate keys per cluster and per declared
     topic, with the broker-side values, per broker where brokers disagree); one aggregate per (cluster, topic)
     (no further shuffle) for the union of affected partitions; then every count of the answer from one small
     aggregate, collected in a few rows. 2 queries, ~10 jobs and ~10 stages per run at any size.
Semantics follow docs/impact.md ("What 'effective' means", "Counting"); the catalog facts come from
`reconciler.impact.keys` (synonyms, defaults, LIST keys), the after-state rows from
`reconciler.impact.afterstate`. Nothing of the project's job (job.py, layers.py, aggregate.py, frames.py)
is used. The session is the project's (`reconciler.impact.session.spark_session`) so both programs run with
the same Spark settings (memory, shuffle partitions, AQE, quiet logs): the comparison is of plans, not conf.

Run: .venv/bin/python bench/impact_floor.py FLEET  (FLEET from bench/fleetgen.py: FLEET/inventory, FLEET/manifests)
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.impact import keys as K
from reconciler.impact.afterstate import AfterRows
from reconciler.impact.inventory import SCHEMAS
from reconciler.model import DEFAULT_ENTITY, REPLICATION_THROTTLE_KEYS

Config = dict[tuple[str, str], dict[str, str]]  # (cluster, entity) -> key -> value


# ---- small tables as DataFrames, built in the JVM (JSON lines -> a local relation; no job, no Python worker) ---

def small_df(spark: Any, rows: Sequence[dict[str, Any]], ddl: str) -> Any:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    jvm = spark._jvm
    lines = jvm.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(json.dumps(r) for r in rows)).toList()
    ds = spark._jsparkSession.createDataset(lines, jvm.org.apache.spark.sql.Encoders.STRING())
    raw = DataFrame(ds.toDF(), spark).filter("value != ''")
    return raw.select(F.from_json("value", ddl).alias("r")).select("r.*")


# ---- query 1: the broker side, collected and resolved on the driver --------------------------------------------

@dataclass
class BrokerSide:
    brokers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    dyn: Config = field(default_factory=lambda: defaultdict(dict))
    static: Config = field(default_factory=lambda: defaultdict(dict))
    overrides: Config = field(default_factory=lambda: defaultdict(dict))  # declared topics only


def collect_broker_side(spark: Any, inventory: Path, after: AfterRows) -> BrokerSide:
    from pyspark.sql import functions as F

    clusters = list(after.clusters)
    declared = sorted({f"{c}/{e}" for c, t, e in after.declared if t == "topics"})

    def read(table: str) -> Any:
        return spark.read.schema(SCHEMAS[table]).parquet(str(inventory / table)).filter(F.col("cluster").isin(clusters))

    brokers = read("brokers").select(F.lit("b").alias("t"), "cluster", F.col("broker").cast("string").alias("entity"),
                                     F.lit(None).cast("string").alias("key"), F.lit(None).cast("string").alias("value"))
    configs = read("configs").filter(
        (F.col("entity_type") == "brokers")
        | ((F.col("entity_type") == "topics") & F.concat_ws("/", "cluster", "entity").isin(declared))
    ).select(F.when(F.col("entity_type") == "brokers", "d").otherwise("o").alias("t"), "cluster", "entity", "key",
             "value")
    parts = [brokers, configs]
    if (inventory / "static").exists():
        parts.append(read("static").select(F.lit("s").alias("t"), "cluster", F.col("broker").alias("entity"), "key",
                                           "value"))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    side = BrokerSide()
    for t, cluster, entity, key, value in union.collect():
        if t == "b":
            side.brokers[cluster].append(int(entity))
        else:
            {"d": side.dyn, "s": side.static, "o": side.overrides}[t][(cluster, entity)][key] = value
    return side


def applied(before: Config, after: AfterRows, entity_type: str, prunable: bool) -> Config:
    """What apply leaves (docs/impact.md): declared entities exactly as declared, but ignoreKeys and undeclared
    replication throttles stay; undeclared entities stay unless prune removes them (brokers only)."""
    policy = {c: (prune, set(ignore)) for c, prune, ignore in after.policies}
    declared = {(c, e) for c, t, e in after.declared if t == entity_type}
    desired: Config = defaultdict(dict)
    for c, t, e, k, v in after.configs:
        if t == entity_type:
            desired[(c, e)][k] = v
    out: Config = {}
    for ent, config in before.items():
        prune, ignore = policy[ent[0]]
        if ent in declared:
            out[ent] = {k: v for k, v in config.items()
                        if k in ignore or (k in REPLICATION_THROTTLE_KEYS and k not in desired[ent])}
        elif not (prune and prunable):
            out[ent] = dict(config)
    for ent in declared:
        out.setdefault(ent, {}).update(desired.get(ent, {}))
    return out


def effective(dyn: Config, static: Config, brokers: dict[str, list[int]]) -> dict[tuple[str, int, str], str]:
    """(cluster, broker, key) -> value, first found layer-major then synonym-minor (see docs/impact.md)."""
    syn = {r[0]: r for r in K.synonym_rows()}
    best: dict[tuple[str, int, str], tuple[int, str]] = {}
    for layers, base in ((dyn, 0), (static, 2)):
        for (cluster, scope), config in layers.items():
            registered = brokers.get(cluster, [])
            default = scope == DEFAULT_ENTITY
            targets = registered if default else [b for b in registered if str(b) == scope.strip()]
            layer = base + int(default)
            for key, value in config.items():
                _, target, rank, factor, dynamic, _ = syn.get(key, (key, key, 0, 1, True, False))
                if layer < 2 and not dynamic:
                    continue
                if factor > 1:
                    with contextlib.suppress(ValueError):
                        value = str(int(value.strip()) * factor)
                for b in targets:
                    slot, prio = (cluster, b, target), layer * 100 + rank
                    if slot not in best or prio < best[slot][0]:
                        best[slot] = (prio, value)
    return {slot: v for slot, (_, v) in best.items()}


def norm(key: str, v: str | None) -> str | None:
    if v is None or key not in K.list_keys():
        return v
    return ",".join(sorted(i.strip() for i in v.split(",") if i.strip()))


CAND = ("STRUCT<key STRING, src STRING, per_replica BOOLEAN, cvb STRING, cva STRING, "
        "bmap MAP<STRING, STRUCT<vb STRING, va STRING>>, ob STRING, oa STRING>")


@dataclass
class Facts:
    """What query 2 needs from the driver: candidate keys per cluster and per declared topic, and the hits."""

    by_cluster: dict[str, list[dict[str, Any]]]  # topic keys changed on the broker side: every topic x these
    by_topic: dict[tuple[str, str], list[dict[str, Any]]]  # declared topics: override-only changes
    declared: dict[tuple[str, str], dict[str, str]]  # declared topics -> their overrides after
    hits: list[tuple[str, int]]  # (cluster, broker) whose own effective value of some key changes
    replica_clusters: list[str]  # clusters whose replicas the query must read


def resolve(side: BrokerSide, after: AfterRows) -> Facts:
    """Broker side before/after on the driver, and the candidates of query 2 with their broker-side values."""
    info = {r[0]: r for r in K.key_rows()}
    topic_keys = {r[0] for r in K.key_rows() if r[1]}
    static_a: Config = defaultdict(dict)
    for c, b, k, v in after.static:
        static_a[(c, b)][k] = v
    eff_b = effective(side.dyn, side.static, side.brokers)
    eff_a = effective(applied(side.dyn, after, "brokers", True), static_a, side.brokers)
    per_ck: dict[tuple[str, str], dict[int, tuple[str | None, str | None]]] = {}
    hits: set[tuple[str, int]] = set()
    for cluster, key in {(s[0], s[2]) for s in (*eff_b, *eff_a)}:
        default = info[key][3] if key in info else None
        values = {b: (eff_b.get((cluster, b, key), default), eff_a.get((cluster, b, key), default))
                  for b in side.brokers[cluster]}
        per_ck[(cluster, key)] = values
        hits |= {(cluster, b) for b, (vb, va) in values.items() if norm(key, vb) != norm(key, va)}

    def cand(cluster: str, key: str, src: str, ob: str | None = None, oa: str | None = None) -> dict[str, Any]:
        """A candidate key with its broker-side values: one pair if every broker agrees, else per broker."""
        default = info[key][3] if key in info else None
        values = per_ck.get((cluster, key)) or {0: (default, default)}
        (vb, va), per_replica = next(iter(values.values())), len(set(values.values())) > 1
        bmap = {str(b): {"vb": x, "va": y} for b, (x, y) in values.items()} if per_replica else None
        return {"key": key, "src": src, "per_replica": per_replica, "cvb": vb, "cva": va, "bmap": bmap,
                "ob": ob, "oa": oa}

    changed = sorted(ck for ck, values in per_ck.items() if ck[1] in topic_keys
                     and any(norm(ck[1], vb) != norm(ck[1], va) for vb, va in values.values()))
    by_cluster: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c, k in changed:
        by_cluster[c].append(cand(c, k, "b"))
    declared_topics = sorted({(c, e) for c, t, e in after.declared if t == "topics"})
    ovr_a = applied({ent: side.overrides.get(ent, {}) for ent in declared_topics}, after, "topics", False)
    by_topic: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for ent in declared_topics:
        before, now = side.overrides.get(ent, {}), ovr_a.get(ent, {})
        for k in sorted(before.keys() | now.keys()):
            if (ent[0], k) not in set(changed) and norm(k, before.get(k)) != norm(k, now.get(k)):
                by_topic[ent].append(cand(ent[0], k, "o", before.get(k), now.get(k)))
    replica_clusters = {c for c, cands in by_cluster.items() if any(x["per_replica"] for x in cands)}
    return Facts(dict(by_cluster), dict(by_topic), {ent: ovr_a.get(ent, {}) for ent in declared_topics},
                 sorted(hits), sorted(replica_clusters | {c for c, _ in by_topic}))


# ---- query 2: everything else, from Parquet, one collect -----------------------------------------------------

def _differ(key: Any, a: Any, b: Any) -> Any:
    """Effective values differ (null-safe; LIST keys as sets)."""
    from pyspark.sql import functions as F

    def n(c: Any) -> Any:
        items = F.filter(F.split(c, ","), lambda x: F.trim(x) != "")
        return F.when(key.isin(list(K.list_keys())), F.array_join(F.array_sort(F.transform(items, F.trim)), ","))\
            .otherwise(c)

    return ~n(a).eqNullSafe(n(b))


def _by_topic(spark: Any, inventory: Path, f: Facts) -> Any:
    """One row per candidate topic with everything it needs: its overrides of the candidate keys, its
    replicas where needed, its sizes; the three big inputs are each shuffled once by (cluster, topic) and
    joined co-partitioned (shuffled hash joins), the small facts are broadcast."""
    from pyspark.sql import functions as F

    col = F.col
    clusters = sorted(set(f.by_cluster) | {c for c, _ in f.by_topic})
    ck_keys = sorted({x["key"] for cands in f.by_cluster.values() for x in cands})

    def read(table: str, only: list[str]) -> Any:
        return spark.read.schema(SCHEMAS[table]).parquet(str(inventory / table)).filter(col("cluster").isin(only))

    topics = read("topics", clusters).select("cluster", "topic", "partitions")
    smap = read("configs", sorted(f.by_cluster)).filter((col("entity_type") == "topics") & col("key").isin(ck_keys))\
        .groupBy("cluster", col("entity").alias("topic"))\
        .agg(F.map_from_entries(F.collect_list(F.struct("key", "value"))).alias("smap"))
    parts = read("partitions", f.replica_clusters).groupBy("cluster", "topic")\
        .agg(F.collect_list(F.struct("partition", "replicas")).alias("parts"))
    j = topics.join(smap.hint("shuffle_hash"), ["cluster", "topic"], "left")\
        .join(parts.hint("shuffle_hash"), ["cluster", "topic"], "left")
    if (inventory / "sizes").exists():
        sizes = read("sizes", clusters).groupBy("cluster", "topic")\
            .agg(F.collect_list(F.struct("partition", "size_bytes")).alias("sizes"))
        j = j.join(sizes.hint("shuffle_hash"), ["cluster", "topic"], "left")
    else:
        j = j.withColumn("sizes", F.lit(None).cast("array<struct<partition:int,size_bytes:bigint>>"))
    ckt = small_df(spark, [{"cluster": c, "cands": x} for c, x in f.by_cluster.items()],
                   f"cluster STRING, cands ARRAY<{CAND}>")
    dkt = small_df(spark, [{"cluster": c, "topic": t, "dcands": x} for (c, t), x in f.by_topic.items()],
                   f"cluster STRING, topic STRING, dcands ARRAY<{CAND}>")
    dat = small_df(spark, [{"cluster": c, "topic": t, "amap": m} for (c, t), m in f.declared.items()],
                   "cluster STRING, topic STRING, amap MAP<STRING, STRING>")
    return j.join(F.broadcast(ckt), "cluster", "left").join(F.broadcast(dkt), ["cluster", "topic"], "left")\
        .join(F.broadcast(dat), ["cluster", "topic"], "left")


def _affected(j: Any) -> Any:
    """(cluster, topic, key) rows whose effective value changes: all partitions (ids null) when every broker
    agrees, else the partitions with a replica where it changes; `hitb`: the brokers that counts as hit."""
    from pyspark.sql import functions as F

    col, none = F.col, F.array().cast("array<int>")
    c = j.select("*", F.explode(F.concat(F.coalesce("cands", F.array().cast(f"array<{CAND}>")),
                                         F.coalesce("dcands", F.array().cast(f"array<{CAND}>")))).alias("e"))
    key = col("e.key")
    ob = F.when(col("e.src") == "o", col("e.ob")).otherwise(col("smap")[key])
    oa = F.when(col("e.src") == "o", col("e.oa")).when(col("amap").isNotNull(), col("amap")[key]).otherwise(ob)
    c = c.select("cluster", "topic", "partitions", "parts", "sizes", "e", ob.alias("ob"), oa.alias("oa"))

    def hit(r: Any) -> Any:
        v = col("e.bmap")[r.cast("string")]
        return v.isNotNull() & _differ(key, F.coalesce(col("ob"), v["vb"]), F.coalesce(col("oa"), v["va"]))

    all_replicas = F.array_distinct(F.flatten(F.transform(F.coalesce("parts", F.array()), lambda p: p["replicas"])))
    ids = F.transform(F.filter("parts", lambda p: F.exists(p["replicas"], hit)), lambda p: p["partition"])
    uniform = _differ(key, F.coalesce("ob", "e.cvb"), F.coalesce("oa", "e.cva"))
    rows = c.select(
        "cluster", "topic", "partitions", "sizes", key.alias("key"),
        F.when(col("e.per_replica"), ids).alias("ids"),
        F.when(col("e.per_replica"), F.filter(all_replicas, hit))
        .when((col("e.src") == "o") & uniform, all_replicas).otherwise(none).alias("hitb"),
        F.when(col("e.per_replica"), F.lit(False)).otherwise(uniform).alias("whole"),
    )
    return rows.filter(col("whole") | (F.size(F.coalesce("ids", none)) > 0))


def counts_query(spark: Any, inventory: Path, f: Facts) -> Any:
    """Rows (name, a, b, c, d): per key (a topics, b partitions), #topics (a, b, d bytes), #clusters (c),
    #brokers (c): one aggregate per (cluster, topic), then one small aggregate of every count."""
    from pyspark.sql import functions as F

    col, none = F.col, F.array().cast("array<int>")
    rows = _affected(_by_topic(spark, inventory, f))
    per_topic = rows.groupBy("cluster", "topic").agg(
        F.first("partitions").alias("partitions"), F.first("sizes").alias("sizes"),
        F.max(col("ids").isNull()).alias("all"),
        F.array_distinct(F.flatten(F.collect_list(F.coalesce("ids", none)))).alias("ids"),
        F.collect_list(F.struct("key", F.when(col("ids").isNull(), col("partitions")).otherwise(F.size("ids"))
                                .alias("n"))).alias("keys"),
        F.array_distinct(F.flatten(F.collect_list("hitb"))).alias("hitb"),
    )
    n = F.when(col("all"), col("partitions")).otherwise(F.size("ids"))
    sizes = F.when(col("all"), col("sizes")).otherwise(
        F.filter("sizes", lambda z: F.array_contains(col("ids"), z["partition"])))
    nbytes = F.aggregate(F.coalesce(sizes, F.array().cast("array<struct<partition:int,size_bytes:bigint>>")),
                         F.lit(0).cast("bigint"), lambda acc, z: acc + z["size_bytes"])

    def entry(name: Any, unit: Any, parts: Any, b: Any) -> Any:
        return F.struct(name.alias("name"), unit.cast("string").alias("unit"), parts.cast("bigint").alias("n"),
                        b.cast("bigint").alias("bytes"))

    zero, null = F.lit(0), F.lit(None)
    entries = F.concat(
        F.transform("keys", lambda k: entry(k["key"], null, k["n"], zero)),
        F.array(entry(F.lit("#topics"), null, n, nbytes), entry(F.lit("#clusters"), col("cluster"), zero, zero)),
        F.transform("hitb", lambda b: entry(F.lit("#brokers"), F.concat_ws("/", col("cluster"), b), zero, zero)),
    )
    driver = [{"name": "#brokers", "unit": f"{c}/{b}"} for c, b in f.hits]
    driver += [{"name": "#clusters", "unit": c} for c in sorted({c for c, _ in f.hits})]
    e = per_topic.select(F.inline(entries)).unionByName(
        small_df(spark, driver, "name STRING, unit STRING").select("name", "unit", F.lit(0).cast("bigint").alias("n"),
                                                                   F.lit(0).cast("bigint").alias("bytes")))
    per_unit = e.groupBy("name", "unit").agg(F.count(F.lit(1)).alias("t"), F.sum("n").alias("p"),
                                             F.sum("bytes").alias("y"))
    return per_unit.groupBy("name").agg(F.sum("t").alias("a"), F.sum("p").alias("b"), F.count("unit").alias("c"),
                             F.sum("y").alias("d"))


def run(spark: Any, inventory: Path, after: AfterRows) -> dict[str, Any]:
    """The counts of `bench/impact.py`'s result dict: two queries, two collects."""
    facts = resolve(collect_broker_side(spark, inventory, after), after)
    got = {r["name"]: r for r in counts_query(spark, inventory, facts).collect()}
    zero = {"a": 0, "b": 0, "c": 0, "d": 0}
    topics = got.get("#topics", zero)
    return {
        "clustersAffected": got.get("#clusters", zero)["c"],
        "brokersAffected": got.get("#brokers", zero)["c"],
        "topicsAffected": topics["a"],
        "partitionsAffected": topics["b"] or 0,
        "bytesAffected": (topics["d"] or 0) if (inventory / "sizes").exists() else None,
        "byKey": {name: {"topics": r["a"], "partitions": r["b"]} for name, r in sorted(got.items())
                  if not name.startswith("#") and r["a"]},
    }


def main(argv: Iterable[str] | None = None) -> int:
    from reconciler.impact.afterstate import after_rows
    from reconciler.impact.session import spark_session
    from reconciler.workflow import load_desired

    fleet = Path(next(iter(argv or sys.argv[1:])))
    states, _ = load_desired(fleet / "manifests", [])
    after = after_rows(states)
    with spark_session("local[*]") as spark:
        print(json.dumps(run(spark, fleet / "inventory", after), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
