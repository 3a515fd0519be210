"""How long-running steps report progress, without knowing where it is shown (standard library only).

The use-cases (`workflow`, the ZooKeeper reader, apply) call a `Progress` they are given; the command line
implements it (a live rich bar on a terminal, one line per finished phase elsewhere) and `NO_PROGRESS`
keeps embedders and tests quiet. A phase is one step of one cluster: "read", "plan", "apply".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol


class Phase(Protocol):
    def update(self, completed: int, total: int | None = None) -> None:
        """`completed` of `total` units done (znodes read, batches written); both cumulative."""

    def done(self, summary: str) -> None:
        """What the phase achieved, in a few words ("12,004 znodes", "5 to change"); shown once it ends."""


class Progress(Protocol):
    def phase(self, label: str, total: int | None = None) -> AbstractContextManager[Phase]:
        """A phase named `label` ("prod-eu-1: read 10.0.0.1:2181/kafka"); ends with the `with` block."""


class _QuietPhase:
    def update(self, completed: int, total: int | None = None) -> None:
        return None

    def done(self, summary: str) -> None:
        return None


class _Quiet:
    @contextmanager
    def phase(self, label: str, total: int | None = None) -> Iterator[Phase]:
        yield _QuietPhase()


NO_PROGRESS: Progress = _Quiet()
