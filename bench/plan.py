"""Plan of a 10,000-topic cluster against a real local ZooKeeper, whole process, vs a raw floor.

Run: .venv/bin/python bench/plan.py [--topics 10000] [--runs 5]

Starts its own ZooKeeper (scripts/local-zookeeper.sh, free port, temporary directory; stopped at the end),
seeds one cluster (10,000 topics: an assignment with a topic id and a config znode each; 6 broker
registrations, the controller, broker and client-quota configs) and writes its manifests into a temporary
repository (one Topics file with every topic, a tenth of them with a changed retention.ms, plus a broker
default and a quota change so the plan is not empty). Then it times whole subprocesses (wall and CPU),
one unmeasured run of each, then --runs rounds of all four in turn; medians:

  reconciler plan       `reconciler --repo <tmp> plan` (text plan on stdout, discarded)
  floor                 a bare interpreter importing only kazoo and yaml: C YAML parse of the same manifest
                        files (yaml.CSafeLoader), then kazoo pipelined async reads of the same znodes
                        (get_children_async of the listed parents, then get_async of every child)
  one-at-a-time         the same imports and parse, then one synchronous get per znode
  floor, multiRead      the floor with ZooKeeper 3.6+ multiRead batches of 1,000 gets, the technique
                        reconciler.zk.read uses: what a read can cost at best in Python

Targets (SPEC section 9): plan <= 1.5x the floor and >= 5x faster than one-at-a-time; issue 18: plan <= 1.2x
the multiRead floor.
"""

from __future__ import annotations

import argparse
import base64
import random
import tempfile
import uuid
from pathlib import Path

from _harness import PYTHON, RECONCILER, load_average, local_zookeeper, machine, measure, table
from kazoo.client import KazooClient

from reconciler.model import BrokerRegistration, EntityRef
from reconciler.zk.layout import (
    encode_broker_registration,
    encode_controller,
    encode_entity_config,
    encode_topic_assignment,
    entity_path,
)

CHROOT = "/kafka/big"
BROKERS = tuple(range(1, 7))
PARTITIONS = 12
CLIENTS = 20
# What the plan reads for these manifests (ReadScope of entity types brokers, clients, topics).
LISTED = ("/config/brokers", "/config/clients", "/config/topics", "/brokers/ids", "/brokers/topics")

FLOOR = r'''
import sys
import yaml
from kazoo.client import KazooClient

LISTED = %(listed)r


class MultiRead:  # OpCode.multiRead (22) of getData ops, as reconciler.zk.read sends it
    type = 22

    def __init__(self, paths):
        self.paths = paths

    def serialize(self):
        from kazoo.protocol.serialization import multiheader_struct, write_string
        out = bytearray()
        for path in self.paths:
            out += multiheader_struct.pack(4, False, -1) + write_string(path) + b"\0"
        return out + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buf, offset):
        from kazoo.protocol.serialization import multiheader_struct, read_buffer, stat_struct
        results = []
        while True:
            kind, done, _ = multiheader_struct.unpack_from(buf, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if kind != 4:
                raise ValueError(kind)
            data, offset = read_buffer(buf, offset)
            results.append((data, stat_struct.unpack_from(buf, offset)))
            offset += stat_struct.size


def main():
    mode, hosts, chroot, *files = sys.argv[1:]
    docs = []
    for name in files:
        with open(name, "rb") as handle:
            docs.extend(yaml.load_all(handle, Loader=yaml.CSafeLoader))
    client = KazooClient(hosts=hosts + chroot)
    client.start(timeout=15)
    if mode == "sync":
        paths = [f"{p}/{c}" for p in LISTED for c in client.get_children(p)]
        got = [client.get("/controller")] + [client.get(p) for p in paths]
    else:
        listed = [client.get_children_async(p) for p in LISTED]
        controller = client.get_async("/controller")
        paths = [f"{p}/{c}" for p, r in zip(LISTED, listed) for c in r.get()]
        if mode == "pipelined":
            pending = [client.get_async(p) for p in paths]
            got = [controller.get()] + [r.get() for r in pending]
        else:  # multiread
            pending = []
            for start in range(0, len(paths), 1000):
                result = client.handler.async_result()
                client._call(MultiRead([chroot + p for p in paths[start:start + 1000]]), result)
                pending.append(result)
            got = [controller.get()] + [item for r in pending for item in r.get()]
    assert len(got) == len(paths) + 1 and len(docs) >= 1
    client.stop()
    client.close()


main()
'''


def topic_name(i: int) -> str:
    return f"team-{i % 50}.orders-{i:05d}"


