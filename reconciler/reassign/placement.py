"""Where a topic's replicas should be, moving as few as possible (PURE).

Kafka's own tool proposes a whole new assignment (`kafka-reassign-partitions.sh --generate` calls
`AdminUtils.assignReplicasToBrokers` for every partition, moving most replicas of a topic). Here every replica
that may stay stays, and the replicas to add are chosen with Kafka's placement as the guide:

* the guide is what `AdminUtils.assignReplicasToBrokers` (reconciler/assignment.py, seeded with the topic name as
  for a topic created) would place on the brokers that may hold replicas (registered, not drained); a topic the
  reconciler created with one replica and raised to three gets exactly Kafka's three-replica assignment;
* kept: every current replica except those on drained brokers (a broker merely down keeps its replicas: a
  restart must not move data), and with `placement: rackAware` except one of two replicas sharing a rack while
  another rack has a usable broker; a lowered replication factor drops followers (never the preferred leader
  while another may go), a replica sharing a rack first, then the broker holding most of the topic's replicas;
* added, for a raised replication factor or a replica taken away: a broker on a rack the partition does not use
  yet (when every usable broker has a rack, Kafka's rule), then the guide's replicas for that partition in the
  guide's order, then the broker holding fewest of the topic's replicas;
* the preferred leader stays; when it goes, the kept or added replica that leads fewest of the topic's
  partitions leads (Kafka balances leaders the same way, round-robin).

Explicit `replicas:` are taken as written. Errors carry Kafka's own messages. Standard library and the core only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.assignment import AssignmentError, assign_replicas


class PlacementError(AssignmentError):
    """The replicas cannot be placed as declared; the message says why (Kafka's words where Kafka has them)."""


@dataclass(frozen=True, slots=True)
class TopicPlacement:
    """What placement needs of one topic: its replicas per partition as they are (for a partition already moving,
    as they will be), the replication factor wanted (None: each partition keeps its count), the placement mode
    and explicit replicas."""

    name: str
    current: Mapping[int, tuple[int, ...]]
    replication_factor: int | None = None
    mode: str = "keep"  # "keep" or "rackAware"
    explicit: Mapping[int, tuple[int, ...]] | None = None


@dataclass(frozen=True, slots=True)
class Placed:
    """A partition whose replicas change: the target (preferred leader first) and why."""

    partition: int
    target: tuple[int, ...]
    reasons: tuple[str, ...]


def usable_brokers(brokers: Mapping[int, str | None], drain: frozenset[int]) -> dict[int, str | None]:
    """The brokers that may receive replicas: registered and not drained, in id order."""
    return {b: rack for b, rack in sorted(brokers.items()) if b not in drain}


def rack_aware(usable: Mapping[int, str | None], mode: str) -> bool:
    """Whether new replicas are placed rack-aware: every usable broker has a rack (as Kafka's AdminUtils). With
    `rackAware` declared, some racks but not all is Kafka's error."""
    with_rack = sum(r is not None for r in usable.values())
    if mode == "rackAware" and with_rack and with_rack != len(usable):
        raise PlacementError("Not all brokers have rack information for replica rack aware assignment.")
    return bool(usable) and with_rack == len(usable)


def place(topic: TopicPlacement, brokers: Mapping[int, str | None], drain: frozenset[int]) -> list[Placed]:
    """The partitions of `topic` whose replicas change, with their targets; [] when none does."""
    if topic.explicit is not None:
        return [Placed(p, tuple(r), ("replicas declared",)) for p, r in sorted(topic.explicit.items())
                if p in topic.current and tuple(r) != topic.current[p]]
    racks: Mapping[int, str | None] = brokers
    wanted = {p: topic.replication_factor or len(r) for p, r in topic.current.items()}
    if not any(len(r) != wanted[p] or drain.intersection(r) for p, r in topic.current.items()) and (
            topic.mode != "rackAware" or not _shared_racks(topic.current, racks)):
        return []  # nothing to move: whatever the brokers registered now (a cluster down is no reason to fail)
    usable = usable_brokers(brokers, drain)
    racked = rack_aware(usable, topic.mode)
    most = max(wanted.values(), default=0)
    if most > len(usable):
        raise PlacementError(f"Replication factor: {most} larger than available brokers: {len(usable)}.")
    guide = assign_replicas({b: usable[b] if racked else None for b in usable}, len(topic.current),
                            max(1, min(most, len(usable))), seed=topic.name,
                            start_partition=min(topic.current))
    kept: dict[int, list[int]] = {}
    reasons: dict[int, list[str]] = {}
    for p, replicas in sorted(topic.current.items()):
        why: list[str] = [f"broker {b} drained" for b in replicas if b in drain]
        stay = [b for b in replicas if b not in drain]
        if racked and topic.mode == "rackAware":
            stay = _spread(stay, racks, usable, why)
        if len(replicas) != wanted[p]:
            why.append(f"replication factor {len(replicas)} -> {wanted[p]}")
        kept[p], reasons[p] = stay, why
    load = Counter(b for stay in kept.values() for b in stay)
    for p, stay in sorted(kept.items()):
        while len(stay) > wanted[p]:
            gone = _dropped(stay, racks if racked else {}, load)
            stay.remove(gone)
            load[gone] -= 1
    for p, stay in sorted(kept.items()):
        while len(stay) < wanted[p]:
            added = _added(stay, usable, racked, guide.get(p, ()), load)
            stay.append(added)
            load[added] += 1
    leaders = Counter(stay[0] for p, stay in kept.items() if stay and stay[0] == topic.current[p][0])
    out = []
    for p, stay in sorted(kept.items()):
        if stay and stay[0] != topic.current[p][0]:
            lead = min(stay, key=lambda b: (leaders[b], stay.index(b)))
            stay.remove(lead)
            stay.insert(0, lead)
            leaders[lead] += 1
        if tuple(stay) != topic.current[p]:
            out.append(Placed(p, tuple(stay), tuple(reasons[p])))
    return out


def _shared_racks(current: Mapping[int, tuple[int, ...]], racks: Mapping[int, str | None]) -> bool:
    """Whether some partition has two replicas on one known rack."""
    for replicas in current.values():
        known = [racks.get(b) for b in replicas if racks.get(b) is not None]
        if len(known) != len(set(known)):
            return True
    return False


def _spread(stay: list[int], racks: Mapping[int, str | None], usable: Mapping[int, str | None],
            why: list[str]) -> list[int]:
    """`stay` without replicas that share a rack with an earlier one, as many as usable brokers on racks the
    partition does not use can replace (the rest stay: some racks hold two when racks run out)."""
    first: list[int] = []
    twins: list[tuple[int, int]] = []  # (replica, the earlier one on its rack)
    for b in stay:
        twin = next((k for k in first if racks.get(b) is not None and racks.get(k) == racks.get(b)), None)
        if twin is None:
            first.append(b)
        else:
            twins.append((b, twin))
    used = {racks.get(k) for k in first}
    free = {rack for u, rack in usable.items() if u not in stay and rack not in used}
    gone = {b for b, _ in twins[:len(free)]}
    why.extend(f"brokers {twin} and {b} share rack {racks.get(b)}" for b, twin in twins[:len(free)])
    return [b for b in stay if b not in gone]


def _dropped(stay: list[int], racks: Mapping[int, str | None], load: Counter[int]) -> int:
    """The replica a lowered replication factor removes: a follower (the preferred leader stays while a follower
    may go), one sharing a rack first, then the broker holding most of the topic, then the last listed."""
    followers = stay[1:] or stay
    shared = {b for b in followers if racks.get(b) is not None
              and sum(racks.get(k) == racks.get(b) for k in stay) > 1}
    return max(followers, key=lambda b: (b in shared, load[b], stay.index(b)))


def _added(stay: list[int], usable: Mapping[int, str | None], racked: bool, guide: tuple[int, ...],
           load: Counter[int]) -> int:
    """The broker a partition gains: on a rack it does not use yet, the guide's next one for it, else the least
    loaded, then by id."""
    used = {usable.get(b) for b in stay}
    candidates = [b for b in usable if b not in stay]

    def rank(b: int) -> tuple[bool, bool, int, int, int]:
        return (racked and usable[b] in used, b not in guide, guide.index(b) if b in guide else 0, load[b], b)

    return min(candidates, key=rank)
