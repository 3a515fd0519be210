"""The impact job on a tiny fleet whose blast radius is worked out by hand below (never by the job).

One inventory, one cluster per situation, so a single job run (real local Spark) covers them all:
  shield     <default> log.retention.ms 7d -> 1h and num.io.threads 16 -> 8; topic b overrides retention.ms,
             so it is shielded; a (2 partitions) and c (4) change; every broker changes both keys
  perbroker  <default> log.retention.ms 7d -> 1h, but broker 1 keeps its own 1d (undeclared per-broker
             entity: kept). RF-1 topic x has a partition on each broker: p1 (broker 2) and p2 (broker 3)
             change, p0 (broker 1) does not; topic y lives on broker 1 only: unchanged
  synonyms   broker 1's static server.properties says log.retention.hours=24; no dynamic value before.
             After: <default> log.retention.ms=2d, which beats the static hours. Broker 1: 1d -> 2d
             (raised: no risk), broker 2: Kafka default 7d -> 2d (lowered). <default> also drops
             log.segment.bytes=512MiB: segment.bytes falls back to Kafka's default 1GiB (raised: safe).
             Topic z (1 partition on brokers 1, 2) changes both keys
  override   declared topic orders: retention.ms 1d -> 1h, cleanup.policy compact is no longer declared
             (-> the default delete), min.insync.replicas=2 is in policy.ignoreKeys (kept); topic logs is
             undeclared (kept); new.topic is created and orders grows from 3 to 6 partitions (both counted
             apart); orders has replicas on brokers 1-3
  untouched  declared exactly as it is: no change
  deleting   policy.deleteTopics [tmp-*, old.orders, *_offsets, gone]: tmp-a (2 partitions x 2 replicas, 300 + 700
             bytes) and old.orders (3 x 2, no sizes in the inventory) are deleted; tmp-kept matches but is
             declared, __consumer_offsets matches *_offsets but is internal, oldXorders is not old.orders ('.' is
             no wildcard), keep matches nothing: kept. No config changes: the cluster counts for its deletions
  unselected in the inventory only (not a changed cluster): never counted
  ghost      in the manifests only (no snapshot of it): reported as missing, nothing compared
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.inventory import SENSITIVE, read_inventory, write_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

D = "<default>"
BROKERS = {"shield": 3, "perbroker": 3, "synonyms": 2, "override": 3, "untouched": 1, "unselected": 1, "deleting": 2}
# cluster -> topic -> [(replicas, size_bytes) per partition]
TOPICS: dict[str, dict[str, list[tuple[list[int], int]]]] = {
    "shield": {"a": [([1, 2, 3], 100), ([2, 3, 1], 200)], "b": [([3, 1, 2], 1000)],
               "c": [([1, 2], 1), ([2, 3], 2), ([3, 1], 3), ([1, 3], 4)]},
    "perbroker": {"x": [([1], 10), ([2], 20), ([3], 40)], "y": [([1], 80)]},
    "synonyms": {"z": [([1, 2], 5)]},
    "override": {"orders": [([1, 2, 3], 7), ([2, 3, 1], 7), ([3, 1, 2], 7)], "logs": [([1, 2, 3], 500)]},
    "untouched": {"t1": [([1], 9)]},
    "unselected": {"u1": [([1], 1000)] * 5},
    "deleting": {"tmp-a": [([1, 2], 300), ([2, 1], 700)], "old.orders": [([1, 2], 0), ([2, 1], 0), ([1, 2], 0)],
                 "tmp-kept": [([1], 50)], "__consumer_offsets": [([1, 2], 5)], "oldXorders": [([1], 6)],
                 "keep": [([2], 8)]},
}
NO_SIZES = {("deleting", "old.orders")}  # the inventory's sizes leave this topic out
DELETE_TOPICS = ("tmp-*", "old.orders", "*_offsets", "gone")
CONFIGS = [
    ("shield", "brokers", D, "log.retention.ms", "604800000"),
    ("shield", "brokers", D, "num.io.threads", "16"),
    ("shield", "brokers", "1", "listener.name.external.ssl.keystore.password", SENSITIVE),
    ("shield", "topics", "b", "retention.ms", "1000"),
    ("perbroker", "brokers", D, "log.retention.ms", "604800000"),
    ("perbroker", "brokers", "1", "log.retention.ms", "86400000"),
    ("synonyms", "brokers", D, "log.segment.bytes", "536870912"),
    ("override", "topics", "orders", "retention.ms", "86400000"),
    ("override", "topics", "orders", "cleanup.policy", "compact"),
    ("override", "topics", "orders", "min.insync.replicas", "2"),
    ("override", "topics", "logs", "retention.ms", "1000"),
    ("untouched", "brokers", D, "log.retention.ms", "604800000"),
    ("unselected", "brokers", D, "log.retention.ms", "604800000"),
]
STATIC = [("synonyms", "1", "log.retention.hours", "24")]
SELECTED = ["deleting", "ghost", "override", "perbroker", "shield", "synonyms", "untouched"]
AFTER = AfterRows(
    clusters=SELECTED,
    configs=[
        ("shield", "brokers", D, "log.retention.ms", "3600000"),
        ("shield", "brokers", D, "num.io.threads", "8"),
        ("perbroker", "brokers", D, "log.retention.ms", "3600000"),
        ("synonyms", "brokers", D, "log.retention.ms", "172800000"),
        ("override", "topics", "orders", "retention.ms", "3600000"),
        ("override", "topics", "new.topic", "retention.ms", "1000"),
        ("untouched", "brokers", D, "log.retention.ms", "604800000"),
        ("ghost", "brokers", D, "log.retention.ms", "1"),
    ],
    declared=[("ghost", "brokers", D), ("shield", "brokers", D), ("perbroker", "brokers", D),
              ("synonyms", "brokers", D), ("override", "topics", "orders"), ("override", "topics", "new.topic"),
              ("untouched", "brokers", D), ("deleting", "topics", "tmp-kept")],
    policies=[(c, False, ["min.insync.replicas"] if c == "override" else []) for c in SELECTED],
    static=list(STATIC),
    # orders grows from 3 partitions; tmp-kept is declared as it is
    topics=[("override", "orders", 6, None), ("override", "new.topic", 3, 3), ("deleting", "tmp-kept", None, None)],
    delete_topics={"deleting": DELETE_TOPICS},
)


def write_fleet(directory: Path, spark: Any, sizes: bool = True) -> None:
    rows: dict[str, list[tuple[Any, ...]]] = {
        "brokers": [(c, b, f"r{b}", [f"PLAINTEXT://b{b}.{c}:9092"]) for c, n in BROKERS.items()
                    for b in range(1, n + 1)],
        "topics": [(c, t, len(ps), len(ps[0][0])) for c, ts in TOPICS.items() for t, ps in ts.items()],
        "partitions": [(c, t, p, reps) for c, ts in TOPICS.items() for t, ps in ts.items()
                       for p, (reps, _) in enumerate(ps)],
        "configs": list(CONFIGS),
        "static": list(STATIC),
    }
    if sizes:
        rows["sizes"] = [(c, t, p, n) for c, ts in TOPICS.items() for t, ps in ts.items() if (c, t) not in NO_SIZES
                         for p, (_, n) in enumerate(ps)]
    write_tables(spark, rows, directory)


@pytest.fixture(scope="module")
def results(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The job run three ways on the same fleet: pruned with sizes, full with sizes, pruned without."""
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.job import compute_changes
    from reconciler.impact.outputs import write_outputs

    out: dict[str, Any] = {}
    with_sizes, without = tmp_path_factory.mktemp("inv-sizes"), tmp_path_factory.mktemp("inv-plain")
    write_fleet(with_sizes, spark, sizes=True)
    write_fleet(without, spark, sizes=False)
    changes = compute_changes(spark, read_inventory(spark, with_sizes), AFTER)
    out["summary"] = summarize(spark, changes)
    out["topic_rows"] = {(r["cluster"], r["topic"], r["key"]): r.asDict() for r in changes.topics.collect()}
    out["broker_rows"] = {(r["cluster"], r["broker"], r["key"]): r.asDict() for r in changes.brokers.collect()}
    out["files"] = tmp_path_factory.mktemp("report")
    write_outputs(out["files"], out["summary"], changes)
    out["full"] = summarize(spark, compute_changes(spark, read_inventory(spark, with_sizes), AFTER, full=True))
    out["plain"] = summarize(spark, compute_changes(spark, read_inventory(spark, without), AFTER))
    return out


