"""The fleet impact counts the bytes replica moves copy as the plan does (impact/moves.py on a real local Spark
against reconciler/reassign/ on the same live state and manifests).

One cluster, brokers 1-4 on racks a, a, b, b, broker 4 drained:
  grow     6 partitions, one replica each, declared replicationFactor 3 (keep): each gains two (one gains a
           third: its replica sits on the drained broker)
  racked   2 replicas both on rack a in partition 0, placement rackAware: one is replaced on rack b
  pinned   explicit replicas, partition 1 declared elsewhere
  shrink   replication factor 3 -> 2: replicas change, nothing is copied
  other    undeclared, a replica on broker 4: moved off by the drain
  still    declared, nothing to change
Sizes are known for every partition but one (counted as unknown by both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.model import (
    AdminClientSpec,
    BrokerRegistration,
    ClusterSpec,
    DesiredState,
    DesiredTopic,
    LiveState,
    LiveTopic,
    PlacementSpec,
    ReassignmentSpec,
    ZooKeeperSpec,
)
from reconciler.reassign import plan_reassignment
from reconciler.reassign.traffic import traffic

pytestmark = [pytest.mark.spark]

RACKS = {1: "a", 2: "a", 3: "b", 4: "b"}
LIVE = {
    "grow": {0: (1,), 1: (2,), 2: (3,), 3: (4,), 4: (1,), 5: (3,)},
    "racked": {0: (1, 2), 1: (1, 3)},
    "pinned": {0: (1, 3), 1: (2, 3)},
    "shrink": {0: (1, 2, 3), 1: (3, 1, 2)},
    "other": {0: (4, 1), 1: (2, 3)},
    "still": {0: (1, 3)},
}


def desired() -> DesiredState:
    def topic(name: str, rf: int | None = None, placement: str | None = None,
              replicas: dict[int, tuple[int, ...]] | None = None) -> DesiredTopic:
        return DesiredTopic(name, None, rf, {}, placement=placement, replicas=replicas)

    cluster = ClusterSpec("m1", "3.9", ZooKeeperSpec("zk:2181/m1"), (1, 2, 3, 4), admin=AdminClientSpec(("b:9092",)),
                          placement=PlacementSpec(drain=(4,)), reassignment=ReassignmentSpec(throttle=1 << 20))
    topics = [topic("grow", 3), topic("racked", 2, "rackAware"), topic("pinned", replicas={0: (1, 3), 1: (3, 1)}),
              topic("shrink", 2), topic("still", 2)]
    return DesiredState(cluster, {}, {t.name: t for t in topics})


def live(sizes: dict[tuple[str, int], int]) -> LiveState:
    return LiveState("m1", {b: BrokerRegistration(b, (f"PLAINTEXT://b{b}:9092",), {}, r) for b, r in RACKS.items()},
                     {n: LiveTopic(n, a, 1) for n, a in LIVE.items()}, {}, reassignments={}, partition_sizes=sizes)


def test_impact_counts_the_bytes_the_plan_moves(spark: Any, tmp_path: Path) -> None:
    from reconciler.impact.inventory import live_rows, read_inventory, write_tables
    from reconciler.impact.moves import assess_moves, markdown

    sizes = {(t, p): 1000 * (i + 1) + p for i, (t, parts) in enumerate(sorted(LIVE.items())) for p in parts}
    del sizes[("grow", 5)]  # not known: counted apart by both
    state, now = desired(), live(sizes)
    r, diags = plan_reassignment(state, now)
    assert r is not None and [d for d in diags if d.severity == "error"] == []
    t = traffic(r.moves)

    rows = live_rows(now)
    rows["sizes"] = [("m1", topic, p, n) for (topic, p), n in sorted(sizes.items())]
    write_tables(spark, rows, tmp_path / "inv")
    found = assess_moves(spark, read_inventory(spark, tmp_path / "inv"), {"m1": state})
    assert found is not None
    (c,) = found["byCluster"]
    assert c["partitions"] == len(r.moves) == 11
    assert c["topics"] == len({m.topic for m in r.moves}) == 5
    assert c["replicasAdded"] == sum(len(m.adding) for m in r.moves)
    assert c["bytes"] == t.total and c["bytesUnknown"] == t.unknown == 1
    assert c["mostSentByOneBroker"] == max(t.sends.values())
    assert c["atLeastSeconds"] == round(max(t.sends.values()) / (1 << 20), 1)
    assert "| `m1` | 5 | 11 |" in "\n".join(markdown(found))


def test_nothing_declared_to_move_is_not_assessed(spark: Any, tmp_path: Path) -> None:
    from reconciler.impact.inventory import live_rows, read_inventory, write_tables
    from reconciler.impact.moves import assess_moves

    state = DesiredState(ClusterSpec("m1", "3.9", ZooKeeperSpec("zk:2181/m1"), (1, 2, 3, 4)), {}, {})
    write_tables(spark, live_rows(live({})), tmp_path / "inv")
    assert assess_moves(spark, read_inventory(spark, tmp_path / "inv"), {"m1": state}) is None
