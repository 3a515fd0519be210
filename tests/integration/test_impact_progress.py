"""Spark stage progress reaches the phase: tasks completed of tasks known, from a real local SparkSession."""

from __future__ import annotations

import time
from typing import Any

import pytest

from reconciler.impact import sparkprogress

pytestmark = pytest.mark.spark


class Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[int, int | None]] = []

    def update(self, completed: int, total: int | None = None) -> None:
        self.updates.append((completed, total))

    def done(self, summary: str) -> None:
        return None


def test_running_stages_are_reported(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparkprogress, "POLL_SECONDS", 0.05)
    phase = Recorder()
    with sparkprogress.spark_progress(spark, phase):
        spark.sparkContext.parallelize(range(4), 4).map(lambda x: time.sleep(0.4) or x).count()
    assert phase.updates, "no progress while a stage ran"
    assert all(total is not None and 0 <= completed <= total for completed, total in phase.updates)
    assert phase.updates[-1][1] == 4  # the stage's four tasks


def test_nothing_is_reported_without_a_status_tracker() -> None:
    phase = Recorder()
    with sparkprogress.spark_progress(object(), phase):  # type: ignore[arg-type]  # e.g. a Connect session
        pass
    assert phase.updates == []
