"""Access at scale: a cluster holding 100,000 ACL entries over 20,000 resource patterns and 5,000 SCRAM users, on
either backend (a real ZooKeeper, or a real KRaft Kafka 4.x node, started here).

Run: .venv/bin/python bench/access.py --backend zookeeper|kraft [--resources 20000] [--entries 5] [--users 5000]
                                      [--runs 3] [--apply-entries 10000] [--apply-runs 2] [--baseline-runs 1]

Setup (not measured): the backend started on free ports in a temporary directory (stopped at the end), seeded with
`--resources` resource patterns of `--entries` entries each (Topic literal and prefixed, Group, TransactionalId),
`--users` users with a SCRAM-SHA-512 credential and a producer quota, 3 brokers (ZooKeeper: registrations). The
manifests declare every ACL entry and every user's quota; the plan's changes: 100 entries added, 100 removed, one
quota. (The SCRAM credentials are the cluster's, not declared: the plan reads them and leaves them alone.)

Plan (whole subprocesses, wall, CPU and peak RSS; one unmeasured run of each, then --runs rounds in turn; medians):
  reconciler plan   `reconciler --repo <tmp> plan`
  read floor        a bare interpreter importing only the backend's client and PyYAML: C YAML parse of the same
                    manifests, then the reads the plan sends: ZooKeeper: the same znodes with multiRead (1,000 a
                    request, as reconciler.zk.multiread); KRaft: DescribeCluster, the brokers' DescribeConfigs,
                    Metadata, DescribeClientQuotas, DescribeUserScramCredentials and one DescribeAcls, decoded by
                    kafka-python's protocol classes and nothing more

Apply (`--apply-entries` new entries, one on each of that many existing resource patterns; a fresh plan each run,
not measured):
  apply, whole process     `reconciler apply PLAN --auto-approve`
  one at a time            the baseline: one entry at a time as `kafka-acls.sh --add` writes it: ZooKeeper: get
                           the resource znode, set it version-guarded, create its change notification
                           (AclAuthorizer.updateResourceAcls); KRaft: one CreateAcls request per entry

--clients RUNS (KRaft): every ACL binding read by each Python Kafka client's own describe_acls, a whole process
each: kafka-python's KafkaAdminClient and, with --confluent-site DIR (confluent-kafka installed there with
`pip install --target DIR confluent-kafka`; not a dependency of the project), confluent-kafka's AdminClient.

Targets (issue 44): plan <= 1.2x the read floor, memory bounded; apply >= 10x one at a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _harness import (
    PYCACHE,
    PYTHON,
    RECONCILER,
    ZK_MULTIREAD,
    kraft_admin,
    kraft_send,
    load_average,
    local_kraft,
    local_zookeeper,
    machine,
)

CHROOT = "/kafka/access"
BROKERS = (1, 2, 3)
KINDS = (("Topic", "LITERAL", "orders"), ("Topic", "PREFIXED", "app"), ("Group", "LITERAL", "group"),
         ("TransactionalId", "LITERAL", "tx"))
OPERATIONS = {"Topic": ("Read", "Write", "Describe", "Create", "DescribeConfigs"),
              "Group": ("Read", "Describe", "Delete", "Read", "Describe"),
              "TransactionalId": ("Write", "Describe", "Write", "Describe", "Write")}
CHANGED = 100  # entries added and removed by the plan
ACLS_PER_FILE = 1000  # resource patterns per Acls file

ZK_FLOOR = ZK_MULTIREAD + r'''
import sys
import yaml
from kazoo.client import KazooClient
TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
LISTED = (["/config/users", "/brokers/ids", "/brokers/topics"] + [f"/kafka-acl/{t}" for t in TYPES]
          + [f"/kafka-acl-extended/prefixed/{t}" for t in TYPES])




hosts, chroot, *files = sys.argv[1:]
docs = []
for name in files:
    with open(name, "rb") as handle:
        docs.extend(yaml.load_all(handle, Loader=yaml.CSafeLoader))
client = KazooClient(hosts=hosts + chroot)
client.start(timeout=30)


def multiread(ops):
    pending = []
    for start in range(0, len(ops), 1000):
        result = client.handler.async_result()
        client._call(MultiRead([(op, chroot + path) for op, path in ops[start:start + 1000]]), result)
        pending.append(result)
    return [item for r in pending for item in r.get(timeout=120)]


first = multiread([(GET_CHILDREN, p) for p in LISTED] + [(GET_DATA, "/controller")])
data = [(GET_DATA, f"{parent}/{child}") for parent, children in zip(LISTED, first) for child in children or ()]
got = multiread(data)
assert len(got) == len(data) and docs
client.stop()
client.close()
'''

KRAFT_FLOOR = r'''
import sys
import yaml
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (DescribeAclsRequest, DescribeClientQuotasRequest, DescribeClusterRequest,
                                  DescribeConfigsRequest, DescribeUserScramCredentialsRequest)
from kafka.protocol.metadata import MetadataRequest

bootstrap, *files = sys.argv[1:]
docs = []
for name in files:
    with open(name, "rb") as handle:
        docs.extend(yaml.load_all(handle, Loader=yaml.CSafeLoader))
admin = KafkaAdminClient(bootstrap_servers=[bootstrap], request_timeout_ms=300000)
manager = admin._manager


def send(request, node=None):
    async def ask():
        return await (manager.send(request, node_id=node) if node is not None else manager.send(request))
    return manager.run(ask)


for b in send(DescribeClusterRequest(include_cluster_authorized_operations=False)).brokers:
    send(DescribeConfigsRequest(resources=[(4, str(b.broker_id), None)], include_synonyms=True), b.broker_id)
topics = send(MetadataRequest(topics=None, allow_auto_topic_creation=False)).topics
quotas = send(DescribeClientQuotasRequest(components=[], strict=False)).entries
scram = send(DescribeUserScramCredentialsRequest(users=None)).results
acls = send(DescribeAclsRequest(min_version=3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                principal_filter=None, host_filter=None, operation=1, permission_type=1)).resources
assert docs and quotas and scram and acls
admin.close()
'''


def resources(count: int) -> list[tuple[str, str, str]]:
    """(type, pattern, name) of `count` resource patterns, the four kinds in turn."""
    out = []
    for i in range(count):
        rtype, pattern, stem = KINDS[i % len(KINDS)]
        out.append((rtype, pattern, f"{stem}-{i:06d}" + ("." if pattern == "PREFIXED" else "")))
    return out


def entries(rtype: str, i: int, per: int) -> list[tuple[str, str]]:
    """(principal, operation) of a resource's entries: `per` principals, one operation each."""
    ops = OPERATIONS[rtype]
    return [(f"User:svc-{(i + k) % 997:03d}", ops[k % len(ops)]) for k in range(per)]


