"""Where each move of a plan stands against the cluster as it is now, and which to start next (PURE).

A move is done when its partition has the target replicas and is not being reassigned; moving when the cluster
reassigns it to the target; to start when the partition still has the replicas the plan saw (or is moving to a
target the reconciler set earlier, which the new one replaces, as AlterPartitionReassignments allows). Anything
else means the cluster changed since the plan: the plan is stale and nothing is started. Partitions the cluster
reassigns that no move names and the reconciler did not start are someone else's (`foreign`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reconciler.model import InFlightMove
from reconciler.plan import PartitionMove
from reconciler.reassign.record import Record
from reconciler.reassign.traffic import moving_bytes

TP = tuple[str, int]


@dataclass(slots=True)
class Status:
    done: list[PartitionMove] = field(default_factory=list)
    moving: list[PartitionMove] = field(default_factory=list)
    pending: list[PartitionMove] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    foreign: list[InFlightMove] = field(default_factory=list)


def _ids(replicas: Sequence[int]) -> str:
    return "[" + ",".join(map(str, replicas)) + "]"


def classify(moves: Sequence[PartitionMove], replicas: Mapping[TP, tuple[int, ...]],
             in_flight: Mapping[TP, InFlightMove], record: Record | None) -> Status:
    """Each move's state; `replicas`: each partition's replicas now (Metadata)."""
    out = Status()
    named = set()
    for m in moves:
        tp = (m.topic, m.partition)
        named.add(tp)
        flight = in_flight.get(tp)
        if flight is not None:
            if flight.target == m.target:
                out.moving.append(m)
            elif record is not None and record.started(m.topic, m.partition, flight.target):
                out.pending.append(m)  # the reconciler's earlier target: the new one replaces it
            else:
                out.stale.append(f"{m.name} is being reassigned to {_ids(flight.target)} by someone else; the plan "
                                 f"moves it to {_ids(m.target)}")
            continue
        now = replicas.get(tp)
        if now is None:
            out.stale.append(f"{m.name} no longer exists")
        elif tuple(now) == m.target:
            out.done.append(m)
        elif tuple(now) == m.current:
            out.pending.append(m)
        else:
            out.stale.append(f"{m.name} has replicas {_ids(now)}; the plan expected {_ids(m.current)}")
    out.foreign = [f for tp, f in sorted(in_flight.items())
                   if tp not in named and not (record is not None and record.started(f.topic, f.partition, f.target))]
    return out


def next_moves(pending: Sequence[PartitionMove], moving: Sequence[PartitionMove], max_partitions: int,
               max_bytes: int | None) -> list[PartitionMove]:
    """The pending moves to start now, in plan order, so that at most `max_partitions` partitions and `max_bytes`
    bytes move at once (one larger than `max_bytes` starts alone, when nothing else moves)."""
    count = len(moving)
    size = sum(moving_bytes(m) for m in moving)
    out: list[PartitionMove] = []
    for m in pending:
        if count >= max_partitions:
            break
        weight = moving_bytes(m)
        if max_bytes is not None and count and size + weight > max_bytes:
            break
        out.append(m)
        count += 1
        size += weight
    return out