def test_totals(results: dict[str, Any]) -> None:
    s = results["summary"]
    assert s["clustersAffected"] == 5  # shield, perbroker, synonyms, override; deleting (its deletions)
    # shield 1-3, perbroker 2-3, synonyms 1-2, override 1-3 (replica hosts of orders)
    assert s["brokersAffected"] == 3 + 2 + 2 + 3
    assert s["topicsAffected"] == 5  # a, c, x, z, orders; b, y, logs, t1, u1 are not
    assert s["partitionsAffected"] == (2 + 4) + 2 + 1 + 3  # x: p1 and p2 only
    assert s["bytesAffected"] == (100 + 200 + 1 + 2 + 3 + 4) + (20 + 40) + 5 + 21
    assert s["topicsByRisk"] == {"destructive": 5, "disruptive": 0, "safe": 0}
    assert s["topicsCreated"] == 1 and s["partitionIncreases"] == 1  # new.topic; orders 3 -> 6 partitions
    assert s["inventory"] == {"clusters": 6, "brokers": 14, "topics": 15, "partitions": 26}
    assert s["missingClusters"] == ["ghost"]
    assert s["topicChangesTotal"] == 2 + 1 + 2 + 2  # (topic, key) pairs
    assert s["brokerChangesTotal"] == 6 + 2 + 4  # (broker, key) pairs: shield 3x2, perbroker 2, synonyms 2x2