def topic_id(i: int) -> str:
    """A Kafka topic id (2.8+ writes one into every assignment znode): a UUID, URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.UUID(int=random.Random(i).getrandbits(128)).bytes).decode().rstrip("=")


def retention(i: int) -> int:
    return 86_400_000 * (1 + i % 7)


def seed(port: int, topics: int) -> int:
    """The live cluster, pipelined (setup, not measured); returns the number of znodes the plan reads."""
    client = KazooClient(hosts=f"127.0.0.1:{port}")
    client.start(timeout=15)
    try:
        for parent in (*LISTED, "/config/changes", "/config/users"):
            client.ensure_path(CHROOT + parent)
        pending = []

        def create(path: str, data: bytes) -> None:
            pending.append(client.create_async(CHROOT + path, data))

        create("/controller", encode_controller(1))
        for b in BROKERS:
            reg = BrokerRegistration(b, (f"PLAINTEXT://b{b}.big.internal:9092",), {"PLAINTEXT": "PLAINTEXT"},
                                     f"rack-{b % 3}")
            create(f"/brokers/ids/{b}", encode_broker_registration(reg))
        create(entity_path(EntityRef("brokers", "<default>")),
               encode_entity_config({"log.retention.ms": "604800000", "num.io.threads": "8"}))
        create(entity_path(EntityRef("brokers", "1")), encode_entity_config({"log.cleaner.threads": "1"}))
        for c in range(CLIENTS):
            create(entity_path(EntityRef("clients", f"app-{c}")),
                   encode_entity_config({"producer_byte_rate": "1048576"}))
        for i in range(topics):
            name = topic_name(i)
            assignment = {p: tuple(BROKERS[(i + p + r) % len(BROKERS)] for r in range(3))
                          for p in range(PARTITIONS)}
            create(f"/brokers/topics/{name}", encode_topic_assignment(assignment, topic_id(i)))
            live_retention = retention(i) if i % 10 else retention(i) + 1  # a tenth drifted: changes
            config = {"retention.ms": str(live_retention), "cleanup.policy": "delete", "min.insync.replicas": "2"}
            create(f"/config/topics/{name}", encode_entity_config(config))
        for result in pending:
            result.get(timeout=120)
        return len(pending)
    finally:
        client.stop()
        client.close()


def write_repo(root: Path, port: int, topics: int) -> list[Path]:
    cluster = root / "clusters" / "big"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\n"
        "meta: {name: big, labels: {env: prod}}\n"
        "spec:\n"
        '  kafkaVersion: "3.6"\n'
        f'  zookeeper: {{connect: "127.0.0.1:{port}{CHROOT}"}}\n'
        f"  brokers: [{', '.join(map(str, BROKERS))}]\n",
        encoding="utf-8",
    )
    (cluster / "brokers.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\n"
        "spec:\n  config: {log.retention.ms: 259200000, num.io.threads: 8}\n"
        "---\n"
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\n"
        "spec:\n  config: {log.cleaner.threads: 2}\n",
        encoding="utf-8",
    )
    quotas = [f"    app-{c}: {{producer_byte_rate: {2097152 if c == 0 else 1048576}}}" for c in range(CLIENTS)]
    (cluster / "quotas.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n  clients:\n" + "\n".join(quotas) + "\n",
        encoding="utf-8",
    )
    lines = [
        "apiVersion: reconciler/v1",
        "kind: Topics",
        "meta: {name: orders}",
        "spec:",
        "  defaults: {partitions: 12, replicationFactor: 3, config: {min.insync.replicas: 2}}",
        "  topics:",
    ]
    for i in range(topics):
        lines.append(f"    {topic_name(i)}:")
        lines.append(f"      config: {{retention.ms: {retention(i)}, cleanup.policy: delete}}")
    (cluster / "topics.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sorted(cluster.glob("*.yaml"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}; load average at start: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        root = Path(tmp)
        with local_zookeeper(root / "zookeeper") as port:
            znodes = seed(port, args.topics)
            files = write_repo(root / "repo", port, args.topics)
            floor_script = root / "floor.py"
            floor_script.write_text(FLOOR % {"listed": LISTED}, encoding="utf-8")
            size = sum(f.stat().st_size for f in files)
            print(f"cluster: {args.topics} topics, {znodes} znodes read, ZooKeeper 127.0.0.1:{port}{CHROOT}; "
                  f"manifests: {len(files)} files, {size / 1e6:.1f} MB")
            floor = [str(PYTHON), str(floor_script)]
            where = [f"127.0.0.1:{port}", CHROOT, *map(str, files)]
            timings = measure(
                {
                    PLAN: [str(RECONCILER), "--repo", str(root / "repo"), "plan"],
                    FLOOR_ROW: [*floor, "pipelined", *where],
                    SYNC_ROW: [*floor, "sync", *where],
                    MULTI_ROW: [*floor, "multiread", *where],
                },
                args.runs,
            )
    print(f"load average at end: {load_average()}")
    print()
    plan, raw, sync, multi = (timings[k] for k in (PLAN, FLOOR_ROW, SYNC_ROW, MULTI_ROW))
    table([(label, timing) for label, timing in timings.items()], plan, "plan")
    print()
    ok_floor, ok_sync = plan.median <= 1.5 * raw.median, sync.median >= 5 * plan.median
    print(f"plan / floor           = {plan.median / raw.median:5.2f}x  (target <= 1.5x)  "
          f"{'met' if ok_floor else 'NOT MET'}")
    print(f"one-at-a-time / plan   = {sync.median / plan.median:5.2f}x  (target >= 5x)   "
          f"{'met' if ok_sync else 'NOT MET'}")
    ok_multi = plan.median <= 1.2 * multi.median
    print(f"plan / multiRead floor = {plan.median / multi.median:5.2f}x  (issue 18 target <= 1.2x)  "
          f"{'met' if ok_multi else 'NOT MET'}")


PLAN = "reconciler plan"
FLOOR_ROW = "floor: async gets + C parse"
SYNC_ROW = "one-at-a-time gets + C parse"
MULTI_ROW = "floor with multiRead"


if __name__ == "__main__":
    main()
