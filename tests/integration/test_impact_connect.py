"""`impact` through Spark Connect: ONE real Connect server (scripts/spark-connect.sh, from the installed pyspark)
for the module; every client is a process of its own (a Connect session and the tests' classic one cannot share
a process: pyspark switches its functions to Connect process-wide). The hand-worked fleet of
test_impact_job.py gives through the server exactly what the local session gives: the summary, every detail row,
every report file and Parquet table, the inventory tables the server wrote; its progress comes from the
server's UI; the CLI prints the same JSON with the same phase lines; an operator's allow-list refuses a server
it does not name before anything is dialled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.reports import unclocked
from tests.integration.test_impact_job import AFTER, write_fleet

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SCRIPT = REPO / "scripts" / "spark-connect.sh"


def run_script(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "RECONCILER_SPARK_EXECUTOR_MEMORY": "512m"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)


def alive(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


@dataclass
class Server:
    url: str
    dir: Path

    def env(self) -> dict[str, str]:
        """What `set -a; . D/connect.env` gives a CI job: SPARK_REMOTE and the UI's URL."""
        pairs = (line.split("=", 1) for line in (self.dir / "connect.env").read_text().splitlines() if "=" in line)
        return {k: v for k, v in pairs if k != "MASTER"}


def start_server(base: Path, *flags: str) -> Server:
    started = run_script("start", "--dir", str(base), "--memory", "1g", *flags)
    assert started.returncode == 0, started.stderr[-4000:]
    server = Server(started.stdout.strip(), base)
    assert server.url.startswith("sc://127.0.0.1:") and server.env()["SPARK_REMOTE"] == server.url
    return server


def stop_server(server: Server, pid: int) -> None:
    stopped = run_script("stop", "--dir", str(server.dir))
    assert stopped.returncode == 0, stopped.stderr[-4000:]
    assert run_script("status", "--dir", str(server.dir)).returncode == 3
    assert not alive(pid)


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A local Connect server that this fixture starts once and always stops."""
    base = tmp_path_factory.mktemp("spark-connect")
    server = start_server(base)
    pid = int((base / "connect.pid").read_text())
    again = run_script("start", "--dir", str(base))  # idempotent: the running server's URL again
    assert again.returncode == 0 and again.stdout.strip() == server.url, again.stderr
    try:
        yield server
    finally:
        stop_server(server, pid)


# A client process: the hand-worked fleet written and assessed through the server, as test_impact_job's
# `results` fixture does it locally; its progress recorded from the server's UI.
CLIENT = """
import json, sys
from pathlib import Path
from reconciler.impact import sparkprogress
from reconciler.impact.aggregate import summary as summarize
from reconciler.impact.inventory import read_inventory
from reconciler.impact.job import compute_changes
from reconciler.impact.outputs import write_outputs
from reconciler.impact.session import spark_session
from reconciler.impact.connect import parse_remote, ui_url
from reconciler.impact.uistatus import UiStatus
from tests.integration.test_impact_job import AFTER, write_fleet

url, work = sys.argv[1], Path(sys.argv[2])
sparkprogress.POLL_SECONDS = 0.05

class Recorder:
    updates = []
    def update(self, completed, total=None):
        self.updates.append((completed, total))
    def done(self, summary):
        pass

out = {}
with spark_session(url) as spark:
    out["classic"] = hasattr(spark, "_jsparkSession")
    out["jvm"] = "py4j.java_gateway" in sys.modules and sys.modules["pyspark"].SparkContext._gateway is not None
    write_fleet(work / "inv-sizes", spark, sizes=True)
    phase = Recorder()
    with sparkprogress.spark_progress(spark, phase, url):
        changes = compute_changes(spark, read_inventory(spark, work / "inv-sizes"), AFTER)
        out["summary"] = summarize(spark, changes)
    out["progress"] = phase.updates
    out["session"] = UiStatus(ui_url(parse_remote(url)), f"_Session_{spark.session_id}_").stages()
    out["topic_rows"] = [r.asDict(recursive=True) for r in changes.topics.collect()]
    out["broker_rows"] = [r.asDict(recursive=True) for r in changes.brokers.collect()]
    write_outputs(work / "report", out["summary"], changes)