def test_by_key(results: dict[str, Any]) -> None:
    by_key = {k["key"]: k for k in results["summary"]["byKey"]}
    assert [k["key"] for k in results["summary"]["byKey"]] == [
        "retention.ms", "cleanup.policy", "segment.bytes", "log.retention.ms", "num.io.threads", "log.segment.bytes"]
    assert by_key["retention.ms"] == {
        "key": "retention.ms", "clusters": 4, "brokers": 10, "topics": 5, "partitions": 12, "bytes": 396,
        "risk": "destructive", "rules": ["retention-lowered"]}
    assert by_key["cleanup.policy"] == {
        "key": "cleanup.policy", "clusters": 1, "brokers": 3, "topics": 1, "partitions": 3, "bytes": 21,
        "risk": "destructive", "rules": ["cleanup-policy-changed"]}
    assert by_key["segment.bytes"] == {
        "key": "segment.bytes", "clusters": 1, "brokers": 2, "topics": 1, "partitions": 1, "bytes": 5,
        "risk": "safe", "rules": []}
    assert by_key["num.io.threads"] == {
        "key": "num.io.threads", "clusters": 1, "brokers": 3, "topics": 0, "partitions": 0, "bytes": 0,
        "risk": "disruptive", "rules": ["threads-reduced"]}
    assert "min.insync.replicas" not in by_key  # ignoreKeys: the live value stays
    # the broker values' own changes, under the broker key the plan names them by and rated as the plan rates the
    # broker entity (issue 39 item 10): shield 1-3, perbroker 2-3, synonyms 1 (1d -> 2d: raised) and 2 (lowered)
    assert by_key["log.retention.ms"] == {
        "key": "log.retention.ms", "clusters": 3, "brokers": 7, "topics": 0, "partitions": 0, "bytes": 0,
        "risk": "destructive", "rules": ["retention-lowered"]}
    assert by_key["log.segment.bytes"] == {
        "key": "log.segment.bytes", "clusters": 1, "brokers": 2, "topics": 0, "partitions": 0, "bytes": 0,
        "risk": "safe", "rules": []}
    # per broker value: shield 3 + perbroker 2 + synonyms broker 2 lowered; 3 fewer io threads; the raise and
    # the two segment sizes safe
    assert results["summary"]["brokerValuesByRisk"] == {"destructive": 6, "disruptive": 3, "safe": 3}


