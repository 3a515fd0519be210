"""Consumers-at-risk benchmark: the project's join (reconciler/impact/consumers.py) against a minimal Spark program
of the same answer, on a bench/fleetgen.py fleet with generated offset tables, in one process and one session.

Run: .venv/bin/python bench/consumers.py [--partitions 1000000] [--group-partitions 100000] [--repeat 3]
                                         [--work .local/bench-consumers]

The fleet: bench/fleetgen.py with 1,000 topics per cluster and as many clusters as give about --partitions
partitions (its change: production log.retention.ms 7d -> 3d, plus two declared topics on every tenth cluster).
Generated with Spark (deterministic hashes), not measured:
  log_offsets    every partition: log start h % 1000, 10,000..100,000 records spread evenly over the last 10 days
                 (1,000 bytes each), `at` for the ladder of ages (reconciler.unread.LADDER_MS, 3d and 7d among
                 them): the first offset at least that new
  group_offsets  about --group-partitions (cluster, group, topic, partition): a hashed sample of the partitions,
                 each read by group g-(h % 200) of its cluster, committed anywhere in the log
  groups         every (cluster, group) with offsets: Stable with 1..3 members, or Empty
Measured, after the config job (`compute_changes` + `aggregate.summary`) has run once and cached its topic rows:
  project        `consumers.section`: the join, the rollups and the 200 groups most at risk, one Spark job
  minimal        the same answer's rows (cluster, topic, group, records at risk) and totals, by the shortest
                 plan that computes them here: the lowered topics' retentions (a small table the project's topic
                 rows give, built once and not timed) joined with the committed offsets and the log offsets, the
                 boundaries looked up in the `at` arrays (exact ages only: every retention of this fleet was
                 read), one aggregate. A floor, not a competitor: no brackets, no sizes, no lag, no states.
Both on the same session, alternating, --repeat times each (median; the first of each is the cold run of its
code in the JVM, the others what a warm engine pays; the project's at-risk rows are un-cached after each run, so
every run computes the join); each must give the identical rows (the project's collected in the run) (cluster,
topic, group, fewest and most records), or the benchmark exits non-zero. Spark jobs and stages per run from the
status tracker. Figures go to stdout as JSON and to WORK/consumers-results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

PER_CLUSTER = 1000
TEN_DAYS = 10 * 86_400_000
READ_AT = 1_800_000_000_000


def fleet(work: Path, partitions: int) -> tuple[Path, int]:
    """A bench/fleetgen.py fleet of about `partitions` partitions (6.24 a topic on average), cached."""
    clusters = max(1, round(partitions / 6.24 / PER_CLUSTER))
    out = work / f"fleet-{clusters}x{PER_CLUSTER}"
    if not (out / "fleetgen.json").exists():
        subprocess.run([sys.executable, str(REPO / "bench" / "fleetgen.py"), "--clusters", str(clusters),
                        "--topics", str(PER_CLUSTER), "--out", str(out)], check=True)
    return out, clusters


def generate_offsets(spark: Any, inventory: Path, group_partitions: int, seed: int = 11) -> dict[str, int]:
    """The three offset tables of the fleet (not measured); returns their row counts."""
    from pyspark.sql import functions as F

    from reconciler.impact.inventory import write_meta
    from reconciler.unread import LADDER_MS

    def h(*cols: Any) -> Any:
        return F.pmod(F.xxhash64(F.lit(seed), *cols), F.lit(1 << 30))

    parts = spark.read.parquet(str(inventory / "partitions")).select("cluster", "topic", "partition")
    total = parts.count()
    records = F.lit(10_000) + h("cluster", "topic", "partition") % 90_000
    start = h("topic", "partition", "cluster") % 1000
    logs = parts.select("cluster", "topic", "partition", start.alias("log_start"), records.alias("n"))
    ages = F.array(*[F.lit(a) for a in sorted(LADDER_MS)])
    at = F.transform(ages, lambda a: F.struct(a.alias("age_ms"), F.greatest(
        F.col("log_start"), F.col("log_start") + F.col("n") - (F.col("n") * a / TEN_DAYS).cast("long"))
        .alias("offset")))
    logs = logs.select("cluster", "topic", "partition", "log_start",
                       (F.col("log_start") + F.col("n")).alias("log_end"), (F.col("n") * 1000).alias("size_bytes"),
                       F.lit(READ_AT).alias("read_at"), at.alias("at"))
    save(logs, "log_offsets", inventory, 8)
    rate = max(1, round(total / max(1, group_partitions)))
    sampled = parts.filter(h("partition", "cluster", "topic", F.lit(1)) % rate == 0)
    committed = sampled.select(
        "cluster", F.format_string("g-%03d", h("cluster", "topic", F.lit(2)) % 200).alias("group"), "topic",
        "partition", (F.lit(0) + h("partition", "topic", F.lit(3)) % 100_000).alias("committed"))
    save(committed, "group_offsets", inventory, 4)
    groups = spark.read.parquet(str(inventory / "group_offsets")).select("cluster", "group").distinct()
    stable = h("cluster", "group", F.lit(4)) % 3 != 0
    members = (h("group", "cluster", F.lit(5)) % 3 + 1).cast("int")
    save(groups.select("cluster", "group", F.when(stable, "Stable").otherwise("Empty").alias("state"),
                       F.lit("consumer").alias("protocol_type"), F.when(stable, members).otherwise(0).alias("members"),
                       F.when(stable, F.array(F.concat(F.col("group"), F.lit("-app")))).otherwise(
                           F.array().cast("array<string>")).alias("client_ids")), "groups", inventory, 1)
    clusters = [r["cluster"] for r in spark.read.parquet(str(inventory / "topics")).select("cluster").distinct()
                .collect()]
    read_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(READ_AT / 1000))
    write_meta(inventory, clusters, "fleetgen", False,
               {c: {"readAt": read_at, "readAtMs": READ_AT, "notes": []} for c in clusters})
    return {"partitions": total,
            "groupPartitions": spark.read.parquet(str(inventory / "group_offsets")).count(),
            "groups": spark.read.parquet(str(inventory / "groups")).count()}


def save(df: Any, table: str, inventory: Path, files: int) -> None:
    """Written with exactly the inventory schema's types (generated numbers are BIGINT by default)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType, _parse_datatype_string

    from reconciler.impact.inventory import SCHEMAS

    schema = _parse_datatype_string(SCHEMAS[table])
    assert isinstance(schema, StructType)
    df = df.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])
    df.coalesce(files).write.mode("overwrite").parquet(str(inventory / table))


