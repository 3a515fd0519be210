"""A fleet reconcile against a real local ZooKeeper: first pass and no-op pass, beside the read floor.

Run: .venv/bin/python bench/fleet.py [--clusters 1000] [--topics 100] [--parallel 8] [--jobs 0] [--runs 3]

Starts its own ZooKeeper (scripts/local-zookeeper.sh, free port, temporary directory; stopped at the end), gives
every cluster a chroot on it (`/fleet/cNNNN`, 3 registered brokers and a controller node, as
scripts/simulate_brokers.py does) and writes a repository with one cluster directory each: cluster.yaml,
a `<default>` BrokerConfig and a Topics file with `--topics` topics (3 partitions, RF 3, two configs each),
committed to a git repository (reconcile applies what is committed).

Then it times whole processes (wall and CPU, children included):
  first pass        `reconcile --once --parallel N --jobs J`: creates every topic and config (J worker processes,
                    0: one per core, each with its share of the N threads)
  no-op pass        the same again: reads everything, plans, writes nothing (run --runs times, median)
  plan, all         `plan` of every cluster (median of --runs)
  read floor        one process, a bare interpreter importing only kazoo and yaml: C YAML parse of every
                    manifest file, then per cluster (--parallel threads) one session sending the very requests
                    a no-op pass sends (listed with a traced run of reconcile): the audit directory listed and
                    its newest entry read, then two multiReads (ZooKeeper 3.6+, 1,000 ops a request, as
                    reconciler.zk.multiread batches them): the listed parents and /controller, then every
                    listed znode's data. It parses nothing more.
  read floor, pipelined (--pipelined-floor) the floor of issue 18: the same parse, kazoo's pipelined get_async
                    per znode (no multiRead): slower than the product (kazoo spends ~0.1 ms per request)

Targets (issue 18): no-op pass <= 5 s and first pass <= 15 s for 1,000 clusters x 100 topics on a 2-core machine;
(issue 44) the no-op pass (worker processes included) <= 1.0x the one-process read floor.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kazoo.client import KazooClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PYTHON, RECONCILER, ZK_MULTIREAD, load_average, local_zookeeper, machine, time_process  # noqa: E402

from reconciler.model import BrokerRegistration  # noqa: E402
from reconciler.zk.layout import encode_broker_registration, encode_controller  # noqa: E402

BROKERS = (1, 2, 3)

FLOOR = ZK_MULTIREAD + r'''
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import yaml
from kazoo.client import KazooClient
# what a no-op reconcile lists (zk/read.py: entity types of the manifests, brokers, topics, pending deletions,
# the ACL resource types, literal and prefixed)
ACL_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
LISTED = (["/config/brokers", "/config/topics", "/brokers/ids", "/brokers/topics", "/admin/delete_topics"]
          + [f"/kafka-acl/{t}" for t in ACL_TYPES] + [f"/kafka-acl-extended/prefixed/{t}" for t in ACL_TYPES])




port, parallel, repo = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
clusters = sorted(p.name for p in (repo / "clusters").iterdir() if p.is_dir())


def multiread(client, chroot, ops):
    pending = []
    for start in range(0, len(ops), 1000):
        result = client.handler.async_result()
        client._call(MultiRead([(op, chroot + path) for op, path in ops[start:start + 1000]]), result)
        pending.append(result)
    return [item for r in pending for item in r.get(timeout=60)]


def one(name):
    for f in sorted((repo / "clusters" / name).glob("*.yaml")):
        list(yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader))
    chroot = f"/fleet/{name}"
    client = KazooClient(hosts=f"127.0.0.1:{port}{chroot}")
    client.start(timeout=30)
    try:
        entries = client.get_children("/reconciler/audit")
        if entries:
            client.get(f"/reconciler/audit/{max(entries)}")
        first = multiread(client, chroot, [(GET_CHILDREN, p) for p in LISTED] + [(GET_DATA, "/controller")])
        data = [(GET_DATA, f"{parent}/{child}") for parent, children in zip(LISTED, first) for child in children or ()]
        got = multiread(client, chroot, data)
        assert len(got) == len(data)
    finally:
        client.stop()
        client.close()


with ThreadPoolExecutor(parallel) as pool:
    list(pool.map(one, clusters))
'''

PIPELINED_FLOOR = '''
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import yaml
from kazoo.client import KazooClient

port, parallel, repo = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
clusters = sorted(p.name for p in (repo / "clusters").iterdir() if p.is_dir())

def one(name):
    for f in sorted((repo / "clusters" / name).glob("*.yaml")):
        list(yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader))
    client = KazooClient(hosts=f"127.0.0.1:{port}/fleet/{name}")
    client.start(timeout=30)
    try:
        futures = [client.get_async(p) for p in ("/controller", "/brokers/ids/1", "/brokers/ids/2",
                                                "/brokers/ids/3", "/config/brokers/<default>")]
        topics = client.get_children("/brokers/topics")
        futures += [client.get_async(f"/brokers/topics/{t}") for t in topics]
        futures += [client.get_async(f"/config/topics/{t}") for t in client.get_children("/config/topics")]
        for f in futures:
            f.get(timeout=60)
    finally:
        client.stop()
        client.close()

with ThreadPoolExecutor(parallel) as pool:
    list(pool.map(one, clusters))
'''


def name(i: int) -> str:
    return f"c{i:04d}"


def seed(port: int, clusters: int) -> None:
    """Chroots with broker registrations and a controller node (setup, not measured)."""
    client = KazooClient(hosts=f"127.0.0.1:{port}")
    client.start(timeout=15)
    try:
        pending = []
        for i in range(clusters):
            root = f"/fleet/{name(i)}"
            client.ensure_path(f"{root}/brokers/ids")
            pending.append(client.create_async(f"{root}/controller", encode_controller(1)))
            for b in BROKERS:
                reg = BrokerRegistration(b, (f"PLAINTEXT://b{b}.{name(i)}.internal:9092",),
                                         {"PLAINTEXT": "PLAINTEXT"}, f"rack-{b}")
                pending.append(client.create_async(f"{root}/brokers/ids/{b}", encode_broker_registration(reg)))
        for result in pending:
            result.get(timeout=120)
    finally:
        client.stop()
        client.close()


def write_repo(root: Path, port: int, clusters: int, topics: int) -> int:
    for i in range(clusters):
        directory = root / "clusters" / name(i)
        directory.mkdir(parents=True)
        (directory / "cluster.yaml").write_text(
            f"apiVersion: reconciler/v1\nkind: Cluster\nmeta: {{name: {name(i)}}}\nspec:\n  kafkaVersion: \"3.6\"\n"
            f"  zookeeper: {{connect: \"127.0.0.1:{port}/fleet/{name(i)}\"}}\n  brokers: [1, 2, 3]\n",
            encoding="utf-8")
        (directory / "brokers.yaml").write_text(
            "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
            "    log.retention.ms: 604800000\n    num.io.threads: 8\n", encoding="utf-8")
        lines = [f"    team-{i % 7}.events-{t:04d}: {{config: {{retention.ms: {86400000 * (1 + t % 7)}, "
                 f"cleanup.policy: delete}}}}\n" for t in range(topics)]
        (directory / "topics.yaml").write_text(
            "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  defaults: {partitions: 3, "
            "replicationFactor: 3}\n  topics:\n" + "".join(lines), encoding="utf-8")
    return clusters * 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=0, help="reconcile --jobs (0: one worker process per core)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pipelined-floor", action="store_true",
                        help="also time issue 18's floor (pipelined get_async per znode; slow)")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average at start: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        root = Path(tmp)
        with local_zookeeper(root / "zookeeper") as port:
            seed(port, args.clusters)
            repo = root / "repo"
            files = write_repo(repo, port, args.clusters, args.topics)
            git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
            for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fleet"]):
                subprocess.run([*git, *step], check=True)  # reconcile applies what is committed, as in production
            floor_script = root / "floor.py"
            floor_script.write_text(FLOOR, encoding="utf-8")
            pipelined_script = root / "floor_pipelined.py"
            pipelined_script.write_text(PIPELINED_FLOOR, encoding="utf-8")
            print(f"fleet: {args.clusters} clusters x {args.topics} topics, {files} manifest files, "
                  f"ZooKeeper 127.0.0.1:{port}, --parallel {args.parallel} --jobs {args.jobs}")
            reconcile = [str(RECONCILER), "--repo", str(repo), "reconcile", "--once",
                         "--parallel", str(args.parallel), "--jobs", str(args.jobs),
                         "--audit-log", str(root / "audit.jsonl")]
            first = time_process(reconcile)
            print(f"  first pass      {first[0]:7.2f} s wall  {first[1]:7.2f} s CPU")
            commands = {
                "no-op pass": reconcile,
                "plan, all clusters": [str(RECONCILER), "--repo", str(repo), "plan"],
                "read floor": [str(PYTHON), str(floor_script), str(port), str(args.parallel), str(repo)],
            }
            if args.pipelined_floor:
                commands["read floor, pipelined"] = [str(PYTHON), str(pipelined_script), str(port),
                                                     str(args.parallel), str(repo)]
            rows: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
            for run in range(1, args.runs + 1):
                for label, command in commands.items():
                    rows[label].append(time_process(command))
                    wall, cpu = rows[label][-1]
                    print(f"  run {run}/{args.runs}  {label:20s} {wall:7.2f} s wall  {cpu:7.2f} s CPU")
    print(f"load average at end: {load_average()}")
    med = {label: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for label, r in rows.items()}
    floor = med["read floor"][0]
    print()
    print(f"{'':22s}{'wall s':>9s}{'CPU s':>9s}{'wall / floor':>14s}")
    print(f"{'first pass':22s}{first[0]:9.2f}{first[1]:9.2f}{first[0] / floor:14.2f}")
    for label, (wall, cpu) in med.items():
        print(f"{label:22s}{wall:9.2f}{cpu:9.2f}{wall / floor:14.2f}")
    noop = med["no-op pass"][0]
    print()
    print(f"no-op pass  = {noop / floor:6.2f}x the one-process read floor (target <= 1.0x)  "
          f"{'met' if noop <= floor else 'NOT MET'}")
    print(f"no-op pass  = {noop:6.2f} s  (target <= 5 s)   {'met' if noop <= 5 else 'NOT MET'}")
    print(f"first pass  = {first[0]:6.2f} s  (target <= 15 s)  {'met' if first[0] <= 15 else 'NOT MET'}")


if __name__ == "__main__":
    main()