print(json.dumps(out, default=str))
"""


def _plain(value: Any) -> Any:
    """JSON's view of a value (tuples as lists, dates as text), so both sides compare alike."""
    return json.loads(json.dumps(value, default=str))


def _rows(rows: list[dict[str, Any]]) -> list[Any]:
    return sorted(_plain(rows), key=lambda r: json.dumps(r, sort_keys=True))


def _parquet(spark: Any, path: Path) -> list[Any]:
    return _rows([r.asDict(recursive=True) for r in spark.read.parquet(str(path)).collect()])


@pytest.fixture(scope="module")
def through_connect(connect_server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    work = tmp_path_factory.mktemp("connect-client")
    env = {**os.environ, **connect_server.env(), "PYTHONPATH": str(REPO)}  # the client imports the tests' fleet
    env.pop("RECONCILER_SPARK_PARTITIONS", None)  # the server's own default
    env.pop("PYTHONSAFEPATH", None)  # set once a local session started (childenv): it would hide tests/
    proc = subprocess.run([sys.executable, "-c", CLIENT, connect_server.url, str(work)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout), work


def test_the_hand_worked_fleet_gives_the_same_through_connect(
        spark: Any, through_connect: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.inventory import read_inventory
    from reconciler.impact.job import compute_changes
    from reconciler.impact.outputs import write_outputs

    remote, work = through_connect
    assert remote["classic"] is False and remote["jvm"] is False  # a Connect session: no JVM in the client
    write_fleet(tmp_path / "inv-sizes", spark, sizes=True)
    changes = compute_changes(spark, read_inventory(spark, tmp_path / "inv-sizes"), AFTER)
    local = summarize(spark, changes)
    assert local["topicsAffected"] > 0
    assert remote["summary"] == _plain(local)
    assert _rows(remote["topic_rows"]) == _rows([r.asDict(recursive=True) for r in changes.topics.collect()])
    assert _rows(remote["broker_rows"]) == _rows([r.asDict(recursive=True) for r in changes.brokers.collect()])
    write_outputs(tmp_path / "report", local, changes)
    for name in ("report.md", "report.json", "report.html"):
        assert (work / "report" / name).read_text() == (tmp_path / "report" / name).read_text(), name
    for table in ("topic_changes", "broker_changes"):
        assert _parquet(spark, work / "report" / table) == _parquet(spark, tmp_path / "report" / table), table
    # the inventory the server wrote (Arrow from the client) is the one the local session wrote
    for table in ("brokers", "topics", "partitions", "configs", "static", "sizes"):
        assert _parquet(spark, work / "inv-sizes" / table) == _parquet(spark, tmp_path / "inv-sizes" / table), table


def test_progress_comes_from_the_servers_ui(through_connect: tuple[dict[str, Any], Path]) -> None:
    remote, _ = through_connect
    assert remote["progress"], "no progress from the server's UI REST API while the job ran"
    assert all(total is not None and 0 <= done <= total for done, total in remote["progress"])
    assert remote["session"]["jobs"] > 0 and remote["session"]["stages"] > 0  # this session's, by its job tags


CONSUMERS = """
import json, sys
from pathlib import Path
from reconciler.impact.consumers import section
from reconciler.impact.inventory import read_inventory, read_meta
from reconciler.impact.job import compute_changes
from reconciler.impact.session import spark_session
from tests.integration.test_impact_consumers import AFTER, write_consumer_fleet

url, work = sys.argv[1], Path(sys.argv[2])
with spark_session(url) as spark:
    write_consumer_fleet(work / "inv", spark)
    inv = read_inventory(spark, work / "inv")
    found, rows = section(compute_changes(spark, inv, AFTER), inv, read_meta(work / "inv"))
    out = {"section": {k: v for k, v in found.items() if k != "assessedAtMs"},
           "rows": [r.asDict(recursive=True) for r in rows.collect()],
           "log_offsets": [r.asDict(recursive=True) for r in inv.offsets["log_offsets"].collect()]}
print(json.dumps(out, default=str))
"""


def test_consumers_at_risk_are_the_same_through_connect(
        spark: Any, connect_server: Server, tmp_path: Path) -> None:
    """Issue 42: the consumers at risk of test_impact_consumers' fleet, its inventory written by the server (the
    offsets' arrays of structs travel as Arrow), the same as the local session's, row for row."""
    from reconciler.impact.consumers import section
    from reconciler.impact.inventory import read_inventory, read_meta
    from reconciler.impact.job import compute_changes
    from tests.integration.test_impact_consumers import AFTER as CONSUMER_AFTER
    from tests.integration.test_impact_consumers import write_consumer_fleet

    env = {**os.environ, **connect_server.env(), "PYTHONPATH": str(REPO)}  # the client imports the tests' fleet
    env.pop("RECONCILER_SPARK_PARTITIONS", None)
    env.pop("PYTHONSAFEPATH", None)  # set once a local session started (childenv): it would hide tests/
    proc = subprocess.run([sys.executable, "-c", CONSUMERS, connect_server.url, str(tmp_path / "remote")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    remote = json.loads(proc.stdout)
    write_consumer_fleet(tmp_path / "local", spark)
    inv = read_inventory(spark, tmp_path / "local")
    found, rows = section(compute_changes(spark, inv, CONSUMER_AFTER), inv, read_meta(tmp_path / "local"))
    assert rows is not None and found["groupsAtRisk"] == 3
    assert remote["section"] == _plain({k: v for k, v in found.items() if k != "assessedAtMs"})
    assert _rows(remote["rows"]) == _rows([r.asDict(recursive=True) for r in rows.collect()])
    assert _rows(remote["log_offsets"]) == _rows([r.asDict(recursive=True)
                                                  for r in inv.offsets["log_offsets"].collect()])


def cli(manifests: Path, inventory: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler", "--repo", str(manifests), "impact", "--inventory", str(inventory),
         "--format", "json", *flags], capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False)


@pytest.fixture(scope="module")
def fleet(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A synthetic fleet (bench/fleetgen.py: 12 clusters x 30 topics) and its local JSON report."""
    sys.path.insert(0, str(REPO / "bench"))
    import fleetgen

    from reconciler.impact.inventory import write_meta
    from reconciler.impact.report import render_json
    from reconciler.impact.run import ImpactOptions, run_impact

    base = tmp_path_factory.mktemp("connect-fleet")
    inventory, manifests = base / "inventory", base / "manifests"
    fleetgen.generate(spark, 12, 30, inventory, seed=3, sizes=True, files=2)
    write_meta(inventory, (fleetgen.name(i) for i in range(12)), "fleetgen", True)
    fleetgen.write_manifests(manifests, 12)
    local = render_json(run_impact(ImpactOptions(repo=manifests, inventory=inventory)))
    assert json.loads(local)["topicsAffected"] > 0
    return manifests, inventory, local


def test_the_cli_prints_the_same_report_through_spark_remote(
        connect_server: Server, fleet: tuple[Path, Path, str]) -> None:
    manifests, inventory, local = fleet
    env = {**os.environ, **connect_server.env()}
    env.pop("RECONCILER_SPARK_PARTITIONS", None)
    proc = cli(manifests, inventory, env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert unclocked(proc.stdout) == unclocked(local)
    phases = [line for line in proc.stderr.splitlines() if line.startswith("impact: ")]
    assert [p.split("impact: ", 1)[1].split(" ")[0] for p in phases] == [
        "clusters", "start", "before", "effective"], proc.stderr[-4000:]
    assert f"start Spark ({connect_server.url})" in phases[1]
    assert [line for line in proc.stderr.splitlines() if not line.startswith("impact: ")] == [], proc.stderr[-4000:]


def test_the_operators_allow_list_refuses_a_server_it_does_not_name(
        connect_server: Server, fleet: tuple[Path, Path, str]) -> None:
    manifests, inventory, _ = fleet
    port = int(connect_server.url.rsplit(":", 1)[1])
    base = {**os.environ, **connect_server.env()}
    for allowed in (f"127.0.0.1:{port + 1}", "spark.ci.internal", ""):
        env = base | {"RECONCILER_SPARK_ALLOWED_REMOTES": allowed}
        proc = cli(manifests, inventory, env, "--remote", connect_server.url)
        assert proc.returncode != 0 and proc.stdout == ""
        assert "RECONCILER_SPARK_ALLOWED_REMOTES" in proc.stderr and "impact: start" not in proc.stderr, proc.stderr
