"""Shared helpers of the whole-process benchmarks (bench/plan.py, bench/validate_fleet.py, bench/kraft.py,
bench/access.py, bench/fleet.py).

Not a test helper: nothing here asserts a timing. Each bench measures wall time of whole subprocesses
(interpreter start, imports, work, exit), so what is compared is what a user waits for.
"""

from __future__ import annotations

import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
ZK_SCRIPT = REPO / "scripts" / "local-zookeeper.sh"
PYTHON = Path(sys.executable)
RECONCILER = PYTHON.parent / "reconciler"  # the console script of the same venv
PYCACHE = Path(tempfile.gettempdir()) / "kafka-reconciler-bench-pycache"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _zk_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ZK_SCRIPT), *args], capture_output=True, text=True, timeout=180, check=False
    )


@contextmanager
def local_zookeeper(directory: Path) -> Iterator[int]:
    """A real standalone ZooKeeper (scripts/local-zookeeper.sh) on a free port; stopped on exit."""
    errors = []
    for _ in range(3):  # the free port may be taken between probing and binding
        port = free_port()
        result = _zk_script("start", "--port", str(port), "--dir", str(directory))
        if result.returncode == 0:
            break
        errors.append(result.stderr)
    else:
        sys.exit("local-zookeeper.sh start failed:\n" + "\n".join(errors))
    try:
        yield port
    finally:
        result = _zk_script("stop", "--dir", str(directory))
        if result.returncode != 0:
            print(f"warning: local-zookeeper.sh stop failed:\n{result.stderr}", file=sys.stderr)


def purge_notifications(client: Any) -> None:
    """Delete the config change notifications earlier runs wrote (not measured), as brokers do in a cluster
    (`ZkNodeChangeNotificationListener.purgeObsoleteNotifications`); `client` a started KazooClient."""
    children = client.get_children("/config/changes")
    for start in range(0, len(children), 2000):
        transaction = client.transaction()
        for child in children[start:start + 2000]:
            transaction.delete(f"/config/changes/{child}")
        transaction.commit()


KRAFT_SCRIPT = REPO / "scripts" / "local-kraft.sh"


@contextmanager
def local_kraft(directory: Path, heap: str = "1g") -> Iterator[str]:
    """A real single-node KRaft Kafka 4.x (scripts/local-kraft.sh: combined mode, StandardAuthorizer) with `heap`
    and quiet per-record logs, as a cluster of 10,000 topics needs; yields its bootstrap address; stopped on exit."""
    env = {**os.environ, "LOCAL_KRAFT_HEAP": heap, "LOCAL_KRAFT_QUIET": "1"}

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(KRAFT_SCRIPT), *args, "--dir", str(directory)], capture_output=True,
                              text=True, timeout=300, check=False, env=env)

    errors = []
    for _ in range(3):  # a probed free port may be taken meanwhile
        result = script("start")
        if result.returncode == 0:
            break
        errors.append(result.stderr[-3000:])
    else:
        sys.exit("local-kraft.sh start failed:\n" + "\n".join(errors))
    try:
        facts = dict(line.split("=", 1) for line in (directory / "cluster.env").read_text().split())
        yield facts["BOOTSTRAP"]
    finally:
        result = script("stop")
        if result.returncode != 0:
            print(f"warning: local-kraft.sh stop failed:\n{result.stderr}", file=sys.stderr)


@dataclass
class Timing:
    """Whole-process wall and CPU (user + system, children included) seconds of each run."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


def time_process(args: Sequence[str], *, ok: Sequence[int] = (0,)) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole subprocess (stdout discarded); exits the bench if it fails."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    # Bytecode cached as an installed package has it (pip compiles at install), but outside the checkout.
    env.update(NO_COLOR="1", PYTHONPYCACHEPREFIX=str(PYCACHE))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in ok:
        sys.exit(f"{' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr[-4000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu


def measure(commands: Mapping[str, Sequence[str]], runs: int) -> dict[str, Timing]:
    """Each command once unmeasured (bytecode, page cache), then `runs` rounds of all of them in turn, so
    that a busy moment of the machine hits every command alike."""
    for args in commands.values():
        time_process(args)
    timings = {label: Timing() for label in commands}
    for round_ in range(runs):
        for label, args in commands.items():
            wall, cpu = time_process(args)
            timings[label].wall.append(wall)
            timings[label].cpu.append(cpu)
            print(f"  run {round_ + 1}/{runs}  {label:<34} {wall:7.3f} s wall  {cpu:7.3f} s CPU", flush=True)
    return timings


def load_average() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def table(rows: Sequence[tuple[str, Timing]], reference: Timing, name: str) -> None:
    """Rows of (label, timing): median wall and CPU seconds, and the wall ratio to `reference` (rich aligns)."""
    out = Table(box=None, pad_edge=False, padding=(0, 2, 0, 2), show_edge=False)
    out.add_column("")
    for header in ("wall s", "CPU s", f"wall / {name}"):
        out.add_column(header, justify="right")
    for label, timing in rows:
        ratio = timing.median / reference.median
        out.add_row(label, f"{timing.median:.3f}", f"{timing.median_cpu:.3f}", f"{ratio:.2f}")
    Console(highlight=False, markup=False, emoji=False).print(out)


# --- KRaft set-up through kafka-python's Admin client (seeding and baselines, not measured paths) ---------------

def kraft_admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=[bootstrap], request_timeout_ms=300_000)


def kraft_send(admin: Any, request: Any, timeout_ms: int | None = None) -> Any:
    """One request through the client's own connection manager, its answer awaited."""
    manager = admin._manager

    async def ask() -> Any:
        return await manager.send(request, request_timeout_ms=timeout_ms)

    return manager.run(ask)


# --- the ZooKeeper read floors' multiRead (bench/access.py, bench/fleet.py): source text of a bare program --------

ZK_MULTIREAD = r'''
from kazoo.protocol.serialization import int_struct, multiheader_struct, read_buffer, read_string, stat_struct
from kazoo.protocol.serialization import write_string

GET_DATA, GET_CHILDREN = 4, 8


class MultiRead:  # OpCode.multiRead (22), as reconciler.zk.multiread sends it
    type = 22

    def __init__(self, ops):
        self.ops = ops

    def serialize(self):
        out = bytearray()
        for op, path in self.ops:
            out += multiheader_struct.pack(op, False, -1) + write_string(path) + b"\0"
        return out + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buf, offset):
        results = []
        while True:
            op, done, _ = multiheader_struct.unpack_from(buf, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op == GET_DATA:
                data, offset = read_buffer(buf, offset)
                results.append((data, stat_struct.unpack_from(buf, offset)))
                offset += stat_struct.size
            elif op == GET_CHILDREN:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            else:  # an error (-1): NoNode for a parent that does not exist
                offset += int_struct.size
                results.append(None)
'''
