"""Spark's stage progress as a phase's progress: tasks completed of tasks known, polled from the status tracker.

The CLI's progress shows it as a live bar on a terminal (and only the phase's summary line elsewhere), so a long
impact run says it is moving without Spark's own console bar (disabled: it writes to stdout's terminal).
A Spark Connect session has no status tracker on the client: its progress comes from the server's UI REST API
(`uistatus`), or is left out when that cannot be asked.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
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


def _classic_poller(spark: SparkSession) -> Callable[[], tuple[int, int]]:
    tracker = spark.sparkContext.statusTracker()
    seen: dict[int, tuple[int, int]] = {}
    return lambda: _poll(tracker, seen)


@contextmanager
def _connect_poller(spark: SparkSession, master: str) -> Iterator[Callable[[], tuple[int, int]] | None]:
    """(completed, total) tasks of the jobs this block's operations run, from the Connect server's UI: they are
    tagged for the block (a tag of its own, so earlier jobs and other clients' never count)."""
    from reconciler.impact.uistatus import for_tag

    tag = f"reconciler-progress-{uuid.uuid4().hex}"
    status = for_tag(spark, master, tag)
    if status is None:
        yield None
        return
    spark.addTag(tag)
    try:
        yield status.tasks
    finally:
        spark.removeTag(tag)


@contextmanager
def spark_progress(spark: SparkSession, phase: Phase, master: str | None = None) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if hasattr(spark, "_jsparkSession"):  # classic
            poll: Callable[[], tuple[int, int]] | None = _classic_poller(spark)
        elif master is not None and is_remote(master):
            poll = stack.enter_context(_connect_poller(spark, master))
        else:
            poll = None
        if poll is None:
            yield
            return
        stop = threading.Event()
        thread = threading.Thread(target=_run, args=(poll, phase, stop), name="spark-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2 * POLL_SECONDS)  # a poll waiting on a slow UI ends on its own, silently


def _run(poll: Callable[[], tuple[int, int]], phase: Phase, stop: threading.Event) -> None:
    failed = False
    while not stop.wait(POLL_SECONDS):
        try:
            completed, total = poll()
        except (OSError, ValueError) as exc:  # a busy or cold UI answering late: this poll is lost, not the run
            if not failed:
                log.info("Spark stage progress: the server's UI did not answer (%s); trying on", exc)
            failed = True
            continue
        if total and not stop.is_set():
            phase.update(completed, total)
