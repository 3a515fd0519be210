"""Kafka's replica placement (`AdminUtils.assignReplicasToBrokers`), reproduced for topic creation.

Same placement rules and error messages as Kafka (ground truth §1.5.1), rack-unaware and rack-aware,
with one deliberate difference: Kafka draws the start index and the initial follower shift at random;
here they are derived from a seed (the topic name) with SHA-256, so the same manifests against the same
brokers always give the same plan (and the same plan id). A fixed start index behaves as in Kafka (it is
used for both the start index and the shift). Pure: standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache

from reconciler.catalog import Catalog
from reconciler.model import DEFAULT_ENTITY, DesiredState, SourceRef
from reconciler.units import parse_int

Assignment = dict[int, tuple[int, ...]]


class AssignmentError(ValueError):
    """Kafka would refuse this assignment; the message is Kafka's."""


def seeded_index(seed: str, salt: str, n: int) -> int:
    """A stable pseudo-random index in [0, n) (instead of Kafka's `Random.nextInt(n)`)."""
    digest = hashlib.sha256(f"{salt}\0{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    # Kafka's replicaIndex: followers sit 1..n-1 positions after the leader, rotated by the shift.
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Racks sorted by name, brokers of each rack by id, then one broker from each rack in turn."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    columns = [by_rack[r] for r in sorted(by_rack)]
    depth = max(len(c) for c in columns)
    return [c[i] for i in range(depth) for c in columns if i < len(c)]


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    seed: str,
    start_partition: int = 0,
    fixed_start_index: int | None = None,
    fixed_shift: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replica lists (first = preferred leader) of partitions `start_partition` .. `+ partitions - 1`.

    `brokers` maps broker id -> rack (None when the broker registered no rack). Brokers are taken in id order,
    as Kafka's AdminZkClient passes them. Rack-aware placement is used when every broker has a rack.
    """
    if partitions <= 0:
        raise AssignmentError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise AssignmentError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise AssignmentError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    racks = tuple(sorted(brokers.items(), key=lambda item: item[0]))
    with_rack = sum(r is not None for _, r in racks)
    if with_rack and with_rack != len(racks):
        raise AssignmentError("Not all brokers have rack information for replica rack aware assignment.")
    n = len(racks)
    if fixed_start_index is not None:
        start = fixed_start_index
        shift = fixed_start_index if fixed_shift is None else fixed_shift
    else:
        start = seeded_index(seed, "start", n)
        shift = seeded_index(seed, "shift", n) if fixed_shift is None else fixed_shift
    # the placement depends on the seed only through (start, shift): a fleet's topics share a few dozen
    return dict(_placement(racks, partitions, replication_factor, start, shift, start_partition))


@lru_cache(maxsize=4096)
def _placement(
    racks: tuple[tuple[int, str | None], ...], partitions: int, rf: int, start: int, shift: int, first_partition: int
) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """`assign_replicas` once the start index and shift are drawn (pure, so memoised)."""
    if racks[0][1] is not None:
        with_rack = {b: str(r) for b, r in racks}
        placed = _rack_aware(with_rack, rack_alternated(with_rack), partitions, rf, start, shift, first_partition)
    else:
        placed = _rack_unaware([b for b, _ in racks], partitions, rf, start, shift, first_partition)
    return tuple(placed.items())


def _rack_unaware(
    ordered: list[int], partitions: int, rf: int, start: int, shift: int, first_partition: int
) -> Assignment:
    n = len(ordered)
    out: Assignment = {}
    for p in range(max(0, first_partition), max(0, first_partition) + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        followers = (ordered[_replica_index(first, shift, j, n)] for j in range(rf - 1))
        out[p] = (ordered[first], *followers)
    return out


def _rack_aware(
    racks: Mapping[int, str], ordered: list[int], partitions: int, rf: int, start: int, shift: int,
    first_partition: int,
) -> Assignment:
    n = len(ordered)
    num_racks = len(set(racks.values()))
    out: Assignment = {}
    for p in range(max(0, first_partition), max(0, first_partition) + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = ordered[first]
        replicas = [leader]
        used_racks = {racks[leader]}
        used_brokers = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = ordered[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                rack = racks[broker]
                # Skip a broker whose rack already has a replica while some rack has none, and a broker
                # that already has one while some broker has none (Kafka's two skip rules).
                if (rack not in used_racks or len(used_racks) == num_racks) and (
                    broker not in used_brokers or len(used_brokers) == n
                ):
                    replicas.append(broker)
                    used_racks.add(rack)
                    used_brokers.add(broker)
                    break
        out[p] = tuple(replicas)
    return out


def assign_new_partitions(
    brokers: Mapping[int, str | None], existing: Mapping[int, tuple[int, ...]], target: int, *, seed: str,
    replication_factor: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Assignment of the partitions added when raising a topic from `len(existing)` to `target` partitions.

    As Kafka's `AdminZkClient.createPartitionsWithAssignment`: new ids continue from the current count, the
    replication factor is partition 0's, existing partitions are untouched, and the start index (also the
    shift) is the position of the first broker (in id order) whose id is >= partition 0's preferred leader.
    `replication_factor`: the one the topic is being changed to in the same plan (its reassignment moves the
    existing partitions there), instead of partition 0's.
    """
    if 0 not in existing or not existing[0]:
        raise AssignmentError("The topic has no partition 0; cannot take the replication factor from it.")
    current = len(existing)
    if target <= current:
        raise AssignmentError(f"Number of partitions must be larger than {current}.")
    leader = existing[0][0]
    ids = sorted(brokers)
    start = next((i for i, b in enumerate(ids) if b >= leader), 0)
    rf = replication_factor or len(existing[0])
    return assign_replicas(
        brokers, target - current, rf, seed=seed, start_partition=current, fixed_start_index=start
    )


def broker_default(desired: DesiredState, catalog: Catalog, key: str) -> tuple[int, SourceRef | None]:
    """What a topic created without a count gets (`num.partitions`, `default.replication.factor`), as a
    CreateTopics request does: the brokers' static server.properties, else Kafka's default; with the line
    that sets it (None: Kafka's default). Validation bounds it and the plan creates with it: the same number."""
    for name in (DEFAULT_ENTITY, "default"):
        raw = desired.static.get(name, {}).get(key)
        text = getattr(raw, "value", raw)
        number = parse_int(text, 32) if isinstance(text, str) else None
        if number is not None and number >= 0:
            return number, getattr(raw, "source", None)
    entry = catalog.broker(key, desired.cluster.kafka_version)
    number = parse_int(entry.default, 32) if entry is not None else None
    return (number if number is not None and number >= 0 else 1), None
