"""The plan's reassignment: moves planned from the manifests and the live state (in flight, someone else's, left
behind), what they copy per broker, Kafka's throttle configs, the record, JSON round trip and rendering."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

from reconciler.diff import build_plan
from reconciler.model import (
    AdminClientSpec,
    BrokerRegistration,
    ClusterSpec,
    DesiredState,
    DesiredTopic,
    InFlightMove,
    LiveState,
    LiveTopic,
    PlacementSpec,
    ReassignmentSpec,
    SourceRef,
    ZooKeeperSpec,
)
from reconciler.plan import PartitionMove, Plan, Reassignment, plan_from_json, plan_to_json
from reconciler.reassign import facts_needed, plan_reassignment
from reconciler.reassign.record import extended, parse, to_json
from reconciler.reassign.throttles import throttles
from reconciler.reassign.traffic import estimated_seconds, steps, traffic
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from reconciler.risk import annotate

RF_SRC = SourceRef("clusters/c1/topics.yaml", 4)
MiB = 1 << 20


def cluster(*, drain: tuple[int, ...] = (), admin: bool = True, throttle: int = 10 * MiB,
            max_partitions: int = 50, max_bytes: int | None = None) -> ClusterSpec:
    return ClusterSpec(
        name="c1", kafka_version="3.9", zookeeper=ZooKeeperSpec("zk:2181/kafka"), brokers=(1, 2, 3, 4),
        source=SourceRef("clusters/c1/cluster.yaml", 1),
        admin=AdminClientSpec(("b1:9092",)) if admin else None,
        placement=PlacementSpec(drain=drain, drain_source=SourceRef("clusters/c1/cluster.yaml", 9) if drain else None),
        reassignment=ReassignmentSpec(throttle, max_partitions, max_bytes))


def desired(topics: Mapping[str, tuple[int | None, str | None]], **kw: Any) -> DesiredState:
    return DesiredState(cluster(**kw), {}, {name: DesiredTopic(name, None, rf, {}, SourceRef("t.yaml", 3), None, RF_SRC,
                                                                placement)
                                            for name, (rf, placement) in topics.items()})


def live(topics: Mapping[str, Mapping[int, tuple[int, ...]]], *, racks: Mapping[int, str | None] | None = None,
         moving: Mapping[tuple[str, int], InFlightMove] | None = None, record: Mapping[str, Any] | None = None,
         sizes: Mapping[tuple[str, int], int] | None = None) -> LiveState:
    racks = racks if racks is not None else {1: "a", 2: "b", 3: "c", 4: "c"}
    return LiveState("c1", {b: BrokerRegistration(b, (f"PLAINTEXT://b{b}:9092",), {}, r) for b, r in racks.items()},
                     {n: LiveTopic(n, a, 3) for n, a in topics.items()}, {}, reassignments=moving,
                     partition_sizes=sizes, reassignment_record=record)


def test_rf_change_is_planned_as_moves_with_bytes_per_broker() -> None:
    want = desired({"orders": (2, None)})
    now = live({"orders": {0: (1,), 1: (2,)}}, sizes={("orders", 0): 64 * MiB, ("orders", 1): 32 * MiB})
    plan, diags = build_plan(want, now)
    assert diags == []
    r = plan.reassignment
    assert r is not None and [m.name for m in r.moves] == ["orders-0", "orders-1"]
    assert all(len(m.target) == 2 and m.target[0] == m.current[0] for m in r.moves)
    assert r.moves[0].reasons == ("replication factor 1 -> 2",) and r.moves[0].source == RF_SRC
    t = traffic(r.moves)
    assert t.sends == {1: 64 * MiB, 2: 32 * MiB} and t.total == 96 * MiB
    assert estimated_seconds(t, r.throttle) == 6.4  # the busiest broker: 64 MiB at 10 MiB/s
    assert plan.counts.partitions_moved == 2 and not plan.is_empty


def test_no_admin_api_is_an_error_naming_it() -> None:
    _, diags = build_plan(desired({"t": (2, None)}, admin=False), live({"t": {0: (1,)}}))
    assert [d.severity for d in diags] == ["error"] and "spec.adminClient" in diags[0].message


def test_unplaceable_is_an_error_at_the_replication_factor() -> None:
    _, diags = build_plan(desired({"t": (4, None)}, drain=(4,)), live({"t": {0: (1,)}}))
    assert [(d.severity, d.source, d.key) for d in diags] == [("error", RF_SRC, "replicationFactor")]
    assert "Replication factor: 4 larger than available brokers: 3." in diags[0].message


def test_drain_covers_undeclared_and_internal_topics() -> None:
    plan, _ = build_plan(desired({}, drain=(4,)), live({"__consumer_offsets": {0: (4,), 1: (1,)}, "x": {0: (2, 4)}}))
    assert plan.reassignment is not None
    assert [(m.name, 4 in m.target) for m in plan.reassignment.moves] == [("__consumer_offsets-0", False),
                                                                          ("x-0", False)]


def test_a_move_in_flight_is_waited_for_and_someone_elses_left_alone() -> None:
    record = to_json(extended(None, plan_id="p1", user="u", time="t", throttle=MiB, brokers=[1, 2], topics=["t"],
                              moves=[PartitionMove("t", 0, (1,), (1, 2))]))
    moving = {("t", 0): InFlightMove("t", 0, (1, 2), (2,), ()), ("t", 1): InFlightMove("t", 1, (3, 2), (3,), (2,))}
    want = desired({"t": (2, None)})
    r, diags = plan_reassignment(want, live({"t": {0: (1, 2), 1: (3, 2), 2: (1,)}}, moving=moving, record=record))
    assert r is not None and r.started_by == "p1" and r.leftover == ("brokers/1", "brokers/2", "topics/t")
    assert [(m.name, m.in_flight, m.current, m.target) for m in r.moves] == [
        ("t-0", True, (1,), (1, 2)), ("t-2", False, (1,), r.moves[1].target)]
    assert [d.severity for d in diags] == ["warning"] and "t-1" in diags[0].message


def test_throttles_left_behind_are_planned_for_removal() -> None:
    record = to_json(extended(None, plan_id="p1", user="u", time="t", throttle=MiB, brokers=[3], topics=["t"],
                              moves=[]))
    r, _ = plan_reassignment(desired({"t": (None, None)}), live({"t": {0: (1,)}}, record=record, moving={}))
    assert r is not None and r.moves == () and r.leftover == ("brokers/3", "topics/t")


def test_facts_are_needed_only_when_something_would_move_or_a_throttle_is_set() -> None:
    assert not facts_needed(desired({"t": (1, None)}), live({"t": {0: (1,)}}))
    assert facts_needed(desired({"t": (2, None)}), live({"t": {0: (1,)}}))
    assert facts_needed(desired({"t": (None, "rackAware")}), live({"t": {0: (3, 4)}}))  # 3 and 4 share rack c


def test_kafkas_throttle_configs() -> None:
    """As ReassignPartitionsCommand.calculateLeaderThrottles / calculateFollowerThrottles: sorted string sets."""
    moves = [PartitionMove("orders", 0, (1,), (1, 2, 3)), PartitionMove("orders", 10, (2, 1), (2, 3)),
             PartitionMove("logs", 1, (3,), (3,))]
    th = throttles(moves, 1000)
    assert th.topic_configs() == {
        "logs": {"leader.replication.throttled.replicas": "1:3", "follower.replication.throttled.replicas": ""},
        "orders": {"leader.replication.throttled.replicas": "0:1,10:1,10:2",
                   "follower.replication.throttled.replicas": "0:2,0:3,10:3"}}
    assert th.brokers == (1, 2, 3)
    assert th.broker_configs()[2] == {"leader.replication.throttled.rate": "1000",
                                      "follower.replication.throttled.rate": "1000"}


def test_steps_bound_partitions_and_bytes() -> None:
    moves = [PartitionMove("t", p, (1,), (1, 2), size) for p, size in enumerate([5, 5, 20, 1, 1])]
    assert [[m.partition for m in s] for s in steps(moves, 2, None)] == [[0, 1], [2, 3], [4]]
    assert [[m.partition for m in s] for s in steps(moves, 10, 10)] == [[0, 1], [2], [3, 4]]


def test_record_round_trip_and_hand_edits_are_not_trusted() -> None:
    rec = extended(None, plan_id="p", user="u", time="t", throttle=5, brokers=[2, 1], topics=["a"],
                   moves=[PartitionMove("a", 3, (1,), (1, 2))])
    assert parse(json.loads(json.dumps(to_json(rec)))) == rec
    assert parse({"version": 1, "planId": 7}) is None and parse({"planId": "p"}) is None


def _plan() -> Plan:
    want = desired({"orders": (3, None)})
    now = live({"orders": {0: (1,), 1: (2,)}}, racks={1: "a", 2: "b", 3: "c", 4: "c"},
               sizes={("orders", 0): 3 * MiB, ("orders", 1): MiB})
    plan, _ = build_plan(want, now)
    return annotate(plan, want, now)


def test_plan_json_round_trip_and_schema() -> None:
    plan = _plan()
    text = plan_to_json(plan)
    schema = json.loads(Path("reconciler/data/plan-file.json").read_text())
    jsonschema.validate(json.loads(text), schema)
    again = plan_from_json(text)
    assert again == plan and again.plan_id == plan.plan_id
    assert plan.reassignment is not None and plan.reassignment.risk == "disruptive"


def test_rendered_with_bytes_per_broker_and_the_throttle() -> None:
    plan = _plan()
    text = render_text([plan])
    assert "reassignment: 2 partitions of 1 topic move, 8 MiB to copy, throttled at 10 MiB/s" in text
    assert "orders-0: [1] -> [1," in text and "(3 MiB; replication factor 1 -> 3)" in text
    assert "leader/follower.replication.throttled.rate=10485760 on 4 brokers 1,2,3,4" in text
    assert "      1       1 MiB     6 MiB" in text  # broker, receives, sends
    md = render_markdown([plan])
    assert "| Broker | Receives | Sends |" in md and "| 1 | 1 MiB | 6 MiB |" in md
    assert "@@ replicas to move @@" in md and "2 partitions to move" in md


def test_reassignment_keeps_older_plan_ids() -> None:
    """A plan without a reassignment writes no `reassignment` key: ids of older plans do not change."""
    plan, _ = build_plan(desired({"t": (1, None)}), live({"t": {0: (1,)}}))
    assert plan.reassignment is None and "reassignment" not in plan_to_json(plan)
    assert Reassignment().pending == ()


def test_a_declared_throttle_where_the_reassignment_sets_its_own_is_an_error() -> None:
    """kafka-reassign-partitions.sh would overwrite it and --verify remove it: the plan says so at the key."""
    from reconciler.model import DesiredEntity, DesiredValue, EntityRef

    src = SourceRef("clusters/c1/brokers.yaml", 7)
    ref = EntityRef("brokers", "1")
    want = desired({"t": (2, None)})
    want = DesiredState(want.cluster, {ref: DesiredEntity(ref, {"follower.replication.throttled.rate":
                                                                DesiredValue("1000", src)})}, want.topics)
    _, diags = plan_reassignment(want, live({"t": {0: (1,)}}))
    assert [(d.severity, d.source, d.key) for d in diags] == [("error", src, "follower.replication.throttled.rate")]
    # the cluster default is no conflict: the per-broker rates the reassignment sets win over it while it runs
    default = EntityRef("brokers", "<default>")
    at_default = DesiredState(want.cluster, {default: DesiredEntity(default, {
        "follower.replication.throttled.rate": DesiredValue("1000", src)})}, want.topics)
    _, fine = plan_reassignment(at_default, live({"t": {0: (1,)}}))
    assert fine == []


def _every_topic_placed(want: DesiredState, now: LiveState,
                        moving: Mapping[tuple[str, int], InFlightMove]) -> list[tuple[str, Any]]:
    """`requested_moves` the long way (before its scope left out the topics that stay): `place` on every topic."""
    from reconciler.reassign.placement import PlacementError, TopicPlacement, place

    brokers = {b: reg.rack for b, reg in now.brokers.items()}
    drain = frozenset(want.cluster.placement.drain)
    out: list[tuple[str, Any]] = []
    for name, topic in sorted(now.topics.items()):
        current = {p: moving[(name, p)].target if (name, p) in moving else r for p, r in topic.assignment.items()}
        wanted = want.topics.get(name)
        if wanted is not None:
            explicit = None if wanted.replicas is None else {p: r for p, r in wanted.replicas.items() if p in current}
            tp = TopicPlacement(name, current, wanted.replication_factor,
                                wanted.placement or want.cluster.placement.default, explicit)
        elif want.cluster.placement.drain:
            tp = TopicPlacement(name, current)
        else:
            continue
        try:
            placed: Any = place(tp, brokers, drain)
        except PlacementError as exc:
            placed = str(exc)
        if placed:
            out.append((name, placed))
    return out


def test_topics_left_out_of_placement_are_those_place_would_not_move() -> None:
    """The fleet's shortcut (`reassign._stays`): a topic is left out only when `place` finds nothing to move in it,
    whatever the drain, racks, declared replicas, replication factor or moves in flight (random cases)."""
    import random

    from reconciler.model import PlacementSpec
    from reconciler.reassign import requested_moves

    rng = random.Random(44)
    for _ in range(600):
        racks = {b: rng.choice(("a", "b", "c", None) if rng.random() < 0.2 else ("a", "b", "c")) for b in range(1, 6)}
        drain = tuple(rng.sample(range(1, 6), rng.choice((0, 0, 1))))
        default = rng.choice(("keep", "keep", "rackAware"))
        topics: dict[str, DesiredTopic] = {}
        assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        moving: dict[tuple[str, int], InFlightMove] = {}
        for t in range(rng.randint(1, 6)):
            name = f"t{t}"
            assignments[name] = {p: tuple(rng.sample(range(1, 6), rng.randint(1, 3))) for p in range(rng.randint(1, 3))}
            if rng.random() < 0.15:
                p = rng.choice(list(assignments[name]))
                target = tuple(rng.sample(range(1, 6), rng.randint(1, 3)))
                moving[(name, p)] = InFlightMove(name, p, target, target, ())
            if rng.random() < 0.8:
                replicas = ({0: tuple(rng.sample(range(1, 6), 2))} if rng.random() < 0.15 else None)
                topics[name] = DesiredTopic(name, None, rng.choice((None, 1, 2, 3)), {}, SourceRef("t.yaml", 3),
                                            placement=rng.choice((None, None, "keep", "rackAware")), replicas=replicas)
        want = DesiredState(ClusterSpec(name="c1", kafka_version="3.9", zookeeper=ZooKeeperSpec("zk:2181/kafka"),
                                        brokers=(1, 2, 3, 4, 5), placement=PlacementSpec(default, drain)), {}, topics)
        now = live(assignments, racks=racks)
        for inflight in ({}, moving):
            got = [(n, f if isinstance(f, list) else str(f)) for n, f in requested_moves(want, now, inflight)]
            assert got == _every_topic_placed(want, now, inflight)
