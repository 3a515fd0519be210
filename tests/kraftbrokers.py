"""Real single-node KRaft Kafka clusters (combined mode) for integration tests, started and stopped by
scripts/local-kraft.sh: Kafka 4.x (kafka/pom-4.xml) and Kafka 3.9 in KRaft mode (kafka/pom.xml). One JVM per
cluster, started once per session on first use; the fixtures are registered in tests/conftest.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kafkabrokers import kill_brokers

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "local-kraft.sh"
CLUSTER_SCRIPT = REPO / "scripts" / "local-kraft-cluster.sh"


@dataclass(frozen=True)
class KraftCluster:
    dir: Path
    bootstrap: str  # host:port of the PLAINTEXT listener
    version: str  # "4.x" or "3.9" (the --version given to the script)
    brokers: tuple[int, ...] = (1,)

    @property
    def log_path(self) -> Path:
        return self.dir / "server.log"


def run_script(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def start_kraft(directory: Path, version: str) -> KraftCluster:
    """A started node, retried twice when a probed free port was taken meanwhile; fails the run otherwise (real
    brokers are mandatory: no skip)."""
    errors = []
    for _ in range(3):
        result = run_script("start", "--dir", str(directory), "--version", version)
        if result.returncode == 0:
            env = dict(line.split("=", 1) for line in (directory / "cluster.env").read_text().split())
            return KraftCluster(directory, env["BOOTSTRAP"], version)
        errors.append(result.stderr[-3000:])
    pytest.fail(f"cannot start a real KRaft Kafka {version} node (required):\n" + "\n".join(errors), pytrace=False)


def stop_kraft(cluster: KraftCluster) -> None:
    kill_brokers(cluster.dir)  # throwaway nodes: no controlled shutdown at the end of the run
    run_script("stop", "--dir", str(cluster.dir))


def kraft_fixture(version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    cluster = start_kraft(tmp_path_factory.mktemp(f"kraft-{version}"), version)
    try:
        yield cluster
    finally:
        stop_kraft(cluster)


def kraft_cluster_fixture(version: str, racks: list[str], tmp_path_factory: pytest.TempPathFactory
                          ) -> Iterator[KraftCluster]:
    """Several combined KRaft nodes (scripts/local-kraft-cluster.sh), node i with broker.rack racks[i-1]; started
    once, retried twice when a probed free port was taken meanwhile; a failure fails the run (no skip)."""
    directory = tmp_path_factory.mktemp(f"kraft-cluster-{version}")
    errors = []
    for _ in range(3):
        result = subprocess.run(["bash", str(CLUSTER_SCRIPT), "start", "--dir", str(directory), "--version", version,
                                 "--nodes", str(len(racks)), "--racks", ",".join(racks)],
                                capture_output=True, text=True, timeout=400, check=False)
        if result.returncode == 0:
            break
        errors.append(result.stderr[-3000:])
    else:
        pytest.fail(f"cannot start {len(racks)} real KRaft Kafka {version} nodes (required):\n" + "\n".join(errors),
                    pytrace=False)
    env = dict(line.split("=", 1) for line in (directory / "cluster.env").read_text().split())
    cluster = KraftCluster(directory, env["BOOTSTRAP"], version, tuple(int(b) for b in env["BROKERS"].split(",")))
    try:
        yield cluster
    finally:
        kill_brokers(directory)
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop", "--dir", str(directory)], capture_output=True,
                       timeout=120, check=False)
