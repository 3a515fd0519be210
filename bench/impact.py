"""Impact benchmark with the floor beside it: the project's job against a minimal Spark program of the same
answer (bench/impact_floor.py) and a single-process pure-Python baseline (bench/impact_baseline.py), on the
same bench/fleetgen.py fleets (1,000 topics per cluster), in one run.

Run: .venv/bin/python bench/impact.py [--topics 100000 1000000 [5000000]] [--repeat N] [--work DIR] [--sizes]
Per size, each measurement a fresh process (median of --repeat runs, default 1):
  project CLI     `reconciler --repo FLEET/manifests impact --inventory FLEET/inventory --format json`, a cold
                  process: wall time from spawn to exit; peak RSS = sum over its process tree (Python + JVM) of
                  VmHWM, sampled every 0.2 s from /proc. Its driver maps the class archive of this runtime
                  (reconciler.impact.classarchive), made once by an unmeasured run with
                  RECONCILER_SPARK_CLASS_ARCHIVE=save into WORK/cache, as an operator would prepare it;
                  "CLI, no archive" is the same command with RECONCILER_SPARK_CLASS_ARCHIVE=off (the job and the
                  minimal program below run without an archive, as a plain Spark program starts)
  project job     in one process: manifests read, session started, then `job.compute_changes` +
                  `aggregate.summary` twice on the same session: "job" (first run, cold JVM) and "warm" (the
                  second: what a long-running Spark or Connect server pays)
  minimal         the same with `impact_floor.run`: "whole" = process start -> first answer (imports, JVM
                  start, manifests, the two queries), "warm" = the second run in the same JVM
  python          pure-Python baseline: "wall" = process start -> counts, "compute" = pyarrow read + dicts
  Connect client  the same CLI command as a PR check runs it against a warm Spark Connect server
                  (SPARK_REMOTE; scripts/spark-connect.sh, started once per benchmark with the driver's memory
                  and warmed by two unmeasured runs per size): wall time of the whole client process (Python,
                  imports, manifests, the queries on the server); RSS of the client alone (the server's is its
                  own). Server-side shuffle partitions as local[*]'s
Spark jobs and stages per run: `SparkContext.statusTracker()`, each run under its own job group: the job ids of
the group, and the stages of those jobs that ran tasks (stages skipped because a shuffle was reused do not
count); queries = SQL executions (the session's SQL status store) during the run. Driver and JVM RSS: VmHWM of
the Python process and of the JVM (its pid asked of the JVM). Every program must give the identical result
(the counts and per key topics/partitions), or the benchmark exits non-zero.
Targets (issue 17): warm job <= 1.5 x minimal warm; whole CLI <= 1.3 x minimal whole; 1M -> 5M growth no worse
than linear (time ratio <= 5); warm job ahead of the Python baseline's compute at 1M. Issue 34: the whole
Connect client process <= 1.5 x the warm job (same run).
Fleets come from bench/fleetgen.py, cached under --work (generation is not measured; 5M takes minutes).
Each size's raw figures are kept in WORK/results.json; --earlier adds the sizes of earlier runs to the report
(their time on stderr), e.g. `--topics 5000000 --earlier` after a default run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PER_CLUSTER = 1000
TIMEOUT = 1800  # seconds a measured process may take before it counts as failed
WARM_UP_RUNS = 2  # unmeasured Connect client runs per size before the measured ones (a CI server is warm)
COUNTS = ("clustersAffected", "brokersAffected", "topicsAffected", "partitionsAffected", "bytesAffected")


def peak_rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def result_of(summary: dict[str, Any]) -> dict[str, Any]:
    """What every program must agree on: the totals and, per key with topics, its topics and partitions."""
    out = {k: summary[k] for k in COUNTS}
    out["byKey"] = {k["key"]: {"topics": k["topics"], "partitions": k["partitions"]}
                    for k in summary["byKey"] if k["topics"]}
    return out


# ---- one measurement inside a fresh process (--one ENGINE FLEET) -----------------------------------------------

def spark_run(spark: Any, label: str, fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """fn() under its own job group: seconds, Spark jobs, stages that ran tasks, SQL executions."""
    sc = spark.sparkContext
    store = spark._jsparkSession.sharedState().statusStore()
    queries = store.executionsCount()
    sc.setJobGroup(label, label)
    t = time.monotonic()
    value = fn()
    seconds = time.monotonic() - t
    sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(label)
    stages = {s for j in jobs if (info := tracker.getJobInfo(j)) is not None for s in info.stageIds}
    ran = [s for s in stages if (st := tracker.getStageInfo(s)) is not None and st.numCompletedTasks > 0]
    return value, {"s": seconds, "jobs": len(jobs), "stages": len(ran), "queries": store.executionsCount() - queries}


def one_spark(engine: str, fleet: Path, after: Any, started: float, out: dict[str, Any]) -> dict[str, Any]:
    from reconciler.impact.session import spark_session

    inventory = fleet / "inventory"
    if engine == "project":
        from reconciler.impact.aggregate import summary as summarize
        from reconciler.impact.inventory import read_inventory
        from reconciler.impact.job import compute_changes

        def job() -> dict[str, Any]:
            return result_of(summarize(spark, compute_changes(spark, read_inventory(spark, inventory), after)))
    else:
        import impact_floor

        def job() -> dict[str, Any]:
            return dict(impact_floor.run(spark, inventory, after))

    t = time.monotonic()
    with spark_session("local[*]") as spark:
        out["session_s"] = time.monotonic() - t
        result, out["cold"] = spark_run(spark, "bench-cold", job)
        out["whole_s"] = time.monotonic() - started
        again, out["warm"] = spark_run(spark, "bench-warm", job)
        if again != result:
            sys.exit(f"{engine}: the warm run differs from the first:\n{again}\n{result}")
        out["jvm_rss_mb"] = peak_rss_mb(spark._jvm.java.lang.ProcessHandle.current().pid())
        out["rss_mb"] = peak_rss_mb()
    return result


def one(engine: str, fleet: Path, started: float) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "bench"))
    from reconciler.impact.afterstate import after_rows
    from reconciler.workflow import load_desired

    t = time.monotonic()
    states, _ = load_desired(fleet / "manifests", [])
    after = after_rows(states)
    out: dict[str, Any] = {"manifests_s": time.monotonic() - t}
    if engine == "python":
        import impact_baseline

        t = time.monotonic()
        result = impact_baseline.run(fleet / "inventory", after)
        out |= {"compute_s": time.monotonic() - t, "rss_mb": peak_rss_mb(), "whole_s": time.monotonic() - started}
    else:
        result = one_spark(engine, fleet, after, started, out)
    out["result"] = result
    return out


# ---- the driver: fresh processes, the CLI, the table --------------------------------------------------------

class TreeRss:
    """Peak RSS of a process tree: VmHWM of every descendant, sampled until the root exits, summed."""

    def __init__(self, root: int) -> None:
        self.root, self.peaks, self.stop = root, {}, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _children(self) -> dict[int, list[int]]:
        kids: dict[int, list[int]] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                kids.setdefault(ppid, []).append(int(d.name))
        return kids

    def _loop(self) -> None:
        while not self.stop.is_set():
            kids, todo = self._children(), [self.root]
            while todo:
                pid = todo.pop()
                with contextlib.suppress(OSError, ValueError):
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), peak_rss_mb(pid))
                todo += kids.get(pid, [])
            self.stop.wait(0.2)

    def total(self) -> float:
        self.stop.set()
        self.thread.join()
        return sum(self.peaks.values())


def measure(engine: str, fleet: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", engine, str(fleet), "--t0", repr(time.time())]
    # the job and the minimal program start their JVM as a plain Spark program does: without a class archive
    env = {**os.environ, "RECONCILER_SPARK_CLASS_ARCHIVE": "off"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {TIMEOUT} s", "whole_s": float("nan")}
    if proc.returncode != 0:  # recorded (the project's job may fail on a large fleet), shown in the table
        print(f"{engine} run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
        return {"error": _reason(proc.stderr), "whole_s": float("nan")}
    return dict(json.loads(proc.stdout))


def _reason(stderr: str) -> str:
    """The line that says why a run failed (Spark's exception message if there is one)."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    for needle in ("OutOfMemory", "Not enough memory", "Exception:", "Error:", "error:"):
        hits = [x for x in lines if needle in x]
        if hits:
            return hits[-1][:160]
    return (lines or ["?"])[-1][:160]


def cli_env(work: Path, archive: str) -> dict[str, str]:
    """The CLI's environment: the bench's own cache directory, the class archive used, saved or off."""
    env = {**os.environ, "RECONCILER_CACHE_DIR": str(work / "cache")}
    env.pop("RECONCILER_SPARK_CLASS_ARCHIVE", None)
    return env | ({"RECONCILER_SPARK_CLASS_ARCHIVE": archive} if archive else {})


def prepare_class_archive(work: Path, fleet: Path) -> None:
    """The driver's class archive for this runtime, made once (not measured) if WORK/cache has none."""
    sys.path.insert(0, str(REPO))
    from reconciler.impact.classarchive import archive_path

    os.environ["RECONCILER_CACHE_DIR"] = str(work / "cache")  # where archive_path() looks (as cli_env sets it)
    path = archive_path()
    if path is None or path.is_file():
        return
    print(f"making the driver's class archive with an unmeasured run on {fleet.name}", file=sys.stderr)
    r = measure_cli(fleet, cli_env(work, "save"))
    if "error" in r or not path.is_file():
        sys.exit(f"could not make the class archive {path}: {r.get('error')}")


def measure_cli(fleet: Path, env: dict[str, str]) -> dict[str, Any]:
    cmd = [str(REPO / ".venv" / "bin" / "reconciler"), "--repo", str(fleet / "manifests"), "impact",
           "--inventory", str(fleet / "inventory"), "--format", "json"]
    what = "Connect client" if env.get("SPARK_REMOTE") else "project CLI"
    t = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    rss = TreeRss(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        return {"error": f"no answer within {TIMEOUT} s", "whole_s": float("nan"), "rss_mb": rss.total()}
    wall = time.monotonic() - t
    out: dict[str, Any] = {"whole_s": wall, "rss_mb": rss.total()}
    if proc.returncode != 0:
        out["error"] = _reason(stderr)
        print(f"{what} failed (exit {proc.returncode}):\n{stderr[-3000:]}", file=sys.stderr)
        return out
    out["result"] = result_of(json.loads(stdout))
    return out


class ConnectServer:
    """scripts/spark-connect.sh's server for the Connect column: started once (the driver's memory, as the local
    runs have), stopped at the end; its environment is what a CI job sources from connect.env."""

    def __init__(self, work: Path) -> None:
        self.dir = work / "connect"
        memory = os.environ.get("RECONCILER_SPARK_DRIVER_MEMORY", "2g")
        cmd = ["bash", str(REPO / "scripts" / "spark-connect.sh"), "start", "--dir", str(self.dir), "--memory", memory]
        started = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
        if started.returncode != 0:
            sys.exit(f"could not start the Spark Connect server:\n{started.stderr[-3000:]}")
        pairs = (line.split("=", 1) for line in (self.dir / "connect.env").read_text().splitlines() if "=" in line)
        self.env = {k: v for k, v in pairs if k in ("SPARK_REMOTE", "RECONCILER_SPARK_UI_URL")}
        self.warm: set[Path] = set()

    def client_env(self, work: Path) -> dict[str, str]:
        env = cli_env(work, "") | self.env
        env.pop("RECONCILER_SPARK_PARTITIONS", None)
        return env

    def stop(self) -> None:
        subprocess.run(["bash", str(REPO / "scripts" / "spark-connect.sh"), "stop", "--dir", str(self.dir)],
                       capture_output=True, text=True, cwd=REPO, check=False)


def fleet_for(work: Path, topics: int, sizes: bool) -> Path:
    clusters = topics // PER_CLUSTER
    fleet = work / f"fleet-{clusters}x{PER_CLUSTER}{'-sizes' if sizes else ''}"
    if not (fleet / "fleetgen.json").exists():
        cmd = [sys.executable, str(REPO / "bench" / "fleetgen.py"), "--clusters", str(clusters),
               "--topics", str(PER_CLUSTER), "--out", str(fleet)] + (["--sizes"] if sizes else [])
        print(f"generating {clusters} clusters x {PER_CLUSTER} topics ...", file=sys.stderr)
        subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return fleet


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median whole time (its own figures, not a mix of runs)."""
    ok = [r for r in runs if "error" not in r] or runs
    return sorted(ok, key=lambda r: r["whole_s"])[len(ok) // 2] | {"n": len(runs)}


def bench_size(work: Path, fleet: Path, repeat: int, baseline: bool,
               server: ConnectServer | None = None) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"cli": [], "cli_plain": [], "project": [], "floor": [], "python": [],
                                             "connect": []}
    if server is not None and fleet not in server.warm:  # the server's first queries of this size: not measured
        for n in range(WARM_UP_RUNS):  # the JIT compiles the job's code over the first runs (64 s, 17 s, then 11 s)
            print(f"  {fleet.name}: warming the Spark Connect server, unmeasured run {n + 1}/{WARM_UP_RUNS}",
                  file=sys.stderr)
            measure_cli(fleet, server.client_env(work))
        server.warm.add(fleet)
    for i in range(repeat):
        for name in runs:
            if (name == "python" and not baseline) or (name == "connect" and server is None):
                continue
            load = os.getloadavg()[0]
            if name == "connect":
                assert server is not None
                r = measure_cli(fleet, server.client_env(work))
            elif name.startswith("cli"):
                r = measure_cli(fleet, cli_env(work, "off" if name == "cli_plain" else ""))
            else:
                r = measure(name, fleet)
            r["load"] = load
            runs[name].append(r)
            print(f"  {fleet.name} run {i + 1}/{repeat} {name}: {r['whole_s']:.1f} s (load {load:.1f})",
                  file=sys.stderr)
    got = {name: median_of(rs) for name, rs in runs.items() if rs}
    check(fleet, runs)
    return got


def check(fleet: Path, runs: dict[str, list[dict[str, Any]]]) -> None:
    """Every run of every program gives the same result (a failed CLI run is reported, not compared)."""
    results = [(name, r["result"]) for name, rs in runs.items() for r in rs if "result" in r]
    first_name, first = results[0]
    for name, result in results[1:]:
        if result != first:
            sys.exit(f"results differ on {fleet.name}:\n{first_name:8} {first}\n{name:8} {result}")


# ---- output -----------------------------------------------------------------------------------------------

def _s(r: dict[str, Any] | None, *path: str) -> str:
    if r is not None and "error" in r:
        return "**fails**"
    v: Any = r
    for p in path:
        v = None if v is None else v.get(p)
    return "–" if v is None else f"{v:.1f} s"


def _plan(r: dict[str, Any]) -> str:
    if "error" in r:
        return "–"
    c, w = r["cold"], r["warm"]
    return f"{w['queries']} / {w['jobs']} / {w['stages']}" + (
        "" if (c["jobs"], c["stages"]) == (w["jobs"], w["stages"]) else f" (first {c['jobs']} / {c['stages']})")


def _ok(r: dict[str, Any] | None) -> bool:
    return r is not None and "error" not in r


def _rss(r: dict[str, Any] | None, jvm: bool = True) -> str:
    if not _ok(r):
        return "–"
    assert r is not None
    return f"{r['rss_mb']:.0f} + {r['jvm_rss_mb']:.0f} MiB" if jvm else f"{r['rss_mb']:.0f} MiB"


def times_table(rows: list[tuple[int, dict[str, Any]]]) -> list[str]:
    lines = ["| topics | affected topics / partitions | project, whole CLI | project job, first | project job, "
             "warm JVM | Connect client, warm server | minimal, whole | minimal, warm JVM | python wall | "
             "python compute | CLI, no archive | load |",
             "|" + "---:|" * 12]
    for topics, g in rows:
        r = next((x["result"] for x in g.values() if "result" in x), None)
        affected = "–" if r is None else f"{r['topicsAffected']:,} / {r['partitionsAffected']:,}"
        loads = [x["load"] for x in g.values()]
        p, f, b = g["project"], g["floor"], g.get("python")
        lines.append(
            f"| {topics:,} | {affected} | {_s(g['cli'], 'whole_s')} | {_s(p, 'cold', 's')} | {_s(p, 'warm', 's')} | "
            f"{_s(g.get('connect'), 'whole_s')} | {_s(f, 'whole_s')} | {_s(f, 'warm', 's')} | {_s(b, 'whole_s')} | "
            f"{_s(b, 'compute_s')} | "
            f"{_s(g.get('cli_plain'), 'whole_s')} | {min(loads):.1f}–{max(loads):.1f} |")
    return lines


def plan_table(rows: list[tuple[int, dict[str, Any]]]) -> list[str]:
    lines = ["| topics | project queries / jobs / stages per run | minimal queries / jobs / stages per run | "
             "CLI RSS (tree) | Connect client RSS | project RSS driver + JVM | minimal RSS driver + JVM | python RSS |",
             "|" + "---:|" * 8]
    for topics, g in rows:
        p, f, b = g["project"], g["floor"], g.get("python")
        lines.append(f"| {topics:,} | {_plan(p)} | {_plan(f)} | {g['cli']['rss_mb']:.0f} MiB | "
                     f"{_rss(g.get('connect'), jvm=False)} | {_rss(p)} | {_rss(f)} | {_rss(b, jvm=False)} |")
    return lines


def _mark(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def _ratio(label: str, topics: int, a: float | None, b: float | None, ok: Callable[[float], bool],
           note: str = "") -> str:
    if a is None or b is None:
        return f"| {label} | {topics:,} | a run failed | {_mark(False)} |"
    return f"| {label} | {topics:,} | {a / b:.2f} | {_mark(ok(a / b))}{note} |"


def _get(r: dict[str, Any] | None, *path: str) -> float | None:
    v: Any = r
    for p in path:
        v = v.get(p) if _ok(v) else None
    return v


def targets(rows: list[tuple[int, dict[str, Any]]]) -> list[str]:
    lines = ["| target | topics | measured | verdict |", "|---|---:|---:|---|"]
    for topics, g in rows:
        p, f, b = g["project"], g["floor"], g.get("python")
        most = max((_get(p, run, "stages") or 0) for run in ("cold", "warm")) if _ok(p) else None
        lines.append(f"| stages per run ≤ 10 (first and warm run) | {topics:,} | "
                     f"{'a run failed' if most is None else most} | {_mark(most is not None and most <= 10)} |")
        lines.append(_ratio("warm job ÷ minimal warm ≤ 1.5", topics, _get(p, "warm", "s"), _get(f, "warm", "s"),
                            lambda x: x <= 1.5))
        lines.append(_ratio("whole CLI ÷ minimal whole ≤ 1.3", topics, _get(g["cli"], "whole_s"),
                            _get(f, "whole_s"), lambda x: x <= 1.3))
        if g.get("cli_plain"):
            lines.append(_ratio("(context) whole CLI without the class archive ÷ minimal whole", topics,
                                _get(g["cli_plain"], "whole_s"), _get(f, "whole_s"), lambda x: x <= 1.3))
        if g.get("connect"):
            lines.append(_ratio("Connect client (whole process) ÷ warm job ≤ 1.5 (issue 34)", topics,
                                _get(g["connect"], "whole_s"), _get(p, "warm", "s"), lambda x: x <= 1.5))
        if b is not None:
            lines.append(_ratio("warm job ÷ python compute < 1", topics, _get(p, "warm", "s"), _get(b, "compute_s"),
                                lambda x: x < 1, "" if topics == 1_000_000 else " (the target is at 1M)"))
    sizes = dict(rows)
    if 1_000_000 in sizes and 5_000_000 in sizes:
        a, b = sizes[1_000_000], sizes[5_000_000]
        for label, path in (("project job, warm", ("project", "warm", "s")), ("project CLI", ("cli", "whole_s")),
                            ("minimal, warm (context)", ("floor", "warm", "s")),
                            ("python compute (context)", ("python", "compute_s"))):
            t1, t5 = _get(a, *path), _get(b, *path)
            per = "" if t1 is None or t5 is None else f" ({(t5 - t1) / 4e6 * 1e6:.1f} µs per extra topic)"
            lines.append(_ratio(f"{label}: 1M → 5M time ratio ≤ 5 (linear)", 5_000_000, t5, t1, lambda x: x <= 5,
                                per))
    return lines


def failures(rows: list[tuple[int, dict[str, Any]]]) -> list[str]:
    return [f"* {topics:,} topics, {name}: fails: {r['error']}" for topics, g in rows for name, r in g.items()
            if "error" in r]


def report(rows: list[tuple[int, dict[str, Any]]]) -> str:
    out = ["Times (median of the runs; \"whole\" = process start to the answer; load = 1-minute load average "
           f"before each measurement, {os.cpu_count()} cores):", "", *times_table(rows), "",
           "Plan and memory (per run; \"first\" shown when the first run differs from the warm one):", "",
           *plan_table(rows), "", "Targets of issues 17 and 34:", "", *targets(rows), "",
           *failures(rows), *([""] if failures(rows) else []),
           "Results identical in every run that finished: project CLI, project job (both runs), minimal program "
           "(both runs)" + (", Connect client" if all(g.get("connect") for _, g in rows) else "")
           + (", pure Python" if all(g.get("python") for _, g in rows) else "") + "."]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="fleet sizes (1,000 topics per cluster); 5000000 adds the 5M row")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per measurement (median)")
    parser.add_argument("--work", type=Path, default=REPO / ".local" / "bench-impact")
    parser.add_argument("--sizes", action="store_true", help="inventories with partition sizes (bytes)")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-connect", action="store_true", help="without the Spark Connect column")
    parser.add_argument("--earlier", action="store_true",
                        help="also report the sizes measured by earlier runs (WORK/results.json), e.g. 1M beside 5M")
    parser.add_argument("--one", nargs=2, metavar=("ENGINE", "FLEET"), help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        started = time.monotonic() - (time.time() - args.t0 if args.t0 else 0.0)
        print(json.dumps(one(args.one[0], Path(args.one[1]), started)))
        return 0
    rows = []
    fleets = [fleet_for(args.work, topics, args.sizes) for topics in args.topics]
    server = None if args.no_connect else ConnectServer(args.work)
    try:
        for topics, fleet in zip(args.topics, fleets, strict=True):
            prepare_class_archive(args.work, fleet)
            rows.append((topics, bench_size(args.work, fleet, args.repeat, not args.no_baseline, server)))
            save(args.work, rows[-1], args.sizes)
            print(report(rows), file=sys.stderr)  # partial results survive a later failure
    finally:
        if server is not None:
            server.stop()
    if args.earlier:
        rows = earlier(args.work, rows, args.sizes)
    print(report(rows))
    return 0


def _results_file(work: Path, sizes: bool) -> Path:
    return work / f"results{'-sizes' if sizes else ''}.json"


def save(work: Path, row: tuple[int, dict[str, Any]], sizes: bool) -> None:
    """Keep the raw figures of each size (the latest run), for --earlier."""
    path = _results_file(work, sizes)
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[str(row[0])] = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "figures": row[1]}
    path.write_text(json.dumps(saved, indent=1) + "\n")


def earlier(work: Path, rows: list[tuple[int, dict[str, Any]]], sizes: bool) -> list[tuple[int, dict[str, Any]]]:
    """Add the sizes measured by an earlier run of this benchmark (not this one), and say so on stderr."""
    path = _results_file(work, sizes)
    saved = json.loads(path.read_text()) if path.exists() else {}
    done = {t for t, _ in rows}
    for topics, entry in sorted(saved.items(), key=lambda kv: int(kv[0])):
        if int(topics) not in done:
            print(f"{int(topics):,} topics: figures of an earlier run ({entry['at']})", file=sys.stderr)
            rows.append((int(topics), entry["figures"]))
    return sorted(rows, key=lambda r: r[0])


if __name__ == "__main__":
    raise SystemExit(main())
