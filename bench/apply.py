"""Apply throughput: a plan changing N topic configs, against a real local ZooKeeper started here.

Run: .venv/bin/python bench/apply.py [--entities 10000] [--runs 3] [--baseline-runs 3] [--warmup 3]
Measures, on the same data in the same run:
  apply, whole process   `reconciler --repo <tmp> apply PLAN --auto-approve`, a whole subprocess (interpreter
                         start, imports, the plan file read and verified, the manifests loaded and validated,
                         the guards, then the writes); each run applies a fresh `plan --out PLAN` (not
                         measured) of all N topics' retention.ms, alternating between two values
  apply_plan             the writes alone, in this process (KRaft guard, lock, bulk pre-read, batched multis,
                         audit)
  one at a time          the baseline: one synchronous `set` plus one synchronous notification `create` per
                         entity, one entity at a time
Targets (issue 18): the whole process >= 10x the baseline and >= 10,000 entities/s for 10k changes.
--pipelined-reads measures the pre-read used against ZooKeeper < 3.6 (no multiRead).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import RECONCILER, load_average, machine, purge_notifications, time_process
from kazoo.client import KazooClient

from reconciler.diff import build_plan
from reconciler.errors import has_errors
from reconciler.model import (
    BrokerRegistration,
    ClusterSpec,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    Secret,
    ZooKeeperSpec,
)
from reconciler.plan import Plan
from reconciler.secrets.encoder import EncoderParams
from reconciler.zk import bulkread
from reconciler.zk.layout import (
    NOTIFICATION_PREFIX,
    encode_broker_registration,
    encode_controller,
    encode_entity_config,
    encode_notification,
    encode_topic_assignment,
)
from reconciler.zk.read import ReadScope, read_live_state
from reconciler.zk.session import close, connect
from reconciler.zk.write import AuditInfo, apply_plan

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "local-zookeeper.sh"
SCOPE = ReadScope(entity_types=frozenset({"topics"}), brokers=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def zookeeper(command: str, directory: Path, port: int | None = None) -> None:
    args = ["bash", str(SCRIPT), command, "--dir", str(directory)] + (["--port", str(port)] if port else [])
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        sys.exit(f"local-zookeeper.sh {command} failed:\n{result.stderr}")


def names(count: int) -> list[str]:
    return [f"team-{i % 50}.orders-{i:05d}" for i in range(count)]


def seed(client: KazooClient, topics: list[str]) -> None:
    """Brokers, the controller, topic assignments and config znodes, pipelined (setup, not measured)."""
    for parent in ("/brokers/topics", "/brokers/ids", "/config/topics", "/config/changes"):
        client.ensure_path(parent)
    pending = [client.create_async("/controller", encode_controller(1))]
    for b in (1, 2, 3):
        reg = BrokerRegistration(b, (f"PLAINTEXT://b{b}.bench.internal:9092",), {"PLAINTEXT": "PLAINTEXT"}, None)
        pending.append(client.create_async(f"/brokers/ids/{b}", encode_broker_registration(reg)))
    for i, name in enumerate(topics):
        assignment = encode_topic_assignment({0: (i % 3 + 1,)})
        pending.append(client.create_async(f"/brokers/topics/{name}", assignment))
        config = {"retention.ms": "86400000", "cleanup.policy": "delete"}
        pending.append(client.create_async(f"/config/topics/{name}", encode_entity_config(config)))
    for result in pending:
        result.get(timeout=60)


def desired(topics: list[str], retention: int) -> DesiredState:
    cluster = ClusterSpec("bench", "3.6", ZooKeeperSpec("unused:2181"), (1, 2, 3))
    config = {"retention.ms": DesiredValue(str(retention)), "cleanup.policy": DesiredValue("delete")}
    return DesiredState(
        cluster=cluster, entities={},
        topics={name: DesiredTopic(name, None, None, config) for name in topics},
    )


def make_plan(client: KazooClient, topics: list[str], retention: int) -> Plan:
    plan, diags = build_plan(desired(topics, retention), read_live_state(client, "bench", SCOPE))
    assert not has_errors(diags), diags
    assert len(plan.entities) == len(topics), len(plan.entities)
    return plan


def run_apply(client: KazooClient, plan: Plan) -> float:
    audit = AuditInfo(plan.plan_id, "bench", None, "bench@localhost", "2024-01-01T00:00:00Z")
    start = time.perf_counter()
    result = apply_plan(client, plan, encoder_for=lambda ref: EncoderParams(Secret("x")),
                        resolve_secret=lambda c, r: Secret("x"), audit=audit)
    elapsed = time.perf_counter() - start
    assert result.entities_written == len(plan.entities), result
    print(f"  apply: {elapsed:6.3f} s in {result.batches} batch(es)")
    return elapsed


def run_baseline(client: KazooClient, topics: list[str], retention: int) -> float:
    """The naive writer: the same bytes, one synchronous set and one notification create per entity."""
    config = {"retention.ms": str(retention), "cleanup.policy": "delete"}
    work = []
    for name in topics:
        notification = encode_notification(EntityRef("topics", name))
        work.append((f"/config/topics/{name}", encode_entity_config(config), notification))
    start = time.perf_counter()
    for path, data, notification in work:
        client.set(path, data)
        client.create(NOTIFICATION_PREFIX, notification, sequence=True)
    elapsed = time.perf_counter() - start
    print(f"  baseline: {elapsed:6.3f} s")
    return elapsed


def write_manifests(repo: Path, connect: str, topics: list[str], retention: int) -> None:
    """The cluster's manifests: every topic with `retention` (1 partition, RF 1, as seeded)."""
    cluster = repo / "clusters" / "bench"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: bench}\nspec:\n  kafkaVersion: \"3.6\"\n"
        f"  zookeeper: {{connect: \"{connect}\"}}\n  brokers: [1, 2, 3]\n", encoding="utf-8")
    lines = [f"    {name}: {{config: {{retention.ms: {retention}, cleanup.policy: delete}}}}\n" for name in topics]
    (cluster / "topics.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  defaults: {partitions: 1, replicationFactor: 1}"
        "\n  topics:\n" + "".join(lines), encoding="utf-8")


