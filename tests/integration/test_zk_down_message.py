"""A plan against a ZooKeeper that does not answer (issue 30, item 5): stderr says at once that it is connecting
and where, long before the 10 s connect timeout, and the error after it names what to check: the connect string
and the manifest line it came from, that ZooKeeper runs there, the allow-list, TLS. stdout stays empty."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, free_port

pytestmark = pytest.mark.timeout(120)


def write_cluster(root: Path, connect: str) -> Path:
    directory = root / "clusters" / "c1"
    directory.mkdir(parents=True)
    (directory / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1}\nspec:\n  kafkaVersion: \"3.6\"\n"
        f"  zookeeper:\n    connect: \"{connect}\"\n  brokers: [1]\n", encoding="utf-8")
    return root


def test_a_closed_port_is_announced_at_once_and_the_timeout_names_what_to_check(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there: kazoo retries until the connect timeout
    connect = f"127.0.0.1:{port}/kafka"
    root = write_cluster(tmp_path, connect)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")}
    env.update({"PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "reconciler", "--repo", str(root), "plan", "c1"],
                            cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    ended = time.monotonic() - started
    err = "\n".join(line for _, line in lines)
    assert proc.returncode == 1, err
    assert stdout == ""
    announced = [(at, line) for at, line in lines if line == f"c1: connecting to ZooKeeper {connect} (up to 10 s)…"]
    assert announced, err
    # at once: well before the timeout ends the command (start-up and validation included)
    assert announced[0][0] < ended - 7, (announced, ended)
    error = [line for _, line in lines if line.startswith("error: ")]
    assert error == [f"error: cannot connect to ZooKeeper at {connect} within 10 s (cluster c1, "
                     "spec.zookeeper.connect at clusters/c1/cluster.yaml:7)"], err
    checks = [line for _, line in lines if line.startswith("  check: ")]
    assert any(f"'{connect}'" in c and "connect string" in c for c in checks), err
    assert any(f"ZooKeeper runs at 127.0.0.1:{port}" in c for c in checks), err
    assert any("RECONCILER_ZK_ALLOWED_HOSTS" in c for c in checks), err
    assert any("TLS" in c and "zookeeper.tls is not set" in c for c in checks), err
    assert lines[-1][1].startswith("  check: "), err  # the error's last lines: nothing after them
