"""A plan's reassignment (reconciler/reassign/) as lines both renderers use: what moves, the bytes each broker
receives and sends, the throttle and how long the moves take at least at that rate (PURE)."""

from __future__ import annotations

from reconciler.plan import PartitionMove, Reassignment
from reconciler.reassign.throttles import throttles
from reconciler.reassign.traffic import (
    Traffic,
    bytes_text,
    duration_text,
    estimated_seconds,
    rate_text,
    steps,
    traffic,
)
from reconciler.units import counted


def size(n: int | None) -> str:
    return "size unknown" if n is None else bytes_text(n)


def rate(r: Reassignment) -> str:
    return rate_text(r.throttle)


def headline(r: Reassignment) -> str:
    """`6 partitions of 2 topics move (2 already moving), 384 MiB to copy at 50 MiB/s: at least 8 s`."""
    if not r.moves:
        return f"replication throttles left by plan {r.started_by} to remove"
    topics = len({m.topic for m in r.moves})
    moving = sum(m.in_flight for m in r.moves)
    t = traffic(r.moves)
    text = (f"{counted(len(r.moves), 'partition', 'partitions')} of {counted(topics, 'topic', 'topics')} "
            f"move{' (' + str(moving) + ' already moving)' if moving else ''}")
    if t.total or not t.unknown:
        text += f", {size(t.total)} to copy"
    if t.unknown:
        text += f" ({counted(t.unknown, 'partition', 'partitions')} of unknown size)"
    text += f", throttled at {rate(r)}"
    if t.total:
        text += f": at least {duration_text(estimated_seconds(t, r.throttle))}"
    return text


def pacing(r: Reassignment) -> str:
    """How apply runs them: the bounds per step and the steps they make."""
    bound = f"at most {counted(r.max_partitions, 'partition', 'partitions')}"
    if r.max_bytes is not None:
        bound += f" and {size(r.max_bytes)}"
    n = len(steps(r.pending, r.max_partitions, r.max_bytes))
    return f"{bound} moving at once ({counted(n, 'step', 'steps')}); the throttles are removed when every move is done"


def broker_rows(r: Reassignment) -> list[tuple[str, str, str]]:
    """(broker, receives, sends) per broker a move involves."""
    t: Traffic = traffic(r.moves)
    return [(str(b), size(t.receives.get(b, 0)), size(t.sends.get(b, 0))) for b in t.brokers]


def throttle_text(r: Reassignment) -> str:
    """Where the throttle is set, as `kafka-reassign-partitions.sh --execute --throttle` sets it."""
    th = throttles(r.moves, r.throttle)
    parts = []
    if th.brokers:
        parts.append(f"leader/follower.replication.throttled.rate={r.throttle} on "
                     f"{counted(len(th.brokers), 'broker', 'brokers')} {','.join(map(str, th.brokers))}")
    if th.topics:
        parts.append(f"leader/follower.replication.throttled.replicas on the moving replicas of "
                     f"{', '.join(sorted(th.topics))}")
    if r.leftover:
        parts.append(f"throttles set by plan {r.started_by} removed at the end from {', '.join(r.leftover)}")
    return "; ".join(parts)


def move_text(m: PartitionMove) -> str:
    """`orders-0: [1] -> [1,2,3] (64 MiB; replication factor 1 -> 3)`."""
    notes = [size(m.size_bytes) if m.adding else "no data copied", *m.reasons]
    if m.in_flight:
        notes.insert(0, "moving")
    return (f"{m.name}: [{','.join(map(str, m.current))}] -> [{','.join(map(str, m.target))}]"
            f" ({'; '.join(notes)})")