def user_name(u: int) -> str:
    return f"user-{u:05d}"


def manifests(cluster: Path, spec: str, patterns: Sequence[tuple[str, str, str]], per: int, users: int,
              added: Sequence[dict[int, tuple[str, str]]] | None = None) -> list[Path]:
    """The cluster's manifests: every entry (the plan's changes unless `added`: then exactly the seeded entries
    plus, for each round of `added`, one more on each of its resources), every user's quota."""
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "cluster.yaml").write_text("apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: access}\n"
                                          f"spec:\n  kafkaVersion: \"{'4.1' if 'kraft' in spec else '3.9'}\"\n"
                                          f"  {spec}\n  brokers: [{'1' if 'kraft' in spec else '1, 2, 3'}]\n",
                                          encoding="utf-8")
    for old in cluster.glob("acls-*.yaml"):
        old.unlink()
    lines: list[str] = []
    for i, (rtype, pattern, name) in enumerate(patterns):
        if i % ACLS_PER_FILE == 0:  # a team's file each (one file of 100,000 entries passes the loader's bounds)
            if lines:
                (cluster / f"acls-{i // ACLS_PER_FILE - 1:03d}.yaml").write_text("\n".join(lines) + "\n",
                                                                                  encoding="utf-8")
            lines = ["apiVersion: reconciler/v1", "kind: Acls", "meta: {}", "spec:", "  resources:"]
        items = entries(rtype, i, per)
        if added is None and i < CHANGED:  # the plan's changes: one entry removed, one added
            items = [*items[1:], ("User:newcomer", OPERATIONS[rtype][0])]
        if added is not None:
            items = [*items, *(round_[i] for round_ in added if i in round_)]
        by_op: dict[str, list[str]] = {}
        for principal, op in items:
            by_op.setdefault(op, []).append(principal)
        shown = ", ".join(f"{{principals: [{', '.join(ps)}], operation: {op}}}" for op, ps in sorted(by_op.items()))
        lines.append(f"    - {{type: {rtype}, name: \"{name}\", pattern: {pattern}, entries: [{shown}]}}")
    if lines:
        (cluster / f"acls-{(len(patterns) - 1) // ACLS_PER_FILE:03d}.yaml").write_text("\n".join(lines) + "\n",
                                                                                      encoding="utf-8")
    quota = [f"    {user_name(u)}: {{producer_byte_rate: {2097152 if u == 0 and added is None else 1048576}}}"
             for u in range(users)]
    (cluster / "quotas.yaml").write_text("apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n  users:\n"
                                         + "\n".join(quota) + "\n", encoding="utf-8")
    return sorted(cluster.glob("*.yaml"))


