"""What apply's batches cost a ZooKeeper server's heap: 500 multis of one size, then the server's live heap.

Run: .venv/bin/python bench/zk_heap.py [--batch-bytes 65536 131072 ...] [--multis 500]
Each size gets a fresh local ZooKeeper (scripts/local-zookeeper.sh: Kafka's default 512 MB heap). Every multi is
what apply sends: per entity its config write and its change notification (`txn.Multi`, the same bytes), as many
entities as fit the size; notifications are purged every 50 multis as brokers would. Then `jmap -histo:live`
(a full GC first) gives the live heap. A server keeps its last 500 committed proposals in memory
(ZKDatabase.committedLog; zookeeper.commitLogCount cannot go lower), so 500 multis is the most it can hold;
"unresponsive" is a server that lost the session (full GCs, sessions expired) before the 500th multi.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from _harness import load_average, local_zookeeper, machine, purge_notifications
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import OPEN_ACL_UNSAFE

from reconciler.zk import txn
from reconciler.zk.layout import encode_entity_config, notification_for


def ops_for(names: list[str], value: int) -> list[txn.Op]:
    ops = []
    for name in names:
        path = f"/config/topics/{name}"
        ops.append(txn.Op("set", path, encode_entity_config({"retention.ms": str(value), "cleanup.policy": "delete"})))
        ops.append(txn.Op("create", "/config/changes/config_change_", notification_for(path), -1, OPEN_ACL_UNSAFE,
                          True))
    return ops


def live_heap(directory: Path) -> int:
    pid = (directory / "zookeeper.pid").read_text().strip()
    out = subprocess.run(["jmap", "-histo:live", pid], capture_output=True, text=True, timeout=120).stdout
    total = [line for line in out.splitlines() if line.startswith("Total")]
    return int(total[0].split()[2])


def one_size(batch_bytes: int, multis: int) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-zk-heap-") as tmp, local_zookeeper(Path(tmp)) as port:
        client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10)
        try:
            client.start(timeout=15)
            client.ensure_path("/config/changes")
            client.ensure_path("/config/topics")
            per_entity = txn.size(ops_for(["team-0.orders-00000"], 10**9), client)
            names = [f"team-{i % 50}.orders-{i:05d}" for i in range(max(1, batch_bytes // per_entity))]
            for result in [client.create_async(f"/config/topics/{n}", b"{}") for n in names]:
                result.get(timeout=60)
            start, sent = time.perf_counter(), 0
            request = 0
            try:
                for number in range(multis):
                    multi = txn.Multi(client, ops_for(names, 10**9 + number))
                    request = len(multi.payload)
                    result = client.handler.async_result()
                    client._call(multi, result)
                    result.get(timeout=60)
                    sent += 1
                    if number % 50 == 49:
                        purge_notifications(client)
            except (KazooException, KazooTimeoutError) as exc:
                return (f"  {request:9,d} B a multi ({len(names)} entities): unresponsive after {sent} multis "
                        f"({type(exc).__name__}, {time.perf_counter() - start:.1f} s)")
            heap = live_heap(Path(tmp))
            return (f"  {request:9,d} B a multi ({len(names)} entities): {sent} multis in "
                    f"{time.perf_counter() - start:.1f} s; live heap after them {heap / 2**20:,.0f} MiB")
        finally:
            client.stop()
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-bytes", type=int, nargs="+", default=[64 * 1024, 128 * 1024, 512 * 1024])
    parser.add_argument("--multis", type=int, default=500)
    args = parser.parse_args()
    print(f"machine: {machine()}; load average at start: {load_average()}")
    for size in args.batch_bytes:
        print(one_size(size, args.multis), flush=True)


if __name__ == "__main__":
    main()
