"""Consumers at risk: the Spark job (impact/consumers.py) on a hand-made fleet, against the figures worked out by
hand below and against the plain-Python arithmetic (`reconciler.unread.topic_risks`) for every (topic, group).

Cluster c1 (3 brokers), offsets read at T. Every partition has 1,000 records (offsets 100..1100), one every
0.01 d from T - 10 d (1,000 bytes each), so the first offset whose record is less than `a` old is
`1100 - a / 0.01 d` (7d: 400, 5d: 600, 2d: 900, 1d: 1000):
  orders   declared, retention.ms 7d -> 1d (both read exactly). 2 partitions
  logs     inherits <default> log.retention.ms 7d -> 36h: 36h is not among the ages read: bracketed by 1d and 2d
  sized    declared, retention.ms 7d kept, retention.bytes -1 -> 500,000 of its 1,000,000 bytes: the older
           half (to offset 600) is eligible
  nosize   the same without a size (DescribeLogDirs did not answer): anything from none to all
  compact  declared, cleanup.policy compact and retention.ms lowered: deletes nothing (the plan's rule)
  other    declared, retention.ms 7d kept
Groups: `half` (active, 2 members) at 550 everywhere (its oldest unread record 5.5 d old), `all` at the log end,
`behind` at 50 (before the log start), `none` only on `other`, and `empty` at 550 on orders (Empty).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.inventory import offset_rows, read_inventory, write_meta, write_tables
from reconciler.unread import LADDER_MS, ClusterOffsets, GroupState, PartitionLog, topic_risks

pytestmark = [pytest.mark.spark]

D = "<default>"
DAY = 86_400_000
T = 1_800_000_000_000
TOPICS = {"orders": 2, "logs": 1, "sized": 1, "nosize": 1, "compact": 1, "other": 1}


def at_of(ages: list[int]) -> dict[int, int]:
    """Records at T - 10d + i x 0.01d (offset 100 + i): the first offset at least `a` old is 1100 - a/0.01d."""
    return {a: min(1100, max(100, 1100 - (a * 100) // DAY)) for a in ages}


AGES = sorted({*LADDER_MS, 7 * DAY})  # the ladder and the retentions in use (1d and 7d are in the ladder)
OFFSETS = ClusterOffsets(
    "c1", T,
    partitions=tuple(PartitionLog(t, p, 100, 1100, None if t == "nosize" else 1_000_000, at_of(AGES))
                     for t, n in TOPICS.items() for p in range(n)),
    groups=(GroupState("half", "Stable", "consumer", 2, ("billing-1", "billing-2")),
            GroupState("all", "Stable", "consumer", 1, ("audit",)), GroupState("behind", "Empty", "consumer", 0),
            GroupState("none", "Stable", "consumer", 1, ("x",)), GroupState("empty", "Empty", "", 0)),
    committed=tuple([(g, t, p, o) for t, n in TOPICS.items() if t != "other" for p in range(n)
                     for g, o in (("half", 550), ("all", 1100), ("behind", 50))]
                    + [("none", "other", 0, 10), ("empty", "orders", 0, 550), ("empty", "orders", 1, 550)]),
)
AFTER = AfterRows(
    clusters=["c1"],
    configs=[("c1", "brokers", D, "log.retention.ms", str(36 * 3_600_000)),
             ("c1", "topics", "orders", "retention.ms", str(DAY)),
             *(("c1", "topics", t, "retention.ms", str(7 * DAY)) for t in ("sized", "nosize", "other")),
             ("c1", "topics", "sized", "retention.bytes", "500000"),
             ("c1", "topics", "nosize", "retention.bytes", "500000"),
             ("c1", "topics", "compact", "retention.ms", str(DAY)),
             ("c1", "topics", "compact", "cleanup.policy", "compact")],
    declared=[("c1", "brokers", D),
              *(("c1", "topics", t) for t in ("orders", "sized", "nosize", "compact", "other"))],
    policies=[("c1", False, [])],
    brokers=[("c1", b) for b in (1, 2, 3)],
)


def write_consumer_fleet(directory: Path, spark: Any) -> None:
    """The inventory above, offsets included (also written through Spark Connect: test_impact_connect.py)."""
    write_tables(spark, {
        "brokers": [("c1", b, None, [f"PLAINTEXT://b{b}:9092"]) for b in (1, 2, 3)],
        "topics": [("c1", t, n, 3) for t, n in TOPICS.items()],
        "partitions": [("c1", t, p, [1, 2, 3]) for t, n in TOPICS.items() for p in range(n)],
        "configs": [("c1", "brokers", D, "log.retention.ms", str(7 * DAY)),
                    *(("c1", "topics", t, "retention.ms", str(7 * DAY))
                      for t in ("orders", "compact", "sized", "nosize", "other")),
                    ("c1", "topics", "compact", "cleanup.policy", "compact")],
        "static": [],
        **offset_rows(OFFSETS),
    }, directory)
    write_meta(directory, ["c1"], "snapshot", False, {"c1": {"readAt": "2027-01-15T08:00:00Z", "readAtMs": T}})


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.consumers import section
    from reconciler.impact.inventory import read_meta
    from reconciler.impact.job import compute_changes

    directory: Path = tmp_path_factory.mktemp("inv-consumers")
    write_consumer_fleet(directory, spark)
    inv = read_inventory(spark, directory)
    changes = compute_changes(spark, inv, AFTER)
    found, rows = section(changes, inv, read_meta(directory))
    assert rows is not None
    return {"section": found, "rows": {(r["topic"], r["group"]): r.asDict() for r in rows.collect()},
            "summary": summarize(spark, changes)}


def test_hand_worked_figures(result: dict[str, Any]) -> None:
    rows = result["rows"]
    # orders 7d -> 1d: kept from 400 before, from 1000 after: `half` at 550 loses 450 per partition
    half = rows[("orders", "half")]
    assert (half["records_min"], half["records_max"], half["partitions"]) == (900, 900, 2)
    assert (half["bytes_min"], half["bytes_max"]) == (900_000, 900_000)  # 1,000 bytes a record
    assert (half["lag_ms_min"], half["lag_ms_max"]) == (5 * DAY, 7 * DAY)  # its oldest unread record: 5.5d old
    assert half["lag_records"] == 2 * 550
    assert (half["state"], half["members"], half["client_ids"]) == ("Stable", 2, ["billing-1", "billing-2"])
    # behind the log start: everything kept today that the change lets go, and it says where it stands
    behind = rows[("orders", "behind")]
    assert (behind["records_max"], behind["behind_start"]) == (2 * 600, 2)
    assert rows[("orders", "empty")]["records_max"] == 900 and rows[("orders", "empty")]["state"] == "Empty"
    # logs 7d -> 36h: between the 1d and 2d ages read: 2d keeps from 900, 1d from 1000
    logs = rows[("logs", "half")]
    assert (logs["records_min"], logs["records_max"]) == (350, 450)
    # sized: -1 -> half of its bytes: up to offset 600 (time retention unchanged: counted from the log start)
    assert rows[("sized", "half")]["records_max"] == 50 and rows[("sized", "behind")]["records_max"] == 500
    # nosize: the size is not known: from none to every unread record
    nosize = rows[("nosize", "half")]
    assert (nosize["records_min"], nosize["records_max"], nosize["bytes_max"]) == (0, 550, None)
    # caught up, compact-only, and a group without offsets on a changed topic: never at risk
    assert not [k for k in rows if k[1] in ("all", "none") or k[0] in ("compact", "other")]


def test_spark_agrees_with_the_plain_arithmetic(result: dict[str, Any]) -> None:
    # what the job compares: the changed keys' values (an unchanged key counts from the log start)
    changes = {"orders": ((7 * DAY, None), (DAY, None)), "logs": ((7 * DAY, None), (36 * 3_600_000, None)),
               "sized": ((None, -1), (None, 500_000)), "nosize": ((None, -1), (None, 500_000))}
    expected = {}
    for topic, (before, after) in changes.items():
        for g in topic_risks(OFFSETS, topic, before, after):
            if g.at_risk:
                expected[(topic, g.group)] = (g.records, g.bytes, g.lag_records, g.lag_ms, g.partitions,
                                              g.behind_start)
    got = {k: ((r["records_min"], r["records_max"]),
               None if r["bytes_max"] is None else (r["bytes_min"], r["bytes_max"]), r["lag_records"],
               (r["lag_ms_min"], r["lag_ms_max"]), r["partitions"], r["behind_start"])
           for k, r in result["rows"].items()}
    assert got == expected


def test_section_rollups_and_freshness(result: dict[str, Any]) -> None:
    s = result["section"]
    assert s["known"] is True and s["clusters"] == [{"cluster": "c1", "readAt": "2027-01-15T08:00:00Z",
                                                     "readAtMs": T}]
    assert s["groupsAtRisk"] == 3 and s["activeGroupsAtRisk"] == 1  # half (Stable); behind, empty: Empty
    assert s["topicsAtRisk"] == 4 and s["clustersAtRisk"] == 1
    assert s["recordsAtRisk"] == [sum(r["records_min"] for r in result["rows"].values()),
                                  sum(r["records_max"] for r in result["rows"].values())]
    assert s["bytesAtRisk"] is None  # nosize's bytes are not known
    assert s["rows"][0]["topic"] == "orders" and s["rows"][0]["group"] == "behind"  # most records first


def test_markdown_names_the_group_its_lag_and_the_records(result: dict[str, Any]) -> None:
    from reconciler.impact.report import render_markdown

    text = render_markdown({**result["summary"], "consumers": result["section"]})
    assert "`half` on `orders` (`c1`) is 5d–7d behind: retention 1d would delete ~900 records it has not read" in text
    assert "`half` on `logs` (`c1`) is 5d–7d behind: retention 1d12h would delete 350–450 records" in text
    assert "Offsets read 2027-01-15 08:00 UTC" in text
    assert text.index("Consumers at risk") < text.index("### By key")