def test_by_rule(results: dict[str, Any]) -> None:
    rules = results["summary"]["byRule"]
    assert [r["rule"] for r in rules] == ["retention-lowered", "cleanup-policy-changed", "threads-reduced"]
    lowered, cleanup, threads = rules
    # brokers whose own value is lowered: shield 3, perbroker 2 (broker 1 keeps 1d), synonyms broker 2 only
    # (broker 1 goes 1d -> 2d: raised, on its replica of z too); and the replica hosts of a topic change that
    # lowers it there: orders' own override, on brokers 1-3 of override
    assert lowered == {"rule": "retention-lowered", "risk": "destructive", "keys": ["log.retention.ms", "retention.ms"],
                       "clusters": 4, "brokers": 3 + 2 + 1 + 3, "topics": 5, "partitions": 12, "bytes": 396}
    # orders' cleanup.policy override changes on its replica hosts, brokers 1-3: as byKey counts them (issue 30)
    assert cleanup == {"rule": "cleanup-policy-changed", "risk": "destructive", "keys": ["cleanup.policy"],
                       "clusters": 1, "brokers": 3, "topics": 1, "partitions": 3, "bytes": 21}
    by_key = {k["key"]: k for k in results["summary"]["byKey"]}
    for rule in rules:  # a rule's brokers are among its keys' brokers
        assert rule["brokers"] <= sum(by_key[k]["brokers"] for k in rule["keys"] if k in by_key)
    assert threads == {"rule": "threads-reduced", "risk": "disruptive", "keys": ["num.io.threads"],
                       "clusters": 1, "brokers": 3, "topics": 0, "partitions": 0, "bytes": 0}


def test_by_cluster(results: dict[str, Any]) -> None:
    """Most at risk first, then by size. Estimated bytes deleted by a lowered retention.ms = the affected
    bytes x (before - after) / before: shield a+c (300 + 10) x (7d - 1h) / 7d = 308.15; override orders
    21 x (1d - 1h) / 1d = 20.1; perbroker x's p1+p2 60 x (7d - 1h) / 7d = 59.6; synonyms shows broker 2's
    values, the most at risk (7d -> 2d; broker 1's 1d -> 2d is raised): 5 x (7d - 2d) / 7d = 3.6. Truncated to
    whole bytes."""
    none = {"topicsDeleted": 0, "partitionsDeleted": 0, "topicBytesDeleted": 0}
    assert results["summary"]["byCluster"] == [
        {"cluster": "shield", "brokers": 3, "topics": 2, "partitions": 6, "bytes": 310, "changes": 8,
         "risk": "destructive", "bytesDeletedEstimate": 308, **none},
        {"cluster": "override", "brokers": 3, "topics": 1, "partitions": 3, "bytes": 21, "changes": 2,
         "risk": "destructive", "bytesDeletedEstimate": 20, **none},
        {"cluster": "perbroker", "brokers": 2, "topics": 1, "partitions": 2, "bytes": 60, "changes": 3,
         "risk": "destructive", "bytesDeletedEstimate": 59, **none},
        {"cluster": "synonyms", "brokers": 2, "topics": 1, "partitions": 1, "bytes": 5, "changes": 6,
         "risk": "destructive", "bytesDeletedEstimate": 3, **none},
        # no config change; deleting topics is destructive: tmp-a (1000 bytes) and old.orders (size unknown)
        {"cluster": "deleting", "brokers": 0, "topics": 0, "partitions": 0, "bytes": 0, "changes": 0,
         "risk": "destructive", "bytesDeletedEstimate": 0, "topicsDeleted": 2, "partitionsDeleted": 2 + 3,
         "topicBytesDeleted": 1000},
    ]
    assert results["summary"]["bytesDeletedEstimate"] == 308 + 20 + 59 + 3


def _deletion_reason(topic: str, partitions: int, rf: int, entry: str) -> str:
    return (f"topic deleted ({partitions} partitions × {rf} replicas): every record it holds is lost; "
            f"policy.deleteTopics entry {entry!r}")


