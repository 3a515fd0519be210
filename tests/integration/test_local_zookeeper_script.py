"""scripts/local-zookeeper.sh: start / status / stop of a standalone server in its own directory."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.conftest import ZkServer, free_port, run_zk_script

pytestmark = pytest.mark.zk


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""  # a zombie has an empty cmdline
    except OSError:
        return False


def test_start_status_stop(tmp_path: Path) -> None:
    port, directory = free_port(), tmp_path / "zk"
    stopped = run_zk_script("status", "--port", str(port), "--dir", str(directory))
    assert stopped.returncode == 3 and "stopped" in stopped.stdout

    started = run_zk_script("start", "--port", str(port), "--dir", str(directory))
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout == ""  # messages go to stderr only
        pid = int((directory / "zookeeper.pid").read_text())
        assert alive(pid)
        config = (directory / "conf" / "zoo.cfg").read_text()
        for line in (
            f"clientPort={port}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat,mntr",
            "maxClientCnxns=0",
        ):
            assert line in config.splitlines()
        assert "-Xmx512m" in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")

        status = run_zk_script("status", "--dir", str(directory))  # port remembered from the config
        assert status.returncode == 0 and "running" in status.stdout and f"port {port}" in status.stdout

        again = run_zk_script("start", "--port", str(port), "--dir", str(directory))
        assert again.returncode == 0 and "already running" in again.stderr
        assert int((directory / "zookeeper.pid").read_text()) == pid

        other_port = run_zk_script("start", "--port", str(free_port()), "--dir", str(directory))
        assert other_port.returncode == 1 and f"already running on port {port}" in other_port.stderr
    finally:
        stop = run_zk_script("stop", "--dir", str(directory))
    assert stop.returncode == 0, stop.stderr
    assert not alive(pid)
    assert not (directory / "zookeeper.pid").exists()
    assert run_zk_script("status", "--dir", str(directory)).returncode == 3
    assert run_zk_script("stop", "--dir", str(directory)).returncode == 0  # stopping twice is fine


def test_stop_ends_only_its_own_pid(tmp_path: Path, zk_server: ZkServer) -> None:
    """A stale PID file pointing at an unrelated process (PID reuse) must not make stop kill it."""
    directory = tmp_path / "zk"
    (directory / "conf").mkdir(parents=True)
    (directory / "conf" / "zoo.cfg").write_text("clientPort=1\n")
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        (directory / "zookeeper.pid").write_text(f"{bystander.pid}\n")
        assert run_zk_script("status", "--dir", str(directory)).returncode == 3
        assert run_zk_script("stop", "--dir", str(directory)).returncode == 0
        time.sleep(0.2)
        assert bystander.poll() is None, "stop killed a process that is not its server"
        assert zk_server.is_running(), "stop of another directory touched the session's server"
    finally:
        bystander.send_signal(signal.SIGKILL)
        bystander.wait()


def test_start_refuses_a_port_in_use(tmp_path: Path, zk_server: ZkServer) -> None:
    result = run_zk_script("start", "--port", str(zk_server.port), "--dir", str(tmp_path / "zk"))
    assert result.returncode == 1
    assert f"port {zk_server.port}" in result.stderr and "in use" in result.stderr


def test_kill_and_restart_keep_the_data(zk_server: ZkServer, zk_chroot: str) -> None:
    """The fixture's fault-injection helpers: SIGKILL, then restart on the same data directory."""

    def client() -> KazooClient:
        c = KazooClient(hosts=zk_server.connect + zk_chroot, timeout=10)
        c.start(timeout=15)
        return c

    before = client()
    before.create("/kept", b"1")
    before.stop()
    before.close()
    pid = zk_server.pid
    zk_server.kill()
    assert pid is not None and not alive(pid) and not zk_server.is_running()
    zk_server.restart()
    assert zk_server.is_running() and zk_server.pid != pid
    after = client()
    try:
        assert after.get("/kept")[0] == b"1"
    finally:
        after.stop()
        after.close()


def test_usage_errors(tmp_path: Path) -> None:
    assert run_zk_script("bogus").returncode == 1
    bad_port = run_zk_script("start", "--port", "abc", "--dir", str(tmp_path / "zk"))
    assert bad_port.returncode == 1 and "invalid port" in bad_port.stderr
