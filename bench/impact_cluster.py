"""Impact job scale-out benchmark: the same `reconciler impact` on a Spark standalone cluster (a master and two
workers on this machine, scripts/spark-standalone.sh) and on in-process local[*], in the same run.

Run: .venv/bin/python bench/impact_cluster.py [--topics 1000000] [--work .local/bench-impact] [--sizes]
     [--workers 2] [--cores 1] [--executor-memory 2g] [--repeat 1] [--master spark://...]
Each measurement is the whole CLI in a fresh process (`python -m reconciler impact --inventory ... --format
json`, a cold JVM as a PR check pays it): wall = process start -> exit; the phase times (Spark start, reading the
inventory, the job and summary) are the CLI's own progress lines on stderr. On the cluster the job's tasks run
in one executor JVM per worker (`--cores` each, `--executor-memory` heap); the driver keeps its default heap.
Peak memory: the highest sum of RSS sampled every 0.5 s over the CLI's process tree (Python + driver JVM) and,
on the cluster, over its executor JVMs. The JSON reports of both engines must be byte-identical, or the
benchmark fails (both are then kept under --work for a diff).
The fleet comes from bench/fleetgen.py (1,000 topics per cluster) and is cached under --work, shared with
bench/impact.py; generation time is not part of the figures. Without --master, the cluster is started in
--work/spark-standalone before the runs and stopped after them, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "spark-standalone.sh"
PER_CLUSTER = 1000
PHASES = {"start": "Spark start", "before": "inventory read", "effective": "job + summary"}


def fleet_for(work: Path, topics: int, sizes: bool) -> Path:
    """The cached fleet of bench/impact.py's layout, generated on first use."""
    clusters = topics // PER_CLUSTER
    fleet = work / f"fleet-{clusters}x{PER_CLUSTER}{'-sizes' if sizes else ''}"
    if not (fleet / "fleetgen.json").exists():
        cmd = [sys.executable, str(REPO / "bench" / "fleetgen.py"), "--clusters", str(clusters),
               "--topics", str(PER_CLUSTER), "--out", str(fleet)] + (["--sizes"] if sizes else [])
        print(f"generating {clusters} clusters x {PER_CLUSTER} topics ...", file=sys.stderr)
        subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return fleet


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def processes() -> Iterator[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        yield int(proc.name), ppid, cmdline


def tree_and_executors(root: int, cluster_dir: Path | None) -> tuple[list[int], list[int]]:
    procs = list(processes())
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, ppid, _ in procs if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    marker = f"{cluster_dir}/home/jars/" if cluster_dir else None
    executors = [pid for pid, _, cmd in procs if marker and "CoarseGrainedExecutorBackend" in cmd and marker in cmd]
    return sorted(tree), executors


@contextmanager
def peak_memory(root: int, cluster_dir: Path | None) -> Iterator[dict[str, float]]:
    """Peak RSS (MiB) of the CLI's process tree and of the cluster's executors while the block runs."""
    peaks = {"driver": 0.0, "executors": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            tree, executors = tree_and_executors(root, cluster_dir)
            peaks["driver"] = max(peaks["driver"], rss_mb(tree))
            peaks["executors"] = max(peaks["executors"], rss_mb(executors))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()


def phase_seconds(stderr: str) -> dict[str, float]:
    """Seconds of each phase from the CLI's progress lines (`impact: start Spark (...): Spark 4 (5.2 s)`)."""
    found: dict[str, float] = {}
    for line in stderr.splitlines():
        m = re.search(r"impact: (\w+) .*\((\d+(?:\.\d+)?) s\)\s*$", line)
        if m and m.group(1) in PHASES:
            found[m.group(1)] = float(m.group(2))
    return found


def run_cli(fleet: Path, master: str, env: dict[str, str], cluster_dir: Path | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "reconciler", "--repo", str(fleet / "manifests"), "impact",
           "--inventory", str(fleet / "inventory"), "--master", master, "--format", "json"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    with peak_memory(proc.pid, cluster_dir) as peaks:
        out, err = proc.communicate()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"impact on {master} failed ({proc.returncode}):\n{err[-4000:]}")
    return {"wall": wall, "report": out, "phases": phase_seconds(err), **peaks}


@contextmanager
def standalone(args: argparse.Namespace) -> Iterator[tuple[str, Path | None]]:
    """The cluster to use: --master as given, or one started here and always stopped."""
    if args.master:
        yield args.master, None
        return
    cluster_dir = args.work / "spark-standalone"
    env = {**os.environ, "PYTHON": sys.executable}
    try:
        started = time.monotonic()
        proc = subprocess.run(["bash", str(SCRIPT), "start", "--dir", str(cluster_dir), "--workers",
                               str(args.workers), "--cores", str(args.cores), "--memory", args.executor_memory],
                              stdout=subprocess.PIPE, text=True, env=env, check=False)
        if proc.returncode != 0:
            sys.exit("scripts/spark-standalone.sh start failed (its messages are above)")
        print(f"cluster {proc.stdout.strip()} ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield proc.stdout.strip(), cluster_dir
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", "--dir", str(cluster_dir)], env=env, check=False)


def compare(work: Path, local: dict[str, Any], cluster: dict[str, Any]) -> None:
    if local["report"] != cluster["report"]:
        (work / "report-local.json").write_text(local["report"], encoding="utf-8")
        (work / "report-cluster.json").write_text(cluster["report"], encoding="utf-8")
        sys.exit(f"the reports differ: diff {work}/report-local.json {work}/report-cluster.json")


def measure(args: argparse.Namespace, fleet: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Runs alternate local and cluster (`--repeat` each), so both see the same machine load on average."""
    env = {**os.environ, "RECONCILER_SPARK_EXECUTOR_MEMORY": args.executor_memory}
    env.pop("SPARK_HOME", None)
    locals_, clusters = [], []
    with standalone(args) as (url, cluster_dir):
        for i in range(args.repeat):
            locals_.append(run_cli(fleet, "local[*]", env, None))
            clusters.append(run_cli(fleet, url, env, cluster_dir))
            compare(args.work, locals_[0], clusters[-1])
            compare(args.work, locals_[0], locals_[-1])
            print(f"run {i + 1}/{args.repeat}: local {locals_[-1]['wall']:.1f} s, cluster "
                  f"{clusters[-1]['wall']:.1f} s, reports identical", file=sys.stderr)
    return locals_, clusters, url


def median(runs: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float:
    return statistics.median(get(r) for r in runs)


def table(args: argparse.Namespace, gen: dict[str, Any], locals_: list[dict[str, Any]],
          clusters: list[dict[str, Any]], url: str) -> str:

    report = json.loads(locals_[0]["report"])
    shape = (f"standalone {url}: {args.workers} workers x {args.cores} core(s), executors "
             f"{args.executor_memory}" if not args.master else f"cluster {url}")
    lines = [f"{gen['topics']:,} topics in {gen['clusters']:,} clusters; {report['topicsAffected']:,} topics / "
             f"{report['partitionsAffected']:,} partitions affected; JSON reports identical "
             f"({len(locals_[0]['report']):,} bytes); medians of {args.repeat} run(s) each, whole CLI",
             "",
             "| engine | wall | " + " | ".join(PHASES.values()) + " | peak RSS driver (Python + JVM) | "
             "peak RSS executors | wall ÷ local wall |",
             "|---|" + "---:|" * (len(PHASES) + 4)]
    base = median(locals_, lambda r: r["wall"])
    for name, runs in (("local[*] (in-process)", locals_), (shape, clusters)):
        cells = [f"{median(runs, lambda r, p=p: r['phases'].get(p, float('nan'))):.1f} s" for p in PHASES]
        executors = median(runs, lambda r: r["executors"])
        lines.append(f"| {name} | {median(runs, lambda r: r['wall']):.1f} s | " + " | ".join(cells)
                     + f" | {median(runs, lambda r: r['driver']):.0f} MiB | "
                     + (f"{executors:.0f} MiB" if executors else "–")
                     + f" | {median(runs, lambda r: r['wall']) / base:.2f} |")
    load = os.getloadavg()
    lines.append(f"\n(load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} "
                 f"cores; driver heap {os.environ.get('RECONCILER_SPARK_DRIVER_MEMORY', '2g')} on both)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=REPO / ".local" / "bench-impact")
    parser.add_argument("--sizes", action="store_true", help="an inventory with partition sizes (bytes)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--executor-memory", default="2g", help="heap per executor (= each worker's memory)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--master", help="an existing cluster instead of starting one here")
    args = parser.parse_args()
    args.work = args.work.resolve()  # executors resolve the inventory path on their own
    fleet = fleet_for(args.work, args.topics, args.sizes)

    gen = json.loads((fleet / "fleetgen.json").read_text())
    locals_, clusters, url = measure(args, fleet)
    print(table(args, gen, locals_, clusters, url))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