def lowered_table(changes: Any, out: Path) -> Any:
    """The minimal program's input: per lowered topic its time retention before and after (from the project's
    topic rows; this fleet's change lowers retention.ms only, on every partition of a topic)."""
    from pyspark.sql import functions as F

    from reconciler.impact.consumers import _retention_entry

    rows = changes.per_topic.select("cluster", "topic", _retention_entry("retention.ms").alias("ms")).filter(
        F.col("ms").isNotNull())
    rows.select("cluster", "topic", F.col("ms.before").cast("long").alias("before"),
                F.col("ms.after").cast("long").alias("after"),
                F.col("ms.part_ids").alias("part_ids")).write.mode("overwrite").parquet(str(out))
    return changes.spark.read.parquet(str(out))


def minimal(spark: Any, inventory: Path, lowered: Any) -> dict[str, Any]:
    """Rows (cluster, topic, group, records at risk) and their totals by the shortest plan here."""
    from pyspark.sql import functions as F

    logs = spark.read.parquet(str(inventory / "log_offsets"))
    committed = spark.read.parquet(str(inventory / "group_offsets"))

    def keeps(age: Any) -> Any:  # the first offset a time retention keeps (exact ages only)
        found = F.get(F.filter("at", lambda x: x["age_ms"] == age), 0)["offset"]
        return F.least(F.greatest(found, F.col("log_start")), F.col("log_end"))

    j = committed.join(lowered, ["cluster", "topic"]).filter(
        F.col("part_ids").isNull() | F.array_contains("part_ids", F.col("partition"))).join(
        logs, ["cluster", "topic", "partition"])
    lost = F.greatest(F.lit(0), keeps(F.col("after")) - F.greatest("committed", keeps(F.col("before"))))
    per_group = j.groupBy("cluster", "topic", "group").agg(F.sum(lost).alias("records")).filter("records > 0")
    rows = per_group.collect()
    return {"rows": sorted((r["cluster"], r["topic"], r["group"], r["records"], r["records"]) for r in rows)}


