"""Impact job benchmark: 100k / 300k / 1M topics (1,000 topics per cluster), Spark local[*] against a
single-process pure-Python baseline on the same Parquet inventory, in the same run.

Run: .venv/bin/python bench/impact.py [--topics 100000 300000 1000000] [--work .local/bench-impact] [--sizes]
Each measurement runs in a fresh process (a cold JVM, as a CLI run has):
  spark     wall = process start -> summary (imports, JVM start, reading the manifests, reading Parquet,
            the job, the summary); job = reading the inventory + job + summary on a started session;
            warm = the same job once more in that JVM (what a long-running cluster or Connect server pays)
  python    wall = process start -> counts; compute = pyarrow read of the same Parquet (included) + dicts
Memory: peak RSS (VmHWM from /proc) of the Python driver and of the JVM (its pid from the JVM itself), and
of the baseline process. Both sides must agree on every count, or the benchmark fails.
Fleets come from bench/fleetgen.py (cached under --work; generation time is not part of the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PER_CLUSTER = 1000
COUNTS = ("clustersAffected", "brokersAffected", "topicsAffected", "partitionsAffected", "bytesAffected")


def peak_rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one(engine: str, fleet: Path, started: float, warm: bool = True) -> dict[str, Any]:
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
        out |= {"compute_s": time.monotonic() - t, "rss_mb": peak_rss_mb()}
    else:
        from reconciler.impact.aggregate import summary as summarize
        from reconciler.impact.inventory import read_inventory
        from reconciler.impact.job import compute_changes
        from reconciler.impact.session import spark_session

        t = time.monotonic()
        with spark_session("local[*]") as spark:
            out["session_s"] = time.monotonic() - t
            t = time.monotonic()
            summary = summarize(spark, compute_changes(spark, read_inventory(spark, fleet / "inventory"), after))
            out["compute_s"] = time.monotonic() - t
            out["wall_s"] = time.monotonic() - started
            if warm:  # the same job again in the same JVM: a long-running Spark (cluster, Connect server)
                t = time.monotonic()
                summarize(spark, compute_changes(spark, read_inventory(spark, fleet / "inventory"), after))
                out["warm_s"] = time.monotonic() - t
            jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
            out["jvm_rss_mb"] = peak_rss_mb(jvm_pid)
            out["rss_mb"] = peak_rss_mb()
        result = {k: summary[k] for k in COUNTS}
        result["byKey"] = {k["key"]: {"topics": k["topics"], "partitions": k["partitions"]}
                           for k in summary["byKey"] if k["topics"]}
    out.setdefault("wall_s", time.monotonic() - started)
    out["result"] = result
    return out


def measure(engine: str, fleet: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", engine, str(fleet), "--t0", repr(time.time())]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
    if proc.returncode != 0:
        sys.exit(f"{engine} run failed:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout))


def fleet_for(work: Path, topics: int, sizes: bool) -> Path:
    clusters = topics // PER_CLUSTER
    fleet = work / f"fleet-{clusters}x{PER_CLUSTER}{'-sizes' if sizes else ''}"
    if not (fleet / "fleetgen.json").exists():
        cmd = [sys.executable, str(REPO / "bench" / "fleetgen.py"), "--clusters", str(clusters),
               "--topics", str(PER_CLUSTER), "--out", str(fleet)] + (["--sizes"] if sizes else [])
        print(f"generating {clusters} clusters x {PER_CLUSTER} topics ...", file=sys.stderr)
        subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return fleet


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=REPO / ".local" / "bench-impact")
    parser.add_argument("--sizes", action="store_true", help="inventories with partition sizes (bytes)")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("ENGINE", "FLEET"), help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        started = time.monotonic() - (time.time() - args.t0 if args.t0 else 0.0)
        print(json.dumps(one(args.one[0], Path(args.one[1]), started)))
        return 0
    rows = []
    for topics in args.topics:
        fleet = fleet_for(args.work, topics, args.sizes)
        gen = json.loads((fleet / "fleetgen.json").read_text())
        spark = measure("spark", fleet)
        base = None if args.no_baseline else measure("python", fleet)
        if base is not None and base["result"] != spark["result"]:
            sys.exit(f"results differ at {topics} topics:\nspark  {spark['result']}\npython {base['result']}")
        rows.append((topics, gen, spark, base))
        print(f"{topics:,} topics: spark {spark['wall_s']:.1f}s"
              + ("" if base is None else f", python {base['wall_s']:.1f}s"), file=sys.stderr)
    print(table(rows, os.getloadavg()[0]))
    return 0


def table(rows: list[tuple[int, dict[str, Any], dict[str, Any], dict[str, Any] | None]], load: float) -> str:
    head = ("| topics | clusters | affected topics / partitions | spark wall | spark job | spark job, warm JVM | "
            "python wall | python compute | python wall ÷ spark wall | driver RSS | JVM RSS | python RSS |")
    lines = [head, "|" + "---:|" * 12]
    for topics, gen, s, b in rows:
        r = s["result"]
        ratio = "–" if b is None else f"{b['wall_s'] / s['wall_s']:.2f}"
        lines.append(
            f"| {topics:,} | {gen['clusters']:,} | {r['topicsAffected']:,} / {r['partitionsAffected']:,} | "
            f"{s['wall_s']:.1f} s | {s['compute_s']:.1f} s | {s.get('warm_s', float('nan')):.1f} s | "
            + ("– | – | " if b is None else f"{b['wall_s']:.1f} s | {b['compute_s']:.1f} s | ")
            + f"{ratio} | {s['rss_mb']:.0f} MiB | {s['jvm_rss_mb']:.0f} MiB | "
            + ("–" if b is None else f"{b['rss_mb']:.0f} MiB") + " |"
        )
    lines.append(f"\n(1-minute load average at the end: {load:.1f} on {os.cpu_count()} cores; "
                 f"manifests read in {rows[-1][2]['manifests_s']:.1f} s by both sides)")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