def scram_credential() -> str:
    """One SCRAM-SHA-512 credential in Kafka's stored form (every user gets it: its keys are never checked here)."""
    from reconciler.model import Secret
    from reconciler.secrets.scram import credential_for

    return credential_for("SCRAM-SHA-512", Secret("bench-password"), 4096)


def run_measured(args: Sequence[str]) -> tuple[float, float, float]:
    """(wall, CPU, peak RSS MiB) of one whole subprocess (stdout discarded); exits the bench if it fails."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NO_COLOR="1", PYTHONPYCACHEPREFIX=str(PYCACHE))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(list(args), stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        if process.returncode != 0:
            err.seek(0)
            text = err.read().decode()
            lines = [line[:400] for line in text.splitlines()]  # a line of 10,000 listed changes cut to its start
            sys.exit(f"{' '.join(args)} exited {process.returncode}:\n" + "\n".join(lines)[-6000:])
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, list[tuple[float, float, float]]]:
    for command in commands.values():
        run_measured(command)
    out: dict[str, list[tuple[float, float, float]]] = {label: [] for label in commands}
    for round_ in range(runs):
        for label, command in commands.items():
            out[label].append(run_measured(command))
            wall, cpu, rss = out[label][-1]
            print(f"  run {round_ + 1}/{runs}  {label:<22} {wall:7.2f} s wall  {cpu:7.2f} s CPU  {rss:6.0f} MiB",
                  flush=True)
    return out


# --- ZooKeeper --------------------------------------------------------------------------------------------------

def zk_seed(port: int, patterns: Sequence[tuple[str, str, str]], per: int, users: int) -> None:
    from kazoo.client import KazooClient

    from reconciler.model import AclEntry, AclResource, BrokerRegistration
    from reconciler.zk.acls import encode_acls, resource_path
    from reconciler.zk.layout import encode_broker_registration, encode_controller, encode_entity_config

    client = KazooClient(hosts=f"127.0.0.1:{port}")
    client.start(timeout=30)
    try:
        parents = {"/config/users", "/config/changes", "/brokers/ids", "/brokers/topics", "/kafka-acl-changes",
                   "/kafka-acl-extended-changes"}
        parents |= {resource_path(AclResource(t, p, "x")).rsplit("/", 1)[0] for t, p, _ in patterns}
        for parent in sorted(parents):
            client.ensure_path(CHROOT + parent)
        pending = [client.create_async(CHROOT + "/controller", encode_controller(1))]
        for b in BROKERS:
            reg = BrokerRegistration(b, (f"PLAINTEXT://b{b}.access.internal:9092",), {"PLAINTEXT": "PLAINTEXT"},
                                     None)
            pending.append(client.create_async(f"{CHROOT}/brokers/ids/{b}", encode_broker_registration(reg)))
        for i, (rtype, pattern, name) in enumerate(patterns):
            acls = [AclEntry(p, "*", op, "Allow") for p, op in entries(rtype, i, per)]
            pending.append(client.create_async(CHROOT + resource_path(AclResource(rtype, pattern, name)),
                                               encode_acls(acls)))
        credential = scram_credential()
        for u in range(users):
            pending.append(client.create_async(f"{CHROOT}/config/users/{user_name(u)}", encode_entity_config(
                {"SCRAM-SHA-512": credential, "producer_byte_rate": "1048576"})))
        for result in pending:
            result.get(timeout=300)
    finally:
        client.stop()
        client.close()


def zk_one_at_a_time(port: int, patterns: Sequence[tuple[str, str, str]], added: dict[int, tuple[str, str]],
                     remove: bool = False) -> float:
    """kafka-acls.sh --add (--remove), one entry at a time (AclAuthorizer.updateResourceAcls): read the resource's
    znode, set it guarded by the version read, create its change notification."""
    from kazoo.client import KazooClient

    from reconciler.model import AclEntry, AclResource
    from reconciler.zk.acls import decode_acls, encode_acls, encode_change, resource_path

    client = KazooClient(hosts=f"127.0.0.1:{port}{CHROOT}")
    client.start(timeout=30)
    try:
        start = time.perf_counter()
        for i, (principal, op) in added.items():
            rtype, pattern, name = patterns[i]
            resource = AclResource(rtype, pattern, name)
            path = resource_path(resource)
            data, stat = client.get(path)
            entry = {AclEntry(principal, "*", op, "Allow")}
            acls = decode_acls(data, path) - entry if remove else decode_acls(data, path) | entry
            client.set(path, encode_acls(sorted(acls)), version=stat.version)
            prefix, change = encode_change(resource)
            client.create(prefix, change, sequence=True)
        return time.perf_counter() - start
    finally:
        client.stop()
        client.close()


# --- KRaft ------------------------------------------------------------------------------------------------------

def kraft_creation(rtype: str, pattern: str, name: str, principal: str, op: str) -> Any:
    from kafka.admin import ACLOperation, ResourceType
    from kafka.protocol.admin import CreateAclsRequest

    upper = "".join("_" + c if c.isupper() and k else c for k, c in enumerate(op)).upper()
    rupper = "".join("_" + c if c.isupper() and k else c for k, c in enumerate(rtype)).upper()
    return CreateAclsRequest.AclCreation(resource_type=ResourceType[rupper].value, resource_name=name,
                                         resource_pattern_type=3 if pattern == "LITERAL" else 4, principal=principal,
                                         host="*", operation=ACLOperation[upper].value, permission_type=3)


def kraft_seed(bootstrap: str, patterns: Sequence[tuple[str, str, str]], per: int, users: int) -> None:
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion
    from kafka.protocol.admin import AlterClientQuotasRequest, CreateAclsRequest

    admin = kraft_admin(bootstrap)
    try:
        creations = [kraft_creation(rtype, pattern, name, p, op) for i, (rtype, pattern, name) in enumerate(patterns)
                     for p, op in entries(rtype, i, per)]
        for start in range(0, len(creations), 5000):
            answer = kraft_send(admin, CreateAclsRequest(creations=creations[start:start + 5000]))
            assert all(r.error_code == 0 for r in answer.results), answer
        for start in range(0, users, 500):
            chunk = [user_name(u) for u in range(start, min(users, start + 500))]
            admin.alter_user_scram_credentials([UserScramCredentialUpsertion(u, ScramMechanism.SCRAM_SHA_512,
                                                                             "bench-password", iterations=4096)
                                                for u in chunk])
            kraft_send(admin, AlterClientQuotasRequest(entries=[([("user", u)], [("producer_byte_rate", 1048576.0,
                                                                                  False)]) for u in chunk],
                                                       validate_only=False))
    finally:
        admin.close()


def kraft_one_at_a_time(bootstrap: str, patterns: Sequence[tuple[str, str, str]],
                        added: dict[int, tuple[str, str]], remove: bool = False) -> float:
    """One CreateAcls (DeleteAcls of the entry's exact filter) request per entry, each answer awaited
    (kafka-acls.sh --add / --remove, one entry per run)."""
    from kafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest

    admin = kraft_admin(bootstrap)
    try:
        start = time.perf_counter()
        for i, (principal, op) in added.items():
            one = kraft_creation(*patterns[i], principal, op)
            if remove:
                wire = DeleteAclsRequest.DeleteAclsFilter(
                    resource_type_filter=one.resource_type, resource_name_filter=one.resource_name,
                    pattern_type_filter=one.resource_pattern_type, principal_filter=one.principal,
                    host_filter=one.host, operation=one.operation, permission_type=one.permission_type)
                answer = kraft_send(admin, DeleteAclsRequest(filters=[wire]), timeout_ms=120_000)
                assert all(r.error_code == 0 and len(r.matching_acls) == 1 for r in answer.filter_results), answer
                continue
            answer = kraft_send(admin, CreateAclsRequest(creations=[one]))
            assert all(r.error_code == 0 for r in answer.results), answer
        return time.perf_counter() - start
    finally:
        admin.close()


# --- the two Python Kafka clients' own DescribeAcls (--clients, KRaft) ------------------------------------------

KAFKA_PYTHON_ACLS = """
import sys, time
from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, KafkaAdminClient, ResourcePatternFilter
from kafka.admin import ACLResourcePatternType, ResourceType
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=120000)
start = time.perf_counter()
acls, error = admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                            ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)))
print(len(acls), f"{time.perf_counter() - start:.2f}", file=sys.stderr)
"""

CONFLUENT_ACLS = """
import sys, time
from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
start = time.perf_counter()
future = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                              AclOperation.ANY, AclPermissionType.ANY), request_timeout=120)
acls = future.result()
print(len(acls), f"{time.perf_counter() - start:.2f}", file=sys.stderr)
"""


def clients(root: Path, bootstrap: str, confluent_site: str | None, runs: int) -> None:
    """Every ACL binding read with each Python client's own describe_acls (a whole process each: wall, CPU, peak
    RSS; the count and the call's own time on stderr): kafka-python's KafkaAdminClient, and confluent-kafka's
    AdminClient (librdkafka) where `--confluent-site` names a directory it is installed in (pip install --target;
    not a dependency of the project)."""
    scripts = {"kafka-python describe_acls": KAFKA_PYTHON_ACLS}
    if confluent_site:
        scripts["confluent-kafka describe_acls"] = CONFLUENT_ACLS
    for label, text in scripts.items():
        script = root / (label.split()[0] + ".py")
        script.write_text(text, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": confluent_site or ""}
        for _ in range(runs):
            start = time.perf_counter()
            process = subprocess.Popen([str(PYTHON), str(script), bootstrap], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, env=env)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
            err = process.stderr.read().decode() if process.stderr else ""
            code = os.waitstatus_to_exitcode(status)
            said = err.strip().splitlines()[-1] if err.strip() else ""
            outcome = (f"{said.split()[0]} bindings in {said.split()[1]} s (the call)" if code == 0
                       else f"FAILED (exit {code}): {said[-300:]}")
            print(f"  {label:<31} {wall:7.2f} s wall  {usage.ru_utime + usage.ru_stime:7.2f} s CPU  "
                  f"{usage.ru_maxrss / 1024:6.0f} MiB  {outcome}", flush=True)


# --- the run ----------------------------------------------------------------------------------------------------

@contextmanager
def running(kind: str, root: Path) -> Iterator[tuple[str, str]]:
    """The started backend: (the Cluster's connection line, the ZooKeeper port or the KRaft bootstrap)."""
    if kind == "zookeeper":
        with local_zookeeper(root / "zookeeper") as port:
            yield f"zookeeper: {{connect: \"127.0.0.1:{port}{CHROOT}\"}}", str(port)
    else:
        with local_kraft(root / "kraft") as bootstrap:
            yield f"kraft: {{bootstrapServers: \"{bootstrap}\"}}", bootstrap


def additions(patterns: Sequence[tuple[str, str, str]], count: int, round_: int) -> dict[int, tuple[str, str]]:
    """One new entry on each of `count` resource patterns (after the ones the plan part changes)."""
    return {i: (f"User:added-{round_}", OPERATIONS[patterns[i][0]][1])
            for i in range(CHANGED, min(len(patterns), CHANGED + count))}


def impact(root: Path, repo: Path, runs: int) -> dict[str, list[tuple[float, float, float]]]:
    """`reconciler snapshot` of the cluster (not measured), then `reconciler impact --inventory` of the manifests
    (the access section: the plan's ACL computation over the inventory's acls table) beside the same command on the
    manifests without their Acls files (no access section). Checks the access section's counts."""
    import json

    inventory = root / "inventory"
    run_measured([str(RECONCILER), "--repo", str(repo), "snapshot", "--out", str(inventory), "--no-offsets"])
    bare = root / "repo-no-acls"
    (bare / "clusters" / "access").mkdir(parents=True, exist_ok=True)
    for f in (repo / "clusters" / "access").glob("*.yaml"):
        if not f.name.startswith("acls-"):
            (bare / "clusters" / "access" / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    answer = subprocess.run([str(RECONCILER), "--repo", str(repo), "impact", "--inventory", str(inventory),
                             "--format", "json"], capture_output=True, text=True, check=True).stdout
    access = json.loads(answer).get("access") or {}
    print(f"impact access section: {json.dumps(access)[:300]}", flush=True)
    return measure({IMPACT: [str(RECONCILER), "--repo", str(repo), "impact", "--inventory", str(inventory),
                             "--format", "json"],
                    IMPACT_FLOOR: [str(RECONCILER), "--repo", str(bare), "impact", "--inventory", str(inventory),
                                   "--format", "json"]}, runs)


def report(rows: dict[str, list[tuple[float, float, float]]], floor: str, subject: str | None = None) -> None:
    med = {label: tuple(statistics.median(r[k] for r in runs) for k in range(3)) for label, runs in rows.items()}
    base = med[floor][0]
    print(f"\n{'':24s}{'wall s':>9s}{'CPU s':>9s}{'peak RSS MiB':>14s}{'wall / floor':>14s}")
    for label, (wall, cpu, rss) in med.items():
        print(f"{label:24s}{wall:9.2f}{cpu:9.2f}{rss:14.0f}{wall / base:14.2f}")
    if subject is not None:
        print(f"\n{subject} / {floor}: {med[subject][0] / base:5.2f}x; the access section costs "
              f"{med[subject][0] - base:.2f} s wall, {med[subject][1] - med[floor][1]:.2f} s CPU")
        return
    ratio = med[PLAN][0] / base
    print(f"\nplan / read floor = {ratio:5.2f}x  (target <= 1.2x)  {'met' if ratio <= 1.2 else 'NOT MET'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("zookeeper", "kraft"), default="zookeeper")
    parser.add_argument("--resources", type=int, default=20_000)
    parser.add_argument("--entries", type=int, default=5, help="entries per resource pattern")
    parser.add_argument("--users", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--apply-entries", type=int, default=10_000)
    parser.add_argument("--apply-runs", type=int, default=2)
    parser.add_argument("--baseline-runs", type=int, default=1)
    parser.add_argument("--clients", type=int, default=0, metavar="RUNS",
                        help="KRaft: also read every ACL with kafka-python's and confluent-kafka's describe_acls")
    parser.add_argument("--confluent-site", help="a directory confluent-kafka is installed in (pip --target)")
    parser.add_argument("--no-plan", action="store_true", help="skip the plan rows (with --clients)")
    parser.add_argument("--impact", type=int, default=0, metavar="RUNS",
                        help="also time `reconciler impact` on a snapshot of the cluster, beside the same impact "
                             "without the Acls manifests (the access section's cost)")
    args = parser.parse_args()
    patterns = resources(args.resources)
    print(f"machine: {machine()}; load average at start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-access-") as tmp:
        root = Path(tmp)
        with running(args.backend, root) as (spec, target):
            started = time.monotonic()
            if args.backend == "zookeeper":
                zk_seed(int(target), patterns, args.entries, args.users)
            else:
                kraft_seed(target, patterns, args.entries, args.users)
            print(f"{args.backend}: seeded {len(patterns)} resource patterns, {len(patterns) * args.entries} ACL "
                  f"entries, {args.users} SCRAM users in {time.monotonic() - started:.0f} s", flush=True)
            repo = root / "repo"
            files = manifests(repo / "clusters" / "access", spec, patterns, args.entries, args.users)
            floor_script = root / "floor.py"
            floor_script.write_text(ZK_FLOOR if args.backend == "zookeeper" else KRAFT_FLOOR, encoding="utf-8")
            where = [f"127.0.0.1:{target}", CHROOT] if args.backend == "zookeeper" else [target]
            print(f"manifests: {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB", flush=True)
            rows = {} if args.no_plan else measure(
                {PLAN: [str(RECONCILER), "--repo", str(repo), "plan"],
                 FLOOR: [str(PYTHON), str(floor_script), *where, *map(str, files)]}, args.runs)
            if args.clients and args.backend == "kraft":
                clients(root, target, args.confluent_site, args.clients)
            if args.impact:
                impact_rows = impact(root, repo, args.impact)
            applied, baseline, removal, removal_baseline = [], [], [], []
            if args.apply_entries:
                kept: list[dict[int, tuple[str, str]]] = []

                def apply_round(label: str, tag: str) -> tuple[float, float, float]:
                    apply_repo = root / f"apply-{tag}"
                    manifests(apply_repo / "clusters" / "access", spec, patterns, args.entries, args.users, kept)
                    plan = root / f"plan-{tag}.json"
                    run_measured([str(RECONCILER), "--repo", str(apply_repo), "plan", "--out", str(plan)])
                    wall, cpu, rss = run_measured([str(RECONCILER), "--repo", str(apply_repo), "apply", str(plan),
                                                   "--auto-approve", "--audit-log", str(root / "audit.jsonl")])
                    print(f"  {label}: {wall:7.2f} s wall  {cpu:7.2f} s CPU  {rss:6.0f} MiB", flush=True)
                    return wall, cpu, rss

                for round_ in range(args.apply_runs + 1):  # the first unmeasured (bytecode, caches)
                    kept.append(additions(patterns, args.apply_entries, round_))
                    measured = apply_round(f"apply of {len(kept[-1])} new entries"
                                           + ("  (unmeasured)" if round_ == 0 else ""), str(round_))
                    if round_:
                        applied.append(measured)
                gone = kept.pop()  # the last round's entries: one principal's, one on each resource
                removal.append(apply_round(f"apply removing {len(gone)} entries", "removal"))
                for round_ in range(args.baseline_runs):
                    added = additions(patterns, args.apply_entries, 100 + round_)
                    one = (zk_one_at_a_time(int(target), patterns, added) if args.backend == "zookeeper"
                           else kraft_one_at_a_time(target, patterns, added))
                    baseline.append(one)
                    print(f"  one at a time, {len(added)} entries: {one:7.2f} s", flush=True)
                    one = (zk_one_at_a_time(int(target), patterns, added, remove=True) if args.backend == "zookeeper"
                           else kraft_one_at_a_time(target, patterns, added, remove=True))
                    removal_baseline.append(one)
                    print(f"  one at a time, {len(added)} entries removed: {one:7.2f} s", flush=True)
    print(f"load average at end: {load_average()}")
    if args.impact:
        report(impact_rows, IMPACT_FLOOR, IMPACT)
    if rows:
        report(rows, FLOOR)
    if applied and baseline:
        wall = statistics.median(w for w, _, _ in applied)
        one = statistics.median(baseline)
        count = len(additions(patterns, args.apply_entries, 0))
        print(f"\napply of {count} new entries, whole process: {wall:.2f} s wall, "
              f"{statistics.median(c for _, c, _ in applied):.2f} s CPU, "
              f"{statistics.median(r for _, _, r in applied):.0f} MiB; one at a time: {one:.2f} s")
        verdict = "met" if one / wall >= 10 else "NOT MET"
        print(f"apply / one at a time = {one / wall:.1f}x faster (target >= 10x)  {verdict}")
    if removal and removal_baseline:
        wall, cpu, rss = removal[0]
        one = statistics.median(removal_baseline)
        print(f"apply removing {count} entries (one principal's), whole process: {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{rss:.0f} MiB; one at a time: {one:.2f} s; {one / wall:.1f}x faster")


PLAN = "reconciler plan"
FLOOR = "read floor"
IMPACT = "impact, with ACLs"
IMPACT_FLOOR = "impact, no Acls files"

if __name__ == "__main__":
    main()
