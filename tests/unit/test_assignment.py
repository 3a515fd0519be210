"""Kafka's replica placement (ground truth §1.5.1)."""

from __future__ import annotations

from collections import Counter

import pytest

from reconciler.assignment import (
    AssignmentError,
    assign_new_partitions,
    assign_replicas,
    rack_alternated,
)

# The worked example: 0->rack1, 1->rack3, 2->rack3, 3->rack2, 4->rack2, 5->rack1 => list 0,3,1,5,4,2.
RACKS: dict[int, str | None] = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_lists() -> None:
    assert rack_alternated({b: r for b, r in RACKS.items() if r}) == [0, 3, 1, 5, 4, 2]
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_worked_example_exactly() -> None:
    got = assign_replicas(RACKS, 7, 3, seed="ignored", fixed_start_index=0)
    assert got == {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        6: (0, 4, 2),
    }


def _kafka_unaware(
    n_brokers: int, partitions: int, rf: int, start: int, shift: int
) -> dict[int, tuple[int, ...]]:
    """The ground-truth formula, written independently of the module."""
    out = {}
    for p in range(partitions):
        if p > 0 and p % n_brokers == 0:
            shift += 1
        first = (p + start) % n_brokers
        out[p] = (first, *((first + 1 + (shift + j) % (n_brokers - 1)) % n_brokers for j in range(rf - 1)))
    return out


@pytest.mark.parametrize(
    "n,partitions,rf,start,shift",
    [(5, 10, 3, 0, 0), (5, 17, 3, 2, 4), (3, 9, 3, 1, 0), (6, 24, 2, 5, 3), (4, 4, 1, 0, 2)],
)
def test_rack_unaware_formula(n: int, partitions: int, rf: int, start: int, shift: int) -> None:
    brokers: dict[int, str | None] = dict.fromkeys(range(n))
    got = assign_replicas(brokers, partitions, rf, seed="t", fixed_start_index=start, fixed_shift=shift)
    assert got == _kafka_unaware(n, partitions, rf, start, shift)


def test_rack_unaware_kafka_test_vector() -> None:
    # AdminUtilsTest.testReplicaAssignment: brokers 0..4, 10 partitions, RF 3, fixed start index 0.
    got = assign_replicas(dict.fromkeys(range(5)), 10, 3, seed="x", fixed_start_index=0)
    assert got == {
        0: (0, 1, 2),
        1: (1, 2, 3),
        2: (2, 3, 4),
        3: (3, 4, 0),
        4: (4, 0, 1),
        5: (0, 2, 3),
        6: (1, 3, 4),
        7: (2, 4, 0),
        8: (3, 0, 1),
        9: (4, 1, 2),
    }


def test_brokers_taken_in_id_order_whatever_the_mapping_order() -> None:
    a = assign_replicas({3: None, 1: None, 2: None}, 6, 2, seed="orders")
    b = assign_replicas({1: None, 2: None, 3: None}, 6, 2, seed="orders")
    assert a == b


@pytest.mark.parametrize(
    "brokers,partitions,rf,message",
    [
        ({1: None}, 0, 1, "Number of partitions must be larger than 0."),
        ({1: None}, -1, 1, "Number of partitions must be larger than 0."),
        ({1: None}, 1, 0, "Replication factor must be larger than 0."),
        ({1: None, 2: None}, 1, 3, "Replication factor: 3 larger than available brokers: 2."),
        ({1: "a", 2: None}, 1, 1, "Not all brokers have rack information for replica rack aware assignment."),
    ],
)
def test_errors_are_kafkas(brokers: dict[int, str | None], partitions: int, rf: int, message: str) -> None:
    with pytest.raises(AssignmentError) as exc:
        assign_replicas(brokers, partitions, rf, seed="t")
    assert str(exc.value) == message


def test_deterministic_per_seed_and_varies_between_topics() -> None:
    brokers: dict[int, str | None] = dict.fromkeys(range(1, 7))
    first = assign_replicas(brokers, 12, 3, seed="orders")
    assert first == assign_replicas(brokers, 12, 3, seed="orders")
    leaders = {assign_replicas(brokers, 1, 3, seed=f"topic-{i}")[0][0] for i in range(40)}
    assert len(leaders) > 1  # the seed spreads the first leader like Kafka's random start index


@pytest.mark.parametrize("racks", [False, True])
def test_leaders_even_and_replicas_distinct(racks: bool) -> None:
    brokers: dict[int, str | None] = {b: (f"r{b % 3}" if racks else None) for b in range(9)}
    got = assign_replicas(brokers, 36, 3, seed="events")
    assert sorted(got) == list(range(36))
    leaders = Counter(r[0] for r in got.values())
    assert set(leaders.values()) == {4}  # every broker leads exactly 36/9 partitions
    for replicas in got.values():
        assert len(set(replicas)) == 3
        if racks:
            assert len({brokers[b] for b in replicas}) == 3  # one replica per rack


def test_rack_aware_more_replicas_than_racks_uses_every_broker_once() -> None:
    brokers: dict[int, str | None] = {0: "a", 1: "a", 2: "b", 3: "b"}
    for replicas in assign_replicas(brokers, 8, 4, seed="x").values():
        assert sorted(replicas) == [0, 1, 2, 3]


def test_add_partitions_continue_from_current_count() -> None:
    brokers: dict[int, str | None] = dict.fromkeys(range(5))
    existing = assign_replicas(brokers, 3, 3, seed="x", fixed_start_index=2)
    added = assign_new_partitions(brokers, existing, 10, seed="x")
    assert sorted(added) == list(range(3, 10))
    assert all(len(r) == 3 for r in added.values())
    # Kafka: start index = position of the first broker >= partition 0's leader, used as shift too.
    leader0 = existing[0][0]
    assert added == assign_replicas(brokers, 7, 3, seed="y", start_partition=3, fixed_start_index=leader0)


def test_add_partitions_takes_rf_from_partition_0_and_errors() -> None:
    brokers: dict[int, str | None] = {1: None, 2: None, 3: None}
    added = assign_new_partitions(brokers, {0: (2, 3), 1: (3, 1)}, 3, seed="t")
    assert list(added) == [2] and len(added[2]) == 2
    with pytest.raises(AssignmentError):
        assign_new_partitions(brokers, {1: (1,)}, 3, seed="t")
    with pytest.raises(AssignmentError, match="larger than available brokers"):
        assign_new_partitions({1: None}, {0: (1, 2)}, 2, seed="t")
