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
from tests.integration.reports import unclocked

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


@pytest.fixture(scope="module")
def fleet(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A synthetic fleet (bench/fleetgen.py: 12 clusters x 30 topics) and its JSON report from local Spark."""
    sys.path.insert(0, str(REPO / "bench"))
    import fleetgen  # the synthetic fleet: inventory and the changed manifests

    from reconciler.impact.inventory import write_meta
    from reconciler.impact.report import render_json
    from reconciler.impact.run import ImpactOptions, run_impact

    base = tmp_path_factory.mktemp("standalone-fleet")
    inventory, manifests = base / "inventory", base / "manifests"
    fleetgen.generate(spark, 12, 30, inventory, seed=3, sizes=True, files=2)
    write_meta(inventory, (fleetgen.name(i) for i in range(12)), "fleetgen", True)
    fleetgen.write_manifests(manifests, 12)
    local = render_json(run_impact(ImpactOptions(repo=manifests, inventory=inventory)))
    assert json.loads(local)["topicsAffected"] > 0
    return manifests, inventory, local


def _impact(manifests: Path, inventory: Path, *flags: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONCILER_SPARK_EXECUTOR_MEMORY": "512m", "RECONCILER_SPARK_DRIVER_MEMORY": "512m",
           **(env or {})}
    env.pop("SPARK_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "reconciler", "--repo", str(manifests), "impact", "--inventory", str(inventory),
         *flags, "--format", "json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False,
    )


def _apps(standalone: Cluster) -> list[set[str]]:
    """Per worker, the applications that ran executors on it (their work directories)."""
    return [{p.name for p in (standalone.dir / f"work-{i}").glob("app-*")} for i in range(1, WORKERS + 1)]


def _only_phases(stderr: str) -> None:
    """Off a terminal: one line per phase, and none of Spark's start-up chatter without -v."""
    phases = [line for line in stderr.splitlines() if "impact: " in line]
    assert [p.split("impact: ", 1)[1].split(" ")[0] for p in phases] == [
        "clusters", "start", "before", "effective"], stderr[-4000:]
    assert "log4j" not in stderr and " WARN " not in stderr, stderr[-4000:]
    assert [line for line in stderr.splitlines() if "impact: " not in line] == [], stderr[-4000:]


def test_same_json_on_a_standalone_cluster(standalone: Cluster, fleet: tuple[Path, Path, str]) -> None:
    manifests, inventory, local = fleet
    proc = _impact(manifests, inventory, "--master", standalone.url)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert unclocked(proc.stdout) == unclocked(local)  # stdout is only the report: Spark's logs went to stderr
    # the job ran on both workers: each has the application's work directory (its executor's logs)
    apps = _apps(standalone)
    assert all(apps) and len(set.union(*apps)) == 1, apps
    _only_phases(proc.stderr)


def test_same_json_through_spark_connect_in_front_of_the_cluster(
        standalone: Cluster, fleet: tuple[Path, Path, str], tmp_path: Path) -> None:
    """scripts/spark-connect.sh --master spark://...: the Connect server is the cluster's driver; the client
    (SPARK_REMOTE) runs no JVM and prints the same report; the job's tasks ran on both workers."""
    manifests, inventory, local = fleet
    script = REPO / "scripts" / "spark-connect.sh"
    env = {**os.environ, "PYTHON": sys.executable, "RECONCILER_SPARK_EXECUTOR_MEMORY": "512m"}
    before = set.union(*_apps(standalone))
    started = subprocess.run(["bash", str(script), "start", "--dir", str(tmp_path), "--master", standalone.url,
                              "--memory", "1g"], capture_output=True, text=True, timeout=300, env=env, check=False)
    try:
        assert started.returncode == 0, started.stderr[-4000:]
        remote = started.stdout.strip()
        assert remote.startswith("sc://127.0.0.1:")
        proc = _impact(manifests, inventory, env={"SPARK_REMOTE": remote})
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert unclocked(proc.stdout) == unclocked(local)
        _only_phases(proc.stderr)
        assert f"start Spark ({remote})" in proc.stderr
        # the server's application ran executors on both workers
        server_app = [a - before for a in _apps(standalone)]
        assert all(server_app) and len(set.union(*server_app)) == 1, server_app
    finally:
        stopped = subprocess.run(["bash", str(script), "stop", "--dir", str(tmp_path)], capture_output=True,
                                 text=True, timeout=120, env=env, check=False)
    assert stopped.returncode == 0, stopped.stderr[-4000:]


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
