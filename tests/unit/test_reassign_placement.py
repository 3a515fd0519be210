"""reassign.placement: targets that move as few replicas as possible, guided by Kafka's own placement
(`AdminUtils.assignReplicasToBrokers`), rack-aware, with drains, lowered and raised replication factors."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.assignment import assign_replicas
from reconciler.reassign.placement import PlacementError, TopicPlacement, place

RACKS3 = {1: "a", 2: "b", 3: "c"}
TWO_RACKS = {1: "a", 2: "a", 3: "b", 4: "b"}


def targets(topic: TopicPlacement, brokers: dict[int, str | None], drain: frozenset[int] = frozenset()
            ) -> dict[int, tuple[int, ...]]:
    out = dict(topic.current)
    out.update({p.partition: p.target for p in place(topic, brokers, drain)})
    return out


def test_rf_1_to_3_of_a_topic_kafka_placed_gives_kafkas_three_replica_assignment() -> None:
    """A topic created with one replica (Kafka's placement, seeded with its name) raised to three gets exactly what
    Kafka places for three replicas: the leaders stay, the followers are Kafka's rack-aware ones."""
    now = assign_replicas(RACKS3, 6, 1, seed="orders")
    wanted = assign_replicas(RACKS3, 6, 3, seed="orders")
    got = targets(TopicPlacement("orders", now, 3, "rackAware"), dict(RACKS3))
    assert got == wanted
    assert all(got[p][0] == now[p][0] for p in now)  # no leader moves


def test_rf_raise_keeps_every_replica_and_adds_on_unused_racks() -> None:
    current = {0: (1,), 1: (3,), 2: (2,), 3: (4,)}
    got = targets(TopicPlacement("t", current, 2, "keep"), dict(TWO_RACKS))
    for p, replicas in got.items():
        assert replicas[0] == current[p][0] and len(replicas) == 2
        assert len({TWO_RACKS[b] for b in replicas}) == 2  # one replica on each rack, as Kafka places them


def test_drain_moves_only_the_drained_brokers_replicas_and_balances_them() -> None:
    brokers = {1: None, 2: None, 3: None, 4: None}
    current = assign_replicas(brokers, 12, 2, seed="events")
    got = targets(TopicPlacement("events", current), brokers, frozenset({4}))
    moved = [p for p in current if got[p] != current[p]]
    assert moved == [p for p in current if 4 in current[p]]
    for p in current:
        assert 4 not in got[p] and len(got[p]) == 2
        assert set(current[p]) - {4} <= set(got[p])  # every other replica stays
    load = Counter(b for r in got.values() for b in r)
    assert max(load.values()) - min(load.values()) <= 1, load


def test_a_drained_leader_is_replaced_by_the_replica_leading_fewest() -> None:
    current = {0: (4, 1), 1: (4, 2), 2: (1, 2), 3: (2, 1)}
    got = targets(TopicPlacement("t", current), {1: None, 2: None, 3: None, 4: None}, frozenset({4}))
    leaders = Counter(r[0] for r in got.values())
    assert got[2] == (1, 2) and got[3] == (2, 1)
    assert max(leaders.values()) - min(leaders.values()) <= 1, got


def test_lowered_rf_drops_a_follower_sharing_a_rack_and_never_the_leader() -> None:
    current = {0: (1, 3, 2)}  # 1 and 2 share rack a
    got = targets(TopicPlacement("t", current, 2, "keep"), dict(TWO_RACKS))
    assert got[0] == (1, 3)


def test_rack_aware_replaces_a_replica_sharing_a_rack() -> None:
    current = {0: (1, 2), 1: (3, 1)}  # p0: both on rack a
    placed = place(TopicPlacement("t", current, None, "rackAware"), dict(TWO_RACKS), frozenset())
    assert [(p.partition, p.target[0], TWO_RACKS[p.target[1]]) for p in placed] == [(0, 1, "b")]
    assert placed[0].reasons == ("brokers 1 and 2 share rack a",)
    # "keep" leaves it as it is: only a raised replication factor or a drain moves replicas
    assert place(TopicPlacement("t", current, None, "keep"), dict(TWO_RACKS), frozenset()) == []


def test_rack_aware_keeps_a_shared_rack_when_racks_run_out() -> None:
    current = {0: (1, 2, 3)}  # three replicas, two racks: one rack must hold two
    assert place(TopicPlacement("t", current, None, "rackAware"), dict(TWO_RACKS), frozenset()) == []


def test_kafkas_errors() -> None:
    with pytest.raises(PlacementError, match=r"^Replication factor: 4 larger than available brokers: 3\.$"):
        place(TopicPlacement("t", {0: (1,)}, 4), dict(RACKS3), frozenset())
    with pytest.raises(PlacementError, match="Not all brokers have rack information"):
        place(TopicPlacement("t", {0: (1,)}, 2, "rackAware"), {1: "a", 2: None}, frozenset())
    with pytest.raises(PlacementError, match="larger than available brokers: 2"):  # a drain leaves two
        place(TopicPlacement("t", {0: (1, 2, 3)}), dict(RACKS3), frozenset({3}))


def test_explicit_replicas_are_taken_as_written() -> None:
    placed = place(TopicPlacement("t", {0: (1, 2), 1: (2, 3)}, explicit={0: (1, 2), 1: (3, 2)}), dict(RACKS3),
                   frozenset())
    assert [(p.partition, p.target) for p in placed] == [(1, (3, 2))]


def test_a_broker_down_keeps_its_replicas() -> None:
    """A replica on a broker that is not registered (down, restarting) stays: a restart never moves data."""
    assert place(TopicPlacement("t", {0: (1, 9)}), {1: None, 2: None}, frozenset()) == []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_minimal_and_valid(data: st.DataObject) -> None:
    """Every target has the wanted count of distinct usable brokers, keeps every replica it may keep, and adds
    only what is missing (keep mode: nothing moves for nothing)."""
    n = data.draw(st.integers(2, 6))
    racks = data.draw(st.sampled_from([None, "ab", "abc"]))
    brokers = {b: (racks[b % len(racks)] if racks else None) for b in range(1, n + 1)}
    drain = frozenset(data.draw(st.sets(st.sampled_from(sorted(brokers)), max_size=n - 1)))
    usable = [b for b in brokers if b not in drain]
    partitions = data.draw(st.integers(1, 8))
    rf_now = data.draw(st.integers(1, n))
    current = assign_replicas(dict.fromkeys(brokers), partitions, rf_now, seed=str(data.draw(st.integers())))
    rf = data.draw(st.one_of(st.none(), st.integers(1, len(usable))))
    if rf is None and rf_now > len(usable):
        return
    got = targets(TopicPlacement("t", current, rf), brokers, drain)
    for p, now in current.items():
        want = rf or len(now)
        target = got[p]
        assert len(target) == want and len(set(target)) == want
        assert not set(target) & drain
        kept = [b for b in now if b not in drain]
        if want >= len(kept):
            assert set(kept) <= set(target)
            assert len(set(target) - set(now)) == want - len(kept)  # minimal
            if kept and kept[0] == now[0]:
                assert target[0] == now[0]  # the preferred leader stays
        else:
            assert set(target) <= set(kept)
            assert target[0] == kept[0] or kept[0] != now[0]  # the preferred leader stays unless drained
