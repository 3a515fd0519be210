"""The record of the reassignment the reconciler runs, kept in the cluster by the backend (ZooKeeper: a znode under
`reconcilerPath`; KRaft: a record of the state topic) (PURE: its form and meaning).

It says which moves the reconciler started (so that a reassignment in flight is known as its own, or as someone
else's) and where it set throttles (so that exactly those are removed when the moves are done, and throttles it
did not set are left alone, as they always were). Written before any throttle is set and kept until every
throttle is removed, so that a pass killed at any point leaves what the next one needs:

  {"version": 1, "planId", "user", "time", "throttle", "brokers": [1, 2], "topics": ["orders"],
   "targets": {"orders": {"0": [1, 2, 3]}}}

Identifiers and numbers only: no config value, no secret. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.plan import PartitionMove

VERSION = 1


@dataclass(frozen=True, slots=True)
class Record:
    plan_id: str
    user: str
    time: str
    throttle: int
    brokers: frozenset[int] = frozenset()
    topics: frozenset[str] = frozenset()
    targets: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)

    @property
    def entities(self) -> tuple[str, ...]:
        """Where it set throttles, as entity names (`brokers/1`, `topics/orders`)."""
        return (*(f"brokers/{b}" for b in sorted(self.brokers)), *(f"topics/{t}" for t in sorted(self.topics)))

    def started(self, topic: str, partition: int, target: tuple[int, ...]) -> bool:
        """Whether the reconciler started the move of that partition to that target."""
        return self.targets.get((topic, partition)) == tuple(target)


def _ints(raw: Any) -> list[int]:
    return [b for b in raw if isinstance(b, int) and not isinstance(b, bool)] if isinstance(raw, list) else []


def parse(raw: Mapping[str, Any] | None) -> Record | None:
    """The record (None when there is none or it is not one: a hand-edited value is treated as absent, never
    trusted to name throttles to remove)."""
    if not isinstance(raw, Mapping) or raw.get("version") != VERSION or not isinstance(raw.get("planId"), str):
        return None
    targets: dict[tuple[str, int], tuple[int, ...]] = {}
    for topic, partitions in (raw.get("targets") or {}).items() if isinstance(raw.get("targets"), dict) else ():
        if isinstance(partitions, dict):
            for p, replicas in partitions.items():
                if str(p).isdigit():
                    targets[(str(topic), int(p))] = tuple(_ints(replicas))
    throttle = raw.get("throttle")
    return Record(raw["planId"], str(raw.get("user") or ""), str(raw.get("time") or ""),
                  throttle if isinstance(throttle, int) else 0, frozenset(_ints(raw.get("brokers"))),
                  frozenset(t for t in raw.get("topics") or () if isinstance(t, str)), targets)


def to_json(record: Record) -> dict[str, Any]:
    targets: dict[str, dict[str, list[int]]] = {}
    for (topic, p), replicas in sorted(record.targets.items()):
        targets.setdefault(topic, {})[str(p)] = list(replicas)
    return {"version": VERSION, "planId": record.plan_id, "user": record.user, "time": record.time,
            "throttle": record.throttle, "brokers": sorted(record.brokers), "topics": sorted(record.topics),
            "targets": targets}


def extended(record: Record | None, *, plan_id: str, user: str, time: str, throttle: int,
             brokers: Iterable[int], topics: Iterable[str], moves: Iterable[PartitionMove]) -> Record:
    """`record` (or a new one) also naming these throttled brokers and topics and the moves started."""
    targets = dict(record.targets) if record is not None else {}
    targets.update({(m.topic, m.partition): m.target for m in moves})
    return Record(plan_id, user, time, throttle,
                  (record.brokers if record else frozenset()) | frozenset(brokers),
                  (record.topics if record else frozenset()) | frozenset(topics), targets)
