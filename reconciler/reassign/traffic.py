"""What a reassignment copies, per broker, and how long that takes at its throttle (PURE).

A replica added to a partition fetches the whole partition from the partition's leader (Kafka's follower
replication), so each broker gaining a replica receives the partition's size and the leader sends it once per new
replica. The throttle applies per broker and direction (`ReplicationQuotaManager`: the leader's outbound rate
`leader.replication.throttled.rate`, the follower's inbound `follower.replication.throttled.rate`), so the moves
take at least the largest bytes any one broker sends or receives divided by the throttle — the estimate shown
(records produced meanwhile, and the log start moving, make the real figure differ). Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reconciler.plan import PartitionMove


@dataclass(frozen=True, slots=True)
class Traffic:
    """Bytes each broker receives and sends; `unknown`: moves that copy data but whose size was not read."""

    receives: dict[int, int]
    sends: dict[int, int]
    unknown: int = 0

    @property
    def total(self) -> int:
        """Bytes copied in all (what every new replica receives)."""
        return sum(self.receives.values())

    @property
    def brokers(self) -> list[int]:
        return sorted(set(self.receives) | set(self.sends))

    def busiest(self) -> int:
        """The most bytes one broker sends or receives."""
        return max([*self.receives.values(), *self.sends.values(), 0])


def sender(move: PartitionMove) -> int:
    """The broker the new replicas copy from: the partition's leader, its preferred leader when moves start."""
    return move.current[0]


def traffic(moves: Iterable[PartitionMove]) -> Traffic:
    receives: Counter[int] = Counter()
    sends: Counter[int] = Counter()
    unknown = 0
    for move in moves:
        added = move.adding
        if not added:
            continue  # a new order of the same replicas: the preferred leader changes, nothing is copied
        if move.size_bytes is None:
            unknown += 1
            for b in added:
                receives[b] += 0
            sends[sender(move)] += 0
            continue
        for b in added:
            receives[b] += move.size_bytes
        sends[sender(move)] += move.size_bytes * len(added)
    return Traffic(dict(sorted(receives.items())), dict(sorted(sends.items())), unknown)


def estimated_seconds(t: Traffic, throttle: int) -> float:
    """At least this long at `throttle` bytes/s (the busiest broker's bytes over the rate)."""
    return t.busiest() / throttle if throttle > 0 else 0.0


def steps(moves: Sequence[PartitionMove], max_partitions: int, max_bytes: int | None) -> list[list[PartitionMove]]:
    """The moves in groups that fit the bounds (at most `max_partitions` partitions and `max_bytes` bytes
    moving at once; a partition larger than `max_bytes` moves alone; an unknown size counts as nothing): the
    number of steps the plan shows. Apply starts moves as earlier ones finish, within the same bounds."""
    out: list[list[PartitionMove]] = []
    current: list[PartitionMove] = []
    size = 0
    for move in moves:
        weight = moving_bytes(move)
        if current and (len(current) >= max_partitions or (max_bytes is not None and size + weight > max_bytes)):
            out.append(current)
            current, size = [], 0
        current.append(move)
        size += weight
    if current:
        out.append(current)
    return out


def moving_bytes(move: PartitionMove) -> int:
    """What a move counts against `max_bytes`: every byte its new replicas copy."""
    return (move.size_bytes or 0) * len(move.adding)


_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def bytes_text(n: int) -> str:
    """`9.1 MiB`, `512 B`: a size to move, at a glance (one decimal below 100 of a unit)."""
    for unit, size in _UNITS:
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}".replace(".0 ", " ") if value < 100 else f"{value:.0f} {unit}"
    return f"{n} B"


def rate_text(n: int) -> str:
    return bytes_text(n) + "/s"


def duration_text(seconds: float) -> str:
    """`45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`: an estimate, rounded."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
