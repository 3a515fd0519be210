"""Shared fixtures. ZooKeeper: one real standalone server per test session (scripts/local-zookeeper.sh),
a fresh chroot per test for isolation. Real ZooKeeper is mandatory: if it cannot start, tests fail."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.model import ZooKeeperSpec
from reconciler.zk.session import close, connect

REPO = Path(__file__).resolve().parents[1]
ZK_SCRIPT = REPO / "scripts" / "local-zookeeper.sh"
# Most tests apply to a chroot of the session's ZooKeeper where no broker runs (what they test is the write, not
# the target): as an operator pre-seeding a cluster would, they allow it (apply's --allow-no-brokers). The tests
# of the refusal itself clear it (tests/integration/test_apply_preconditions.py).
os.environ.setdefault("RECONCILER_ALLOW_NO_BROKERS", "1")
ZK_FIXTURES = frozenset({"zk_server", "zk_chroot", "zk_client", "zk_connect"})


def free_port() -> int:
    """A loopback port free right now, BELOW the kernel's ephemeral range: a server stopped and restarted on it
    (ZooKeeper and broker fault tests) must not find it taken as the source port of some client's connection,
    which any port of the ephemeral range can be at any moment (the server binds it a moment later; start()
    retries on a clash)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(10001, low))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def run_zk_script(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ZK_SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@dataclass
class ZkServer:
    """A real ZooKeeper started by the script; `kill()`/`restart()` are for fault-injection tests."""

    port: int
    dir: Path

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        try:
            return int((self.dir / "zookeeper.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def is_running(self) -> bool:
        """The recorded PID is alive and is this server (as the script checks it; a zombie has no cmdline)."""
        pid = self.pid
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if pid else []
        except OSError:
            return False
        return str(self.dir / "conf" / "zoo.cfg").encode() in cmdline

    def start(self) -> None:
        result = run_zk_script("start", "--port", str(self.port), "--dir", str(self.dir))
        if result.returncode != 0:
            raise RuntimeError(f"ZooKeeper did not start on port {self.port}:\n{result.stderr}")

    def stop(self) -> None:
        result = run_zk_script("stop", "--dir", str(self.dir))
        if result.returncode != 0:
            raise RuntimeError(f"ZooKeeper did not stop:\n{result.stderr}")

    def kill(self) -> None:
        """SIGKILL the server (a crash: no clean shutdown) and wait until it is gone."""
        pid = self.pid
        if pid is None or not self.is_running():
            return
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        # a dying JVM's cmdline empties (is_running() is False) before its sockets close: wait for both, or a
        # restart right away finds the port still taken
        while time.monotonic() < deadline and (self.is_running() or self.port_open()):
            time.sleep(0.05)

    def port_open(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def restart(self) -> None:
        """Start again on the same port and data directory (after kill() or stop())."""
        if not self.is_running():
            self.start()


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkServer]:
    directory = tmp_path_factory.mktemp("zookeeper")
    errors = []
    for _ in range(3):  # the free port may be taken between probing and binding
        server = ZkServer(free_port(), directory)
        try:
            server.start()
            break
        except RuntimeError as exc:
            errors.append(str(exc))
    else:
        pytest.fail("cannot start a real ZooKeeper (required):\n" + "\n".join(errors), pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zk_server: ZkServer) -> str:
    """A unique, existing chroot (`/t-<uuid>`) on the session's server: isolation without a restart."""
    zk_server.restart()  # heal after a fault test that killed the server
    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    try:
        client.create(chroot)
    finally:
        client.stop()
        client.close()
    return chroot


@pytest.fixture
def zk_connect(zk_server: ZkServer, zk_chroot: str) -> str:
    """The connect string of this test's cluster: `127.0.0.1:PORT/t-<uuid>`."""
    return f"{zk_server.connect}{zk_chroot}"


@pytest.fixture
def zk_client(zk_connect: str) -> Iterator[KazooClient]:
    """A started client on this test's chroot (made by `reconciler.zk.session.connect`)."""
    client = connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0), connect_timeout_s=15.0)
    yield client
    close(client)


# pytest-xdist (`-n 2 --dist loadgroup`, scripts/test.sh): the tests sharing one expensive session fixture run on
# one worker, so each set of JVMs starts once per run; every other test goes to whichever worker is free.
# The KRaft nodes share the brokers' worker: one test compares a ZooKeeper-mode cluster with a KRaft one.
XDIST_GROUPS = (("brokers", frozenset({"kafka_cluster", "kafka", "kafka_secure", "kraft4", "kraft39", "kafka_racks",
                                       "kraft_racks"})),
                # the Connect server and the standalone cluster: their modules compare with the local session
                ("spark", frozenset({"spark", "connect_server", "standalone"})))


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the group into the test's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests using a ZooKeeper fixture get the `zk` marker, so `-m "not zk"` deselects them; tests of one
    expensive session fixture get its xdist group."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if ZK_FIXTURES & names:
            item.add_marker(pytest.mark.zk)
        group = next((g for g, fixtures in XDIST_GROUPS if fixtures & names), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


# --- secret-leak scan over the whole run (see tests/leakcheck.py) ----------------------------------------
from tests.leakcheck import (  # noqa: E402,F401
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_testnodedown,
)


# --- Spark (fleet impact) ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One real local SparkSession (local[2]) for the whole run; the impact code reuses an active session."""
    os.environ.setdefault("RECONCILER_SPARK_PARTITIONS", "2")
    from reconciler.impact.session import _classic

    session = _classic("local[2]")
    yield session
    session.stop()


# --- real Kafka brokers (tests/kafkabrokers.py) ------------------------------------------------------------
from tests.kafkabrokers import KafkaCluster, start_cluster, stop_cluster  # noqa: E402


@pytest.fixture(scope="session")
def kafka_cluster(zk_server: ZkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Three real ZooKeeper-mode Kafka brokers (ids 1-3) under their own chroot of the session's ZooKeeper,
    with a password.encoder.secret; started once per run. Real brokers are mandatory: no skip."""
    cluster = _started_brokers(zk_server, tmp_path_factory.mktemp("kafka"), "kafka", sasl=False)
    yield cluster
    stop_cluster(cluster)


@pytest.fixture(scope="module")  # one module uses it: stopped after it, not idle till the end
def kafka_racks(zk_server: ZkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Three real ZooKeeper-mode brokers with broker.rack set (1: a, 2: b, 3: b), for replica placement and
    reassignments (tests/integration/test_reassign*.py); started once per run, on first use."""
    cluster = _started_brokers(zk_server, tmp_path_factory.mktemp("kafka-racks"), "kafka-racks", sasl=False,
                               racks=["a", "b", "b"])
    yield cluster
    stop_cluster(cluster)


def _started_brokers(zk_server: ZkServer, directory: Path, name: str, *, sasl: bool,
                     racks: list[str] | None = None) -> KafkaCluster:
    """Three brokers under a fresh chroot `/<name>-<hex>`, retried when a probed free port is taken meanwhile;
    a failure to start fails the run (real brokers are mandatory: no skip)."""
    chroot = f"/{name}-{uuid.uuid4().hex[:8]}"
    errors = []
    for _ in range(3):
        try:
            return start_cluster(directory, f"{zk_server.connect}{chroot}", [free_port() for _ in range(3)],
                                 secret=uuid.uuid4().hex, sasl_ports=[free_port() for _ in range(3)] if sasl else None,
                                 racks=racks)
        except RuntimeError as exc:
            errors.append(str(exc))
    pytest.fail(f"cannot start real Kafka brokers{' with SASL' if sasl else ''} (required):\n" + "\n".join(errors),
                pytrace=False)


@pytest.fixture(scope="session")
def kafka_secure(zk_server: ZkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A second set of three real brokers with a SASL_PLAINTEXT listener each (SCRAM-SHA-256/512, credentials
    from ZooKeeper) and Kafka's AclAuthorizer (ANONYMOUS on PLAINTEXT is the super user, no ACL: denied);
    `sasl_bootstrap` names the SASL listeners. Started once per run, on first use."""
    cluster = _started_brokers(zk_server, tmp_path_factory.mktemp("kafka-secure"), "kafka-secure", sasl=True)
    yield cluster
    stop_cluster(cluster)


@pytest.fixture
def kafka(kafka_cluster: KafkaCluster, zk_server: ZkServer, request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """The session's brokers, with their logs scanned after the test: a dynamic config a broker dropped or
    refused fails the test, unless it is marked `broker_rejects` (the test provokes that on purpose). Every
    dynamic broker config is removed afterwards, so tests do not see each other's."""
    zk_server.restart()
    for broker in kafka_cluster.brokers:  # a test that stopped a broker and failed before restarting it
        kafka_cluster.start_broker(broker)
    kafka_cluster.mark_logs()
    yield kafka_cluster
    dropped = kafka_cluster.dropped_configs()
    from tests.integration.brokerrepo import reset_dynamic_configs

    reset_dynamic_configs(kafka_cluster, tmp_path_factory.mktemp("reset"))
    if request.node.get_closest_marker("broker_rejects") is None:
        assert not dropped, f"brokers dropped or refused dynamic configs: {dropped}"


# --- real KRaft Kafka nodes (tests/kraftbrokers.py): one JVM each, started on first use ----------------------
from tests.kraftbrokers import KraftCluster, kraft_cluster_fixture, kraft_fixture  # noqa: E402


@pytest.fixture(scope="session")
def kraft4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """A single-node KRaft Kafka 4.x (combined broker and controller, kafka/pom-4.xml)."""
    yield from kraft_fixture("4.x", tmp_path_factory)


@pytest.fixture(scope="module")  # one module uses it: stopped after it, not idle till the end
def kraft39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """A single-node Kafka 3.9 in KRaft mode (the ZooKeeper-mode brokers' jars, kafka/pom.xml)."""
    yield from kraft_fixture("3.9", tmp_path_factory)


@pytest.fixture(scope="module")  # one module uses it: stopped after it, not idle till the end
def kraft_racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """Three combined KRaft Kafka 4.x nodes with broker.rack set (1: a, 2: b, 3: b), for replica placement and
    reassignments (tests/integration/test_reassign_kraft.py); started once per run, on first use."""
    yield from kraft_cluster_fixture("4.x", ["a", "b", "b"], tmp_path_factory)
