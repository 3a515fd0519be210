"""Where a plan's reassignment stands after an apply pass, and its verification (PURE: data and wording).

A pass starts what it may, waits (as long as it is allowed) and removes the throttles once every move is done;
one that stops earlier leaves the moves in flight and the throttles in place, and says so: the next pass (an
`apply` or a scheduled `reconcile`) sees them, reports them and continues (reconciler/reassign/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.units import counted


@dataclass(frozen=True, slots=True)
class Outcome:
    """Partitions at their target, still moving and not started when the pass ended; whether the throttles were
    removed (every move done); `stopped`: why it ended before that (a signal, the wait allowed)."""

    done: int
    moving: int
    waiting: int
    throttles_removed: bool
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return self.moving == 0 and self.waiting == 0 and self.throttles_removed

    def text(self) -> str:
        if self.complete:
            return (f"reassignment complete: {counted(self.done, 'partition', 'partitions')} at their target, "
                    "replication throttles removed")
        parts = [f"{counted(self.done, 'partition', 'partitions')} done", f"{self.moving} moving",
                 f"{self.waiting} not started"]
        why = f" ({self.stopped})" if self.stopped else ""
        return (f"reassignment in progress{why}: {', '.join(parts)}; the throttles stay until every move is done: "
                "the next apply or reconcile pass continues it")


@dataclass(frozen=True, slots=True)
class Verification:
    """`--verify` of a reassignment: each problem found (a partition not at its target, a replica out of sync, a
    throttle left behind); ok when there is none."""

    checked: int
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        if self.ok:
            return [f"reassignment verified: {counted(self.checked, 'partition', 'partitions')} at their target with "
                    "every replica in sync, no replication throttle left behind"]
        return ["reassignment NOT verified:", *(f"  {p}" for p in self.problems)]