def run_whole_process(root: Path, connect: str, topics: list[str], retention: int) -> tuple[float, float]:
    """`reconciler apply PLAN` as a whole process, of a fresh plan (written first, not measured)."""
    repo, plan = root / "repo", root / f"plan-{retention}.json"
    write_manifests(repo, connect, topics, retention)
    time_process([str(RECONCILER), "--repo", str(repo), "plan", "--out", str(plan)])
    wall, cpu = time_process([str(RECONCILER), "--repo", str(repo), "apply", str(plan), "--auto-approve",
                              "--audit-log", str(root / "audit.jsonl")])
    print(f"  apply, whole process: {wall:6.3f} s wall  {cpu:6.3f} s CPU", flush=True)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured whole-process runs first")
    parser.add_argument("--pipelined-reads", action="store_true",
                        help="pre-read with pipelined gets, as against ZooKeeper < 3.6 (no multiRead)")
    args = parser.parse_args()
    topics = names(args.entities)
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        port = free_port()
        zookeeper("start", Path(tmp), port)
        try:
            bootstrap = KazooClient(hosts=f"127.0.0.1:{port}")
            bootstrap.start(timeout=15)
            bootstrap.create("/bench")
            bootstrap.stop()
            bootstrap.close()
            client = connect(ZooKeeperSpec(f"127.0.0.1:{port}/bench"))
            if args.pipelined_reads:
                bulkread._NO_MULTI_READ.add(client)
            try:
                seed(client, topics)
                print(f"machine: {machine()}; load average at start: {load_average()}")
                print(f"{args.entities} topic config znodes on ZooKeeper 127.0.0.1:{port}/bench")
                retention = 90_000_000
                apply_times, baseline_times, whole = [], [], []
                # unmeasured: caches, and the server's JIT (a ZooKeeper in service is a long-running JVM; with one
                # warm-up run the first measured one took 1.5-1.8 s against medians of ~1.05 s)
                for _ in range(args.warmup):
                    retention += 1
                    purge_notifications(client)
                    run_whole_process(Path(tmp), f"127.0.0.1:{port}/bench", topics, retention)
                for _ in range(args.runs):
                    retention += 1
                    purge_notifications(client)
                    whole.append(run_whole_process(Path(tmp), f"127.0.0.1:{port}/bench", topics, retention))
                for _ in range(args.runs):
                    retention += 1
                    purge_notifications(client)
                    plan = make_plan(client, topics, retention)  # planning is not measured
                    apply_times.append(run_apply(client, plan))
                for _ in range(args.baseline_runs):
                    retention += 1
                    purge_notifications(client)
                    baseline_times.append(run_baseline(client, topics, retention))
            finally:
                close(client)
        finally:
            zookeeper("stop", Path(tmp))
    report(args.entities, [w for w, _ in whole], [c for _, c in whole], apply_times, baseline_times)


def report(entities: int, whole: list[float], whole_cpu: list[float], apply_times: list[float],
           baseline_times: list[float]) -> None:
    print(f"load average at end: {load_average()}")
    baseline = statistics.median(baseline_times)
    print()
    print(f"{'':28s}{'wall s':>9s}{'entities/s':>12s}{'x one at a time':>17s}")
    for label, seconds in (("apply, whole process", statistics.median(whole)),
                           ("apply_plan (writes alone)", statistics.median(apply_times)),
                           ("one at a time", baseline)):
        print(f"{label:28s}{seconds:9.3f}{entities / seconds:12,.0f}{baseline / seconds:17.1f}")
    print(f"(whole process: {statistics.median(whole_cpu):.3f} s CPU, median)")
    rate, ratio = entities / statistics.median(whole), baseline / statistics.median(whole)
    print()
    print(f"whole-process apply = {rate:,.0f} entities/s (target >= 10,000)  {'met' if rate >= 10_000 else 'NOT MET'}")
    print(f"whole-process apply = {ratio:.1f}x one at a time (target >= 10x)  {'met' if ratio >= 10 else 'NOT MET'}")


if __name__ == "__main__":
    main()
