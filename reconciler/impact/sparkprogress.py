"""Spark's stage progress as a phase's progress: tasks completed of tasks known, polled from the status tracker.

The CLI's progress shows it as a live bar on a terminal (and only the phase's summary line elsewhere), so a long
impact run says it is moving without Spark's own console bar (disabled: it writes to stdout's terminal).
Classic sessions only; Spark Connect has no status tracker on the client.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from reconciler.progress import Phase

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.5


def _poll(tracker: Any, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Record the active stages' (completed, total) tasks; return the sums over every stage seen."""
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            seen[stage_id] = (info.numCompletedTasks, info.numTasks)
    return sum(c for c, _ in seen.values()), sum(t for _, t in seen.values())


@contextmanager
def spark_progress(spark: SparkSession, phase: Phase) -> Iterator[None]:
    context = getattr(spark, "sparkContext", None) if hasattr(spark, "_jsparkSession") else None
    if context is None:
        yield
        return
    tracker = context.statusTracker()
    seen: dict[int, tuple[int, int]] = {}
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(POLL_SECONDS):
            completed, total = _poll(tracker, seen)
            if total:
                phase.update(completed, total)

    thread = threading.Thread(target=run, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
