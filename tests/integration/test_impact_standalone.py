"""The distributed path: a Spark standalone master and TWO workers on loopback, started by
scripts/spark-standalone.sh from the pyspark installation's jars, run `reconciler impact --master spark://...`
and print the same JSON as local Spark. The cluster is stopped by the script even when a test fails, and the
teardown checks that nothing it started is left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCRIPT = REPO / "scripts" / "spark-standalone.sh"
WORKERS = 2


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie's cmdline is empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


@dataclass
class Cluster:
    url: str
    dir: Path

    def pids(self) -> dict[str, int]:
        """Master and workers, as the script recorded them."""
        return {f.stem: int(f.read_text()) for f in sorted(self.dir.glob("*.pid"))}

    def executors(self) -> list[int]:
        """Executor JVMs launched by this cluster's workers (this cluster's jars on their class path)."""
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                args = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "CoarseGrainedExecutorBackend" in args and f"{self.dir}/home/jars/" in args:
                found.append(int(proc.name))
        return found


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A master and two workers (1 core, 1 GiB each) that this fixture starts and always stops."""
    base = tmp_path_factory.mktemp("spark-standalone")
    try:
        started = run_script("start", "--dir", str(base), "--workers", str(WORKERS), "--cores", "1",
                             "--memory", "1g")
        assert started.returncode == 0, started.stderr[-4000:]
        cluster = Cluster(started.stdout.strip(), base)
        assert cluster.url.startswith("spark://127.0.0.1:"), started.stdout
        pids = cluster.pids()
        yield cluster
    finally:  # whatever happened above: stop what the script started (it reads its own PID files)
        stopped = run_script("stop", "--dir", str(base))
    assert stopped.returncode == 0, stopped.stderr[-4000:]
    assert run_script("status", "--dir", str(base)).returncode == 3
    assert not [pid for pid in [*pids.values(), *cluster.pids().values()] if alive(pid)]
    assert not cluster.executors()


def test_same_json_on_a_standalone_cluster(spark: Any, standalone: Cluster, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import fleetgen  # the synthetic fleet: inventory and the changed manifests

    from reconciler.impact.inventory import write_meta
    from reconciler.impact.report import render_json
    from reconciler.impact.run import ImpactOptions, run_impact

    inventory, manifests = tmp_path / "inventory", tmp_path / "manifests"
    fleetgen.generate(spark, 12, 30, inventory, seed=3, sizes=True, files=2)
    write_meta(inventory, (fleetgen.name(i) for i in range(12)), "fleetgen", True)
    fleetgen.write_manifests(manifests, 12)
    local = render_json(run_impact(ImpactOptions(repo=manifests, inventory=inventory)))
    assert json.loads(local)["topicsAffected"] > 0

    env = {**os.environ, "RECONCILER_SPARK_EXECUTOR_MEMORY": "512m", "RECONCILER_SPARK_DRIVER_MEMORY": "512m"}
    env.pop("SPARK_HOME", None)
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler", "--repo", str(manifests), "impact", "--inventory", str(inventory),
         "--master", standalone.url, "--format", "json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == local  # stdout is only the report: Spark's logs went to stderr
    # the job ran on both workers: each has the application's work directory (its executor's logs)
    apps = [{p.name for p in (standalone.dir / f"work-{i}").glob("app-*")} for i in range(1, WORKERS + 1)]
    assert all(apps) and len(set.union(*apps)) == 1, apps
    # off a terminal: one line per phase, and none of Spark's start-up chatter without -v
    phases = [line for line in proc.stderr.splitlines() if "impact: " in line]
    assert [p.split("impact: ", 1)[1].split(" ")[0] for p in phases] == [
        "clusters", "start", "before", "effective"], proc.stderr[-4000:]
    assert "log4j" not in proc.stderr and " WARN " not in proc.stderr, proc.stderr[-4000:]
    assert [line for line in proc.stderr.splitlines() if "impact: " not in line] == [], proc.stderr[-4000:]


def test_start_is_idempotent_and_replaces_a_lost_worker(standalone: Cluster) -> None:
    before = standalone.pids()
    assert sorted(before) == ["master", *(f"worker-{i}" for i in range(1, WORKERS + 1))]
    again = run_script("start", "--dir", str(standalone.dir))
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.stdout.strip() == standalone.url and standalone.pids() == before

    os.kill(before["worker-2"], signal.SIGKILL)  # a crashed worker: `start` brings the cluster back to shape
    again = run_script("start", "--dir", str(standalone.dir))
    assert again.returncode == 0, again.stderr[-4000:]
    after = standalone.pids()
    assert again.stdout.strip() == standalone.url
    assert after["master"] == before["master"] and after["worker-2"] != before["worker-2"]
    status = run_script("status", "--dir", str(standalone.dir))
    assert status.returncode == 0 and f"{WORKERS}/{WORKERS} workers" in status.stdout, status

    other_shape = run_script("start", "--dir", str(standalone.dir), "--workers", "3")
    assert other_shape.returncode == 1 and "stop it first" in other_shape.stderr
