"""Helpers of the process-level reliability tests (tests/integration/test_reliability_*.py).

The reconciler runs as the real command line in a subprocess (`python -m reconciler`, or `python -m
tests.integration.faultproc` when a test needs the process to pause itself at a precise point), against
manifests written to a temporary repository whose Cluster points at the session's ZooKeeper and a chroot.
Every run is bounded by a timeout, and its own peak memory is measured with `os.wait4`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from tests.conftest import REPO

PYTHON = sys.executable


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float

    def __str__(self) -> str:
        return f"exit {self.code} after {self.seconds:.1f} s\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n" \
               f"{self.stderr[-3000:]}"


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")}
    # the reliability chroots hold no registered broker: apply would refuse them (zk/target.py) otherwise
    env.update({"PYTHONPATH": str(REPO), "NO_COLOR": "1", "RECONCILER_USER": "reliability@test",
                "RECONCILER_ALLOW_NO_BROKERS": "1"})
    env.update(extra or {})
    return env


class Proc:
    """A started CLI process; `finish()` waits (bounded), kills on timeout and measures its own peak RSS
    (`os.wait4`, so it is this process's maximum, not the maximum over every child the tests ever had)."""

    def __init__(self, repo: Path, args: Sequence[str], *, env: Mapping[str, str] | None = None,
                 module: str = "reconciler", stdin: bytes | None = None) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [PYTHON, "-m", module, "--repo", str(repo), *args],
            cwd=str(REPO), env=cli_env(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.pid = self.proc.pid
        self.result: Run | None = None
        self._out: dict[str, bytes] = {}
        self._readers = [threading.Thread(target=self._drain, args=(name, pipe), daemon=True)
                         for name, pipe in (("out", self.proc.stdout), ("err", self.proc.stderr))]
        for reader in self._readers:
            reader.start()
        if stdin is not None and self.proc.stdin is not None:
            self.proc.stdin.write(stdin)
            self.proc.stdin.close()

    def _drain(self, name: str, pipe: Any) -> None:
        self._out[name] = pipe.read()

    def state(self) -> str:
        """The process state letter from /proc (R, S, T when stopped, Z when exited), '' once reaped."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return ""
        return stat.rsplit(")", 1)[1].split()[0]

    def wait_stopped(self, timeout: float) -> None:
        """Wait until the process has paused itself (SIGSTOP, see tests.integration.faultproc)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state == "T":
                return
            if state in ("", "Z", "X"):
                raise AssertionError(f"the process ended before pausing:\n{self.finish(5)}")
            time.sleep(0.01)
        raise AssertionError(f"the process did not pause within {timeout} s:\n{self.finish(1)}")

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def finish(self, timeout: float) -> Run:
        """Wait for the exit; a process still running after `timeout` seconds is killed (a test failure)."""
        if self.result is not None:
            return self.result
        deadline = time.monotonic() + timeout
        timed_out = False
        while True:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                timed_out = True
                os.kill(self.pid, signal.SIGKILL)
                os.kill(self.pid, signal.SIGCONT)
                pid, status, usage = os.wait4(self.pid, 0)
                break
            time.sleep(0.01)
        seconds = time.monotonic() - self.started
        self.proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        for reader in self._readers:
            reader.join(10)
        out = self._out.get("out", b"").decode(errors="replace")
        err = self._out.get("err", b"").decode(errors="replace")
        self.result = Run(self.proc.returncode, out, err, seconds, usage.ru_maxrss / 1024)
        if timed_out:
            raise AssertionError(f"reconciler still running after {timeout} s (killed):\n{self.result}")
        return self.result


def cli(repo: Path, *args: str, timeout: float = 60, env: Mapping[str, str] | None = None,
        module: str = "reconciler", stdin: bytes | None = None) -> Run:
    return Proc(repo, args, env=env, module=module, stdin=stdin).finish(timeout)


# --- manifests -------------------------------------------------------------------------------------------


def write_repo(
    root: Path,
    connect: str,
    *,
    cluster: str = "c1",
    topics: Mapping[str, Mapping[str, str]] | None = None,
    brokers: Sequence[int] = (1, 2, 3),
    session_timeout_s: float | None = None,
    broker_default: Mapping[str, str] | None = None,
) -> Path:
    """A manifest repository with one cluster; `topics` maps existing topic names to their desired config."""
    directory = root / "clusters" / cluster
    directory.mkdir(parents=True, exist_ok=True)
    timeout = f", sessionTimeoutSeconds: {session_timeout_s:g}" if session_timeout_s else ""
    (directory / "cluster.yaml").write_text(
        f"apiVersion: reconciler/v1\nkind: Cluster\nmeta: {{name: {cluster}}}\nspec:\n"
        f"  kafkaVersion: \"3.6\"\n  zookeeper: {{connect: \"{connect}\"{timeout}}}\n"
        f"  brokers: [{', '.join(map(str, brokers))}]\n  policy: {{allowDestructive: true}}\n",
        encoding="utf-8",
    )
    if topics is not None:
        lines = ["apiVersion: reconciler/v1", "kind: Topics", "meta: {}", "spec:", "  topics:"]
        for name, config in topics.items():
            inner = ", ".join(f"{k}: {json.dumps(v)}" for k, v in sorted(config.items()))
            lines.append(f"    {name}: {{config: {{{inner}}}}}")
        (directory / "topics.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if broker_default is not None:
        (directory / "brokers.yaml").write_text(
            "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n"
            f"  config: {json.dumps(dict(sorted(broker_default.items())))}\n",
            encoding="utf-8",
        )
    return root


# --- ZooKeeper state -------------------------------------------------------------------------------------


def config_bytes(config: Mapping[str, str]) -> bytes:
    """Kafka's entity config JSON, written independently of reconciler.zk.layout."""
    return json.dumps({"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":")).encode()


def assignment_bytes(partitions: int = 1) -> bytes:
    parts = ",".join(f'"{p}":[{1 + p % 3}]' for p in range(partitions))
    return f'{{"version":3,"partitions":{{{parts}}},"adding_replicas":{{}},"removing_replicas":{{}}}}'.encode()


def seed_topics(client: KazooClient, topics: Mapping[str, Mapping[str, str]], chunk: int = 500) -> None:
    """Existing topics (assignment + config znodes), created in a few large multis."""
    for path in ("/brokers/topics", "/config/topics", "/config/changes"):
        client.ensure_path(path)
    names = list(topics)
    for start in range(0, len(names), chunk):
        tx = client.transaction()
        for name in names[start : start + chunk]:
            tx.create(f"/brokers/topics/{name}", assignment_bytes())
            tx.create(f"/config/topics/{name}", config_bytes(topics[name]))
        results = tx.commit()
        assert not any(isinstance(r, Exception) for r in results), results[:3]


def tree(client: KazooClient, path: str = "/") -> dict[str, tuple[bytes, int, int, int]]:
    """Every znode under the chroot (the chroot itself included) with data, version, mzxid and pzxid:
    equal trees mean nothing was created, changed or deleted anywhere (pzxid moves with any child change)."""
    data, stat = client.get(path)
    out = {path: (data, stat.version, stat.mzxid, stat.pzxid)}
    pending = [(path, client.get_children_async(path))]
    while pending:
        parent, result = pending.pop()
        for child in result.get(timeout=30):
            full = f"{parent.rstrip('/')}/{child}"
            data, stat = client.get(full)
            out[full] = (data, stat.version, stat.mzxid, stat.pzxid)
            pending.append((full, client.get_children_async(full)))
    return out


def outside_reconciler(snapshot: dict[str, tuple[bytes, int, int, int]]) -> dict[str, tuple[bytes, int, int, int]]:
    """The tree without the reconciler's own lock and audit nodes (and the root's pzxid, which creating them
    moves): what Kafka sees."""
    out = {path: value for path, value in snapshot.items() if not path.startswith("/reconciler")}
    out["/"] = (*out["/"][:3], 0)
    return out


def topic_configs(client: KazooClient, names: Iterable[str]) -> dict[str, bytes]:
    pending = [(name, client.get_async(f"/config/topics/{name}")) for name in names]
    return {name: result.get(timeout=30)[0] for name, result in pending}


def notification_entities(client: KazooClient) -> list[str]:
    """The entity_path of every change notification (duplicates kept: each must appear once)."""
    if not client.exists("/config/changes"):
        return []
    children = client.get_children("/config/changes")
    pending = [client.get_async(f"/config/changes/{c}") for c in children]
    return [json.loads(r.get(timeout=30)[0])["entity_path"] for r in pending]


def wait_until(predicate: Any, timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