def test_topics_deleted(results: dict[str, Any]) -> None:
    """The undeclared, non-internal topics policy.deleteTopics names, with the inventory's sizes (old.orders has
    none: null, counted in bytesUnknown), rated destructive with the plan's reason and the bytes."""
    d = results["summary"]["topicsDeleted"]
    assert [(r["cluster"], r["topic"], r["partitions"], r["replicationFactor"], r["replicas"], r["bytes"],
             r["matched"], r["risk"]) for r in d["rows"]] == [
        ("deleting", "old.orders", 3, 2, 6, None, "old.orders", "destructive"),
        ("deleting", "tmp-a", 2, 2, 4, 1000, "tmp-*", "destructive"),
    ]
    old, tmp = d["rows"]
    assert old["reasons"] == [_deletion_reason("old.orders", 3, 2, "old.orders")]
    assert tmp["reasons"][0] == _deletion_reason("tmp-a", 2, 2, "tmp-*")
    assert len(tmp["reasons"]) == 2 and "1,000 bytes" in tmp["reasons"][1]
    totals = {k: d[k] for k in ("topics", "partitions", "replicas", "bytes", "bytesUnknown", "clusters")}
    assert totals == {"topics": 2, "partitions": 5, "replicas": 10, "bytes": 1000, "bytesUnknown": 1, "clusters": 1}
    assert d["byCluster"] == [{"cluster": "deleting", "topics": 2, "partitions": 5, "replicas": 10, "bytes": 1000,
                               "bytesUnknown": 1, "risk": "destructive"}]
    plain = results["plain"]["topicsDeleted"]  # an inventory without sizes: the same topics, no bytes
    assert [r["topic"] for r in plain["rows"]] == ["old.orders", "tmp-a"] and plain["bytes"] is None
    assert [r["reasons"] for r in plain["rows"]] == [[_deletion_reason("old.orders", 3, 2, "old.orders")],
                                                     [_deletion_reason("tmp-a", 2, 2, "tmp-*")]]
    deleting = next(c for c in results["plain"]["byCluster"] if c["cluster"] == "deleting")
    assert (deleting["topicsDeleted"], deleting["topicBytesDeleted"]) == (2, None)


def test_precedence_detail_rows(results: dict[str, Any]) -> None:
    rows = results["topic_rows"]
    assert set(rows) == {
        ("shield", "a", "retention.ms"), ("shield", "c", "retention.ms"), ("perbroker", "x", "retention.ms"),
        ("synonyms", "z", "retention.ms"), ("synonyms", "z", "segment.bytes"),
        ("override", "orders", "retention.ms"), ("override", "orders", "cleanup.policy"),
    }
    a = rows[("shield", "a", "retention.ms")]
    assert (a["before"], a["after"], a["part_ids"], a["risk"]) == ("604800000", "3600000", None, "destructive")
    x = rows[("perbroker", "x", "retention.ms")]
    assert (x["part_ids"], x["brokers"], x["before"], x["after"]) == ([1, 2], [2, 3], "604800000", "3600000")
    # static hours (24h = 86400000 ms) on broker 1 lose to the dynamic ms (1d -> 2d: raised); shown on the most
    # at risk broker, 2 (Kafka's default 7d -> 2d), with the reasons of that change
    z = rows[("synonyms", "z", "retention.ms")]
    assert (z["before"], z["after"], z["brokers"], z["rules"]) == ("604800000", "172800000", [1, 2],
                                                                   ["retention-lowered"])
    assert len(z["reasons"]) == 1 and "7d" in z["reasons"][0] and "2d" in z["reasons"][0]
    seg = rows[("synonyms", "z", "segment.bytes")]
    assert (seg["before"], seg["after"], seg["risk"]) == ("536870912", "1073741824", "safe")  # Kafka default
    cleanup = rows[("override", "orders", "cleanup.policy")]
    assert (cleanup["before"], cleanup["after"], cleanup["src"]) == ("compact", "delete", "override")
    brokers = results["broker_rows"]
    assert brokers[("synonyms", 1, "log.retention.ms")]["before"] == "86400000"
    assert brokers[("synonyms", 1, "log.retention.ms")]["risk"] == "safe"  # raised
    assert brokers[("synonyms", 2, "log.retention.ms")]["before"] == "604800000"  # Kafka default
    assert ("perbroker", 1, "log.retention.ms") not in brokers
    assert not any(k[2].startswith("listener.name") for k in brokers)  # an unchanged (sensitive) value


def test_full_evaluation_agrees(results: dict[str, Any]) -> None:
    """Every topic x every topic config evaluated gives the same report as the pruned evaluation."""
    assert results["full"] == results["summary"]


