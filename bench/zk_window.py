"""How many apply batches to keep in flight (`zk.pipeline.WINDOW`): ZooKeeper's own time for one apply's multis.

Run: .venv/bin/python bench/zk_window.py [--entities 10000] [--batch-bytes 65536] [--rounds 7] [--windows 1 2 4 8 0]
A fresh local ZooKeeper (scripts/local-zookeeper.sh) holds the topics' config znodes; each round writes every one
of them once per window size, in multis as apply builds them (per entity its config write and its change
notification, `txn.Multi`, the same bytes, packed to --batch-bytes), with at most that many multis unanswered on
the session (0: all of them at once). Notifications are purged before each write, as brokers do. Printed: the
median and best time per window size, the multis' wall time alone (no plan, no read-back, no process).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from _harness import load_average, local_zookeeper, machine, purge_notifications
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE

from reconciler.zk import txn
from reconciler.zk.layout import encode_entity_config, notification_for


def multis(client: KazooClient, names: list[str], value: int, budget: int) -> list[txn.Multi]:
    out, ops, used = [], list[txn.Op](), 0
    for name in names:
        path = f"/config/topics/{name}"
        pair = [txn.Op("set", path, encode_entity_config({"retention.ms": str(value), "cleanup.policy": "delete"})),
                txn.Op("create", "/config/changes/config_change_", notification_for(path), -1, OPEN_ACL_UNSAFE,
                       True)]
        size = txn.size(pair, client)
        if ops and used + size > budget:
            out.append(txn.Multi(client, ops))
            ops, used = [], 0
        ops += pair
        used += size
    return [*out, txn.Multi(client, ops)]


def write(client: KazooClient, requests: list[txn.Multi], window: int) -> float:
    pending: deque[Any] = deque()
    start = time.perf_counter()
    for request in requests:
        if window and len(pending) >= window:
            pending.popleft().get(timeout=60)
        reply = client.handler.async_result()
        client._call(request, reply)
        pending.append(reply)
    for reply in pending:
        reply.get(timeout=60)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--batch-bytes", type=int, default=64 * 1024)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--windows", type=int, nargs="+", default=[1, 2, 4, 8, 0])
    args = parser.parse_args()
    names = [f"team-{i % 50}.orders-{i:05d}" for i in range(args.entities)]
    print(f"machine: {machine()}; load {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-window-") as tmp, local_zookeeper(Path(tmp)) as port:
        client = KazooClient(hosts=f"127.0.0.1:{port}")
        client.start(timeout=15)
        try:
            client.ensure_path("/config/changes")
            client.ensure_path("/config/topics")
            for name in names:
                client.create_async(f"/config/topics/{name}", encode_entity_config({"retention.ms": "1"}))
            client.sync("/")
            times: dict[int, list[float]] = {w: [] for w in args.windows}
            value = 1
            for _ in range(args.rounds):
                for window in args.windows:
                    value += 1
                    purge_notifications(client)
                    requests = multis(client, names, value, args.batch_bytes)
                    times[window].append(write(client, requests, window))
        finally:
            client.stop()
            client.close()
    print(f"{args.entities:,} entities in {len(requests)} multis of <= {args.batch_bytes:,} bytes, "
          f"{args.rounds} rounds")
    for window, xs in times.items():
        label = "all" if window == 0 else str(window)
        print(f"  in flight {label:>3}: median {statistics.median(xs):.3f} s, best {min(xs):.3f} s")


if __name__ == "__main__":
    main()
