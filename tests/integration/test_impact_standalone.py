"""The distributed path: a standalone Spark master and worker on loopback, started from the pyspark
installation's jars, run `reconciler impact --master spark://...` and print the same JSON as local Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    pytest.fail(f"{log.name}: no {text!r} within {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`spark://127.0.0.1:<port>` of a master and one worker (2 cores, 1 GiB) that this fixture owns."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    base = tmp_path_factory.mktemp("spark-standalone")
    home = base / "home"  # the pip package has no RELEASE file, which executors' launch needs
    home.mkdir()
    (home / "RELEASE").write_text("pyspark\n")
    (home / "jars").symlink_to(jars)
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": "2.13", "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_NO_DAEMONIZE": "1"}
    port, ui, worker_ui = free_port(), free_port(), free_port()
    java = ["java", "-Xmx256m", "-cp", f"{jars}/*"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(base / "master.log", "wb") as log:
            procs.append(subprocess.Popen(
                [*java, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(ui)], stdout=log, stderr=subprocess.STDOUT, env=env))
        _wait_for(base / "master.log", "Starting Spark master", procs[0])
        url = f"spark://127.0.0.1:{port}"
        with open(base / "worker.log", "wb") as log:
            procs.append(subprocess.Popen(
                [*java, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--webui-port",
                 str(worker_ui), "--cores", "2", "--memory", "1g", "--work-dir", str(base / "work")],
                stdout=log, stderr=subprocess.STDOUT, env=env))
        _wait_for(base / "worker.log", "Successfully registered with master", procs[1])
        yield url
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_same_json_on_a_standalone_cluster(spark: Any, standalone: str, tmp_path: Path) -> None:
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
         "--master", standalone, "--format", "json"],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == local  # stdout is only the report: Spark's logs went to stderr
    # off a terminal: one line per phase, and none of Spark's start-up chatter without -v
    phases = [line for line in proc.stderr.splitlines() if "impact: " in line]
    assert [p.split("impact: ", 1)[1].split(" ")[0] for p in phases] == [
        "clusters", "start", "before", "effective"], proc.stderr[-4000:]
    assert "log4j" not in proc.stderr and " WARN " not in proc.stderr, proc.stderr[-4000:]