def project(changes: Any, inv: Any, meta: dict[str, Any]) -> dict[str, Any]:
    from reconciler.impact import job
    from reconciler.impact.consumers import section

    found, at_risk = section(changes, inv, meta)
    assert at_risk is not None
    rows = sorted((r["cluster"], r["topic"], r["group"], r["records_min"], r["records_max"])
                  for r in at_risk.select("cluster", "topic", "group", "records_min", "records_max").collect())
    for df in job._CACHED[1:]:  # the at-risk rows section() cached: the next run computes them again, as a
        df.unpersist()  # run of the CLI does (Spark would otherwise reuse them: an identical plan)
    del job._CACHED[1:]
    return {"section": found, "rows": rows}


def timed(spark: Any, label: str, fn: Any) -> tuple[Any, dict[str, Any]]:
    sc = spark.sparkContext
    group = f"bench-{label}-{time.monotonic_ns()}"
    sc.setJobGroup(group, label)
    started = time.monotonic()
    out = fn()
    seconds = time.monotonic() - started
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = [s for j in jobs for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else ())
              if (info := tracker.getStageInfo(s)) is not None and info.numTasks > 0]
    sc.setLocalProperty("spark.jobGroup.id", None)
    return out, {"seconds": round(seconds, 2), "jobs": len(jobs), "stages": len(set(stages))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--group-partitions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=REPO / ".local" / "bench-consumers")
    parser.add_argument("--reuse", action="store_true", help="keep the offset tables of an earlier run")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    fleet_dir, clusters = fleet(args.work, args.partitions)
    inventory = fleet_dir / "inventory"

    from reconciler.impact.afterstate import after_rows
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.inventory import read_inventory, read_meta
    from reconciler.impact.job import compute_changes
    from reconciler.impact.session import spark_session
    from reconciler.workflow import load_desired

    states, _ = load_desired(fleet_dir / "manifests", ())
    after = after_rows(states)
    with spark_session("local[*]") as spark:
        sizes = json.loads((args.work / "offsets.json").read_text()) if args.reuse and \
            (args.work / "offsets.json").exists() else generate_offsets(spark, inventory, args.group_partitions)
        (args.work / "offsets.json").write_text(json.dumps(sizes) + "\n", encoding="utf-8")
        inv = read_inventory(spark, inventory)
        changes = compute_changes(spark, inv, after)
        config, config_run = timed(spark, "config-job", lambda: summarize(spark, changes))
        lowered = lowered_table(changes, args.work / "lowered")
        meta = read_meta(inventory)
        runs: dict[str, list[dict[str, Any]]] = {"project": [], "minimal": []}
        answers: dict[str, Any] = {}
        for _ in range(args.repeat):
            found, run = timed(spark, "project", lambda: project(changes, inv, meta))
            runs["project"].append(run)
            answers["project"] = found["rows"]
            answers["section"] = {k: found["section"][k] for k in ("groupsAtRisk", "topicsAtRisk",
                                                                    "groupTopicsAtRisk", "recordsAtRisk")}
            floor, run = timed(spark, "minimal", lambda: minimal(spark, inventory, lowered))
            runs["minimal"].append(run)
            answers["minimal"] = floor["rows"]
    same = answers["project"] == answers["minimal"]
    report = {
        "fleet": {"clusters": clusters, "topics": clusters * PER_CLUSTER, **sizes,
                  "topicsAffected": config["topicsAffected"]},
        "atRisk": answers["section"], "identical": same, "configJob": config_run,
        **{name: {"median_seconds": statistics.median(r["seconds"] for r in rs), "runs": rs}
           for name, rs in runs.items()},
    }
    report["ratio"] = round(report["project"]["median_seconds"] / report["minimal"]["median_seconds"], 2)
    text = json.dumps(report, indent=2)
    (args.work / "consumers-results.json").write_text(text + "\n", encoding="utf-8")
    print(text)
    if not same:
        print("the project's rows and the minimal program's differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
