"""`reconciler impact` as a whole process on the default local Spark: stdout is only the report, and stderr only
the phase lines, none of the JVM's or Spark's start-up chatter ("WARNING: Using incubator modules", "Setting
default log level") unless -v."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.reports import unclocked

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def impact(manifests: Path, inventory: Path, *flags: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONCILER_SPARK_DRIVER_MEMORY": "512m", **(env or {})}
    env.pop("SPARK_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *flags, "--repo", str(manifests), "impact", "--inventory",
         str(inventory), "--master", "local[1]", "--format", "json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False,
    )


EARLY_CLOSE = """
from pyspark import SparkContext
from reconciler.impact.session import EarlyStart
early = EarlyStart("local[1]")
early.close()
print(SparkContext._gateway is not None, SparkContext._active_spark_context is None)
management = SparkContext._gateway.jvm.java.lang.management.ManagementFactory
print(sorted(b.getName() for b in management.getGarbageCollectorMXBeans()))
print(" ".join(a for a in management.getRuntimeMXBean().getInputArguments() if a.startswith("-Xm")))
"""


def test_a_session_started_early_and_never_taken_is_stopped() -> None:
    env = {**os.environ, "RECONCILER_SPARK_DRIVER_MEMORY": "512m"}
    env.pop("SPARK_HOME", None)
    proc = subprocess.run([sys.executable, "-c", EARLY_CLOSE], capture_output=True, text=True, timeout=300,
                          env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    launched, collectors, heap = proc.stdout.splitlines()
    assert launched.split() == ["True", "True"]  # the JVM was launched, and its SparkContext is stopped
    assert "PS Scavenge" in collectors, collectors  # the driver runs the parallel collector (driver_java_options)
    assert "-Xms512m" in heap.split() and "-Xmx512m" in heap.split(), heap  # the heap starts at its maximum


EARLY_TAKEN = """
import signal
from reconciler.impact.session import EarlyStart, spark_session
with spark_session("local[1]", EarlyStart("local[1]")) as spark:
    print(signal.getsignal(signal.SIGINT).__qualname__)
"""


def test_ctrl_c_cancels_the_jobs_of_a_session_started_early() -> None:
    """pyspark makes Ctrl-C cancel the running jobs only for a context created on the main thread; the early
    start creates it on another, so taking the session sets the same up. The session is taken at once here, while
    the start's thread is still importing pyspark: `spark_session` must not import it at the same time (two
    threads importing pyspark see it partially initialised, an ImportError that read as "Spark not installed")."""
    env = {**os.environ, "RECONCILER_SPARK_DRIVER_MEMORY": "512m"}
    env.pop("SPARK_HOME", None)
    proc = subprocess.run([sys.executable, "-c", EARLY_TAKEN], capture_output=True, text=True, timeout=300,
                          env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == "_cancel_jobs_on_interrupt.<locals>.cancel"


def test_refused_manifests_are_reported_as_such_although_the_jvm_started_early(tmp_path: Path) -> None:
    """The JVM starts while the manifests are validated (`session.EarlyStart`); when they are refused, the error
    is the validation's, not Spark's, and nothing reaches stdout."""
    cluster = tmp_path / "repo" / "clusters" / "c1"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1}\nspec:\n  kafkaVersion: \"3.6\"\n"
        "  zookeeper: {connect: \"127.0.0.1:2181\"}\n  brokers: [one]\n", encoding="utf-8")
    (tmp_path / "inventory").mkdir()
    env = {**os.environ}
    env.pop("SPARK_HOME", None)
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler", "--repo", str(tmp_path / "repo"), "impact", "--inventory",
         str(tmp_path / "inventory"), "--master", "local[1]"],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False,
    )
    assert proc.returncode == 1, proc.stderr[-4000:]
    assert "clusters/c1/cluster.yaml" in proc.stderr and "brokers" in proc.stderr, proc.stderr[-4000:]
    assert "Spark" not in proc.stderr, proc.stderr[-4000:]
    assert proc.stdout == ""


MAPPED = """
from reconciler.impact.classarchive import archive_path
from reconciler.impact.session import spark_session
with spark_session("local[1]") as spark:
    pid = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()
    print(str(archive_path()) in open(f"/proc/{pid}/maps").read())
"""


def test_the_driver_class_archive_is_saved_mapped_and_never_costs_a_run(spark: Any, tmp_path: Path) -> None:
    """RECONCILER_SPARK_CLASS_ARCHIVE=save writes the archive as the run's JVM exits; the next JVM maps it (it is
    in the process's memory map, so the JVM accepted it); with a damaged one the JVM starts without it, silently,
    and the report is the same. Each run's stderr holds only the phase lines, none of the JVM's or Spark's
    start-up chatter, unless -v (one test: every run here starts a JVM)."""
    sys.path.insert(0, str(REPO / "bench"))
    import fleetgen

    from reconciler.impact.inventory import write_meta

    inventory, manifests, cache = tmp_path / "inventory", tmp_path / "manifests", tmp_path / "cache"
    fleetgen.generate(spark, 2, 10, inventory, seed=7, sizes=False, files=1)
    write_meta(inventory, (fleetgen.name(i) for i in range(2)), "fleetgen", False)
    fleetgen.write_manifests(manifests, 2)
    env = {"RECONCILER_CACHE_DIR": str(cache)}

    saved = impact(manifests, inventory, env={**env, "RECONCILER_SPARK_CLASS_ARCHIVE": "save"})
    assert saved.returncode == 0, saved.stderr[-4000:]
    assert json.loads(saved.stdout)["topicsAffected"] > 0
    assert [line for line in saved.stderr.splitlines() if not line.startswith("impact: ")] == [], saved.stderr
    assert len(saved.stderr.splitlines()) == 4  # clusters, start, before, effective: one line each off a TTY
    archives = list(cache.iterdir())
    assert len(archives) == 1 and archives[0].suffix == ".jsa" and archives[0].stat().st_size > 1 << 20, archives

    mapped = subprocess.run([sys.executable, "-c", MAPPED], capture_output=True, text=True, timeout=300,
                            env={**os.environ, **env, "RECONCILER_SPARK_DRIVER_MEMORY": "512m"}, cwd=REPO,
                            check=False)
    assert mapped.returncode == 0, mapped.stderr[-4000:]
    assert mapped.stdout.strip() == "True"

    archives[0].write_bytes(b"not an archive" * 1000)
    damaged = impact(manifests, inventory, env=env)
    assert damaged.returncode == 0 and unclocked(damaged.stdout) == unclocked(saved.stdout), damaged.stderr[-4000:]
    assert [line for line in damaged.stderr.splitlines() if not line.startswith("impact: ")] == [], damaged.stderr

    verbose = impact(manifests, inventory, "-v")  # -v keeps Spark's own start-up output
    assert verbose.returncode == 0, verbose.stderr[-4000:]
    assert unclocked(verbose.stdout) == unclocked(saved.stdout)
    assert [line for line in verbose.stderr.splitlines() if "impact: " not in line], verbose.stderr
