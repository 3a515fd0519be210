"""Spark's stage progress as a phase's progress: tasks completed of tasks known, polled from the status tracker.

The CLI's progress shows it as a live bar on a terminal (and only the phase's summary line elsewhere), so a long
impact run says it is moving without Spark's own console bar (disabled: it writes to stdout's terminal).
A Spark Connect session has no status tracker on the client: its progress comes from the server's UI REST API
(`uistatus`), or is left out when that cannot be asked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from reconciler.impact.connect import is_remote
from reconciler.progress import Phase

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
POLL_SECONDS = 0.5


def _poll(tracker: Any, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Record the active stages' (completed, total) tasks; return the sums over every stage seen."""
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            seen[stage_id] = (info.numCompletedTasks, info.numTasks)
    return sum(c for c, _ in seen.values()), sum(t for _, t in seen.values())


def _poller(spark: SparkSession, master: str | None) -> Callable[[], tuple[int, int]] | None:
    """(completed, total) tasks so far, from the status tracker or the Connect server's UI; None: neither."""
    if hasattr(spark, "_jsparkSession"):  # classic
        tracker = spark.sparkContext.statusTracker()
        seen: dict[int, tuple[int, int]] = {}
        return lambda: _poll(tracker, seen)
    if master is not None and is_remote(master):
        from reconciler.impact.uistatus import for_session

        status = for_session(spark, master)
        return None if status is None else status.tasks
    return None


@contextmanager
def spark_progress(spark: SparkSession, phase: Phase, master: str | None = None) -> Iterator[None]:
    poll = _poller(spark, master)
    if poll is None:
        yield
        return
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(POLL_SECONDS):
            try:
                completed, total = poll()
            except (OSError, ValueError) as exc:  # the UI stopped answering: the progress ends, the run does not
                log.info("Spark stage progress stopped: %s", exc)
                return
            if total:
                phase.update(completed, total)

    thread = threading.Thread(target=run, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
