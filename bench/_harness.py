"""Shared helpers of the whole-process benchmarks (bench/plan.py, bench/validate_fleet.py).

Not a test helper: nothing here asserts a timing. Each bench measures wall time of whole subprocesses
(interpreter start, imports, work, exit), so what is compared is what a user waits for.
"""

from __future__ import annotations

import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

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


def time_process(args: Sequence[str], *, ok: Sequence[int] = (0,), cwd: Path | None = None) -> float:
    """Wall time of one whole subprocess (stdout discarded); exits the bench if it fails."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    # Bytecode cached as an installed package has it (pip compiles at install), but outside the checkout.
    env.update(NO_COLOR="1", PYTHONPYCACHEPREFIX=str(PYCACHE))
    start = time.perf_counter()
    result = subprocess.run(
        list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, check=False
    )
    elapsed = time.perf_counter() - start
    if result.returncode not in ok:
        sys.exit(f"{' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr[-4000:]}")
    return elapsed


def median_runs(label: str, args: Sequence[str], runs: int, **kwargs: object) -> float:
    """Median wall time of `runs` runs (after one unmeasured warm-up run: .pyc files, page cache)."""
    time_process(args, **kwargs)  # type: ignore[arg-type]
    times = [time_process(args, **kwargs) for _ in range(runs)]  # type: ignore[arg-type]
    shown = ", ".join(f"{t:.3f}" for t in times)
    print(f"  {label:<34} median {statistics.median(times):7.3f} s   runs: {shown}", flush=True)
    return statistics.median(times)


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


def table(rows: Sequence[tuple[str, float]], reference: float) -> None:
    """Rows of (label, seconds), each with its ratio to `reference`."""
    width = max(len(label) for label, _ in rows)
    print(f"  {'':<{width}}  {'median s':>9}  {'x plan':>7}")
    for label, seconds in rows:
        print(f"  {label:<{width}}  {seconds:9.3f}  {seconds / reference:7.2f}")
