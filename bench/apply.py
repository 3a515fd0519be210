"""Apply throughput: a plan changing N topic configs, against a real local ZooKeeper started here.

Run: .venv/bin/python bench/apply.py [--entities 10000] [--runs 3] [--baseline-runs 3]
Measures `apply_plan` (whole call: KRaft guard, lock, bulk pre-read, batched multis, audit; median of
--runs) and a baseline on the same data in the same run: one synchronous `set` plus one synchronous
notification `create` per entity, one entity at a time. Target (brief): >= 5,000 entities/s and >= 10x
the baseline. --pipelined-reads measures the pre-read used against ZooKeeper < 3.6 (no multiRead).
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

from kazoo.client import KazooClient

from reconciler.diff import build_plan
from reconciler.errors import has_errors
from reconciler.model import (
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
    """Topic assignments and config znodes, pipelined (setup, not measured)."""
    for parent in ("/brokers/topics", "/config/topics", "/config/changes"):
        client.ensure_path(parent)
    pending = []
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-runs", type=int, default=3)
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
                print(f"{args.entities} topic config znodes on ZooKeeper 127.0.0.1:{port}/bench")
                retention = 90_000_000
                apply_times, baseline_times = [], []
                for _ in range(args.runs):
                    retention += 1
                    plan = make_plan(client, topics, retention)  # planning is not measured
                    apply_times.append(run_apply(client, plan))
                for _ in range(args.baseline_runs):
                    retention += 1
                    baseline_times.append(run_baseline(client, topics, retention))
            finally:
                close(client)
        finally:
            zookeeper("stop", Path(tmp))
    apply_rate = args.entities / statistics.median(apply_times)
    baseline_rate = args.entities / statistics.median(baseline_times)
    print(f"apply    median {statistics.median(apply_times):6.3f} s  {apply_rate:9,.0f} entities/s")
    print(f"baseline median {statistics.median(baseline_times):6.3f} s  {baseline_rate:9,.0f} entities/s")
    print(f"ratio {apply_rate / baseline_rate:.1f}x (target >= 10x, and >= 5,000 entities/s)")


if __name__ == "__main__":
    main()