def test_without_sizes_bytes_are_null(results: dict[str, Any]) -> None:
    plain, sized = results["plain"], results["summary"]
    assert plain["bytesAffected"] is None
    assert all(k["bytes"] is None for k in plain["byKey"] + plain["byRule"] + plain["byCluster"])
    assert plain["bytesDeletedEstimate"] is None
    assert all(c["bytesDeletedEstimate"] is None for c in plain["byCluster"])
    for key in ("clustersAffected", "brokersAffected", "topicsAffected", "partitionsAffected"):
        assert plain[key] == sized[key]
    assert [k["topics"] for k in plain["byKey"]] == [k["topics"] for k in sized["byKey"]]


def test_report_files(results: dict[str, Any], spark: Any) -> None:
    files: Path = results["files"]
    assert json.loads((files / "report.json").read_text())["topicsAffected"] == 5
    md = (files / "report.md").read_text()
    assert len(md) < 65_536 and "`retention.ms`" in md and "🛑 destructive" in md
    # deletions first, as in the PR comment: right after the headline, before every other section
    lines = md.splitlines()
    assert lines[0].startswith("## Fleet impact: 2 topic(s) deleted (5 partitions, at least 1000 B); ")
    assert lines[2].startswith("### 🛑 Topics to DELETE (2 in 1 cluster(s))")
    tmp = next(x for x in lines if x.startswith("| `deleting` | `tmp-a` |"))
    assert "| 2 | 4 | 1000 B |" in tmp and md.index("tmp-a") < md.index("### By key")
    html = (files / "report.html").read_text()
    assert "<svg" in html and "<script" not in html and "http://" not in html and "https://" not in html
    assert "Estimated bytes deleted" in html and "308 B" in html
    deletions = html[html.index("Topics to delete"):html.index("Change assessed")]
    assert "<code>tmp-a</code>" in deletions and "1000 B" in deletions and "<code>old.orders</code>" in deletions
    assert "tmp-kept" not in deletions and "__consumer_offsets" not in deletions
    assert spark.read.parquet(str(files / "topic_changes")).count() == 7
    assert spark.read.parquet(str(files / "broker_changes")).count() == 12


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="chromium not installed (scripts/bootstrap.sh installs it)")
def test_report_renders_in_headless_chromium(results: dict[str, Any], tmp_path: Path) -> None:
    """The report as a reviewer sees it: Chromium renders it to an image far richer than an empty page of the
    same size (charts, tables and text drawn), and the page carries the change assessed and labelled axes."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "screenshot-report.sh"
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>")
    shots = {}
    for name, page in (("report", results["files"] / "report.html"), ("blank", blank)):
        shots[name] = tmp_path / f"{name}.png"
        subprocess.run(["bash", str(script), str(page), str(shots[name]), "1280", "1600"], check=True,
                       capture_output=True, timeout=180)
        assert _png_size(shots[name]) == (1280, 1600)
    assert shots["report"].stat().st_size > 5 * shots["blank"].stat().st_size
    html = (results["files"] / "report.html").read_text()
    assert "Change assessed" in html and 'class="axis">topics affected</text>' in html


def test_is_in_filters_like_isin(spark: Any) -> None:
    """`frames.is_in` (one string to the JVM) keeps exactly the rows `Column.isin` keeps, for plain names, an
    expression, an empty list and a value with a newline (which takes the plain path)."""
    from pyspark.sql import functions as F

    from reconciler.impact.frames import is_in, local_df

    df = local_df(spark, [("c1", "a"), ("c2", "b"), ("c3", "a\nb"), ("c10", "x")], "cluster STRING, topic STRING")
    for values in (["c1", "c10"], [], ["c3", "nope"], ["a\nb", "b"]):
        column = "topic" if values and "\n" in values[0] else "cluster"
        got = sorted(r[0] for r in df.filter(is_in(spark, column, values)).collect())
        want = sorted(r[0] for r in df.filter(F.col(column).isin(values)).collect())
        assert got == want and (got or not values or values == ["c3", "nope"])
    both = is_in(spark, F.concat_ws("/", "cluster", "topic"), ["c2/b", "c10/x"])
    assert sorted(r[0] for r in df.filter(both).collect()) == ["c10", "c2"]
