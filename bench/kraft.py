"""KRaft at 10,000 topics, against a real Kafka 4.x node started here: plan beside a minimal Admin-API program that
issues the same reads, and apply beside one request per entity.

Run: .venv/bin/python bench/kraft.py [--topics 10000] [--runs 3] [--apply-runs 3] [--baseline-runs 1]

Starts its own KRaft node (scripts/local-kraft.sh: combined mode, 1 GiB heap, the per-record logs quiet; free ports,
a temporary directory; stopped at the end) and seeds it through the Admin API (setup, not measured): `--topics`
topics (1 partition, 2 configs each), 20 client quotas and 200 ACL entries over 100 topics. The manifests declare
all of it, a tenth of the topics with a changed retention.ms, one quota changed and one ACL entry added.

Plan (whole subprocesses, wall and CPU; one unmeasured run of each, then --runs rounds of all in turn; medians):
  reconciler plan     `reconciler --repo <tmp> plan` (text plan on stdout, discarded): reads, plans and sends
                      the changed configs with validateOnly (one request: the cluster's own validation)
  read floor          a bare interpreter importing only kafka-python and PyYAML: C YAML parse of the same
                      manifest files, then the reads the plan sends, as kafka-python's protocol classes decode
                      them and nothing more: DescribeCluster, the broker's DescribeConfigs, Metadata,
                      DescribeConfigs of every topic in one request, DescribeClientQuotas, DescribeAcls
  (--one-at-a-time)   the floor with one DescribeConfigs request per topic

Apply (the cluster as the plan left it; each run a fresh `plan --out PLAN` of every topic's retention.ms,
alternating values, not measured):
  apply, whole process   `reconciler apply PLAN --auto-approve`: the lock in the state topic, every value read
                         again (stale check), validateOnly, the writes, the audit entry (median of --apply-runs)
  one request per entity the baseline: one IncrementalAlterConfigs request per topic, each answer awaited
                         (--baseline-runs)

Targets (issue 44): plan <= 1.2x the read floor; apply of 10,000 topic-config changes >= 10x one request per entity.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _harness import (
    PYTHON,
    RECONCILER,
    kraft_admin,
    kraft_send,
    load_average,
    local_kraft,
    machine,
    measure,
    table,
    time_process,
)

CLIENTS = 20
ACL_TOPICS = 100  # two entries each

FLOOR = r'''
import sys
import yaml
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (DescribeAclsRequest, DescribeClientQuotasRequest, DescribeClusterRequest,
                                  DescribeConfigsRequest)
from kafka.protocol.metadata import MetadataRequest

mode, bootstrap, *files = sys.argv[1:]
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


brokers = send(DescribeClusterRequest(include_cluster_authorized_operations=False)).brokers
for b in brokers:
    send(DescribeConfigsRequest(resources=[(4, str(b.broker_id), None)], include_synonyms=True), b.broker_id)
topics = [t.name for t in send(MetadataRequest(topics=None, allow_auto_topic_creation=False)).topics]
if mode == "batched":
    configs = send(DescribeConfigsRequest(resources=[(2, t, None) for t in topics], include_synonyms=False)).results
else:
    configs = [r for t in topics
               for r in send(DescribeConfigsRequest(resources=[(2, t, None)], include_synonyms=False)).results]
quotas = send(DescribeClientQuotasRequest(components=[], strict=False)).entries
acls = send(DescribeAclsRequest(min_version=3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                principal_filter=None, host_filter=None, operation=1, permission_type=1)).resources
assert len(configs) == len(topics) and docs
admin.close()
'''


def topic_name(i: int) -> str:
    return f"team-{i % 50}.orders-{i:05d}"


def retention(i: int) -> int:
    return 86_400_000 * (1 + i % 7)


def acl_entries() -> list[tuple[str, str, str]]:
    """(topic, principal, operation): the ACL entries seeded (and declared)."""
    return [(topic_name(i), f"User:app-{i % 10}", op) for i in range(ACL_TOPICS) for op in ("Read", "Describe")]


def seed(bootstrap: str, topics: int) -> None:
    """Topics (CreateTopics, 500 a request), quotas, ACLs; waits until Metadata lists every topic."""
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        NewTopic,
        ResourcePattern,
        ResourceType,
    )
    from kafka.protocol.admin import AlterClientQuotasRequest

    admin = kraft_admin(bootstrap)
    try:
        names = [topic_name(i) for i in range(topics)]
        started = time.monotonic()
        for start in range(0, topics, 500):
            admin.create_topics([NewTopic(n, 1, 1, topic_configs={"retention.ms": str(retention(start + k)),
                                                                   "cleanup.policy": "delete"})
                                 for k, n in enumerate(names[start:start + 500])], raise_errors=False)
        while len(set(admin.list_topics()) & set(names)) < topics:
            if time.monotonic() - started > 1800:
                sys.exit("the KRaft node did not list every topic within 30 min")
            time.sleep(2)
        quotas = [([("client-id", f"app-{c}")], [("producer_byte_rate", 1048576.0, False)]) for c in range(CLIENTS)]
        kraft_send(admin, AlterClientQuotasRequest(entries=quotas, validate_only=False))
        admin.create_acls([ACL(principal, "*", ACLOperation[op.upper()], ACLPermissionType.ALLOW,
                               ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
                           for topic, principal, op in acl_entries()])
        print(f"seeded {topics} topics, {CLIENTS} quotas, {len(acl_entries())} ACL entries in "
              f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        admin.close()


def write_repo(repo: Path, bootstrap: str, topics: int, value: int | None = None) -> list[Path]:
    """The manifests: every topic (a tenth with a changed retention.ms, or all with `value`), the quotas (one
    changed), the ACLs (one entry added)."""
    cluster = repo / "clusters" / "big"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: big}\nspec:\n  kafkaVersion: \"4.1\"\n"
        f"  kraft: {{bootstrapServers: \"{bootstrap}\"}}\n  brokers: [1]\n", encoding="utf-8")
    lines = [f"    {topic_name(i)}: {{config: {{retention.ms: "
             f"{value if value is not None else retention(i) + (1 if i % 10 == 0 else 0)}, cleanup.policy: delete}}}}"
             for i in range(topics)]
    (cluster / "topics.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Topics\nmeta: {name: orders}\nspec:\n"
        "  defaults: {partitions: 1, replicationFactor: 1}\n  topics:\n" + "\n".join(lines) + "\n", encoding="utf-8")
    quotas = [f"    app-{c}: {{producer_byte_rate: {2097152 if c == 0 and value is None else 1048576}}}"
              for c in range(CLIENTS)]
    (cluster / "quotas.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n  clients:\n" + "\n".join(quotas) + "\n",
        encoding="utf-8")
    entries = acl_entries() + ([] if value is not None else [(topic_name(0), "User:app-0", "Write")])
    by_topic: dict[str, list[str]] = {}
    for topic, principal, op in entries:
        by_topic.setdefault(topic, []).append(f"{{principal: \"{principal}\", operation: {op}}}")
    acls = [f"    - {{type: Topic, name: {topic}, entries: [{', '.join(items)}]}}" for topic, items in by_topic.items()]
    (cluster / "acls.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec:\n  resources:\n" + "\n".join(acls) + "\n",
        encoding="utf-8")
    return sorted(cluster.glob("*.yaml"))


def one_request_per_entity(bootstrap: str, topics: int, value: int) -> float:
    """The baseline writer: one IncrementalAlterConfigs per topic (retention.ms SET), each answer awaited."""
    from kafka.protocol.admin import IncrementalAlterConfigsRequest

    admin = kraft_admin(bootstrap)
    try:
        start = time.perf_counter()
        for i in range(topics):
            answer = kraft_send(admin, IncrementalAlterConfigsRequest(
                resources=[(2, topic_name(i), [("retention.ms", 0, str(value))])], validate_only=False))
            assert all(r.error_code == 0 for r in answer.responses), answer
        return time.perf_counter() - start
    finally:
        admin.close()


def settled(bootstrap: str, topics: int, value: int, timeout_s: float = 900.0) -> float:
    """Waits (not measured) until the node answers DescribeConfigs with `value` for every topic: a KRaft broker
    takes the controller's records after the apply's answer, and a plan made before that reads the old values, so
    the next apply is refused as stale ("changed meanwhile"), as it must be. With 10,000 topics that took the node
    50-110 s: each topic's new config makes the broker list every log it holds (`LogManager.updateTopicConfig` ->
    `logsByTopic`), so a batch of n topic configs costs it n x (topics) steps."""
    from kafka.protocol.admin import DescribeConfigsRequest

    admin = kraft_admin(bootstrap)
    start = time.perf_counter()
    try:
        while True:
            answer = kraft_send(admin, DescribeConfigsRequest(
                resources=[(2, topic_name(i), ["retention.ms"]) for i in range(topics)], include_synonyms=False),
                timeout_ms=120_000)
            if len(answer.results) == topics and all(len(r.configs) == 1 and r.configs[0].value == str(value)
                                                     for r in answer.results):
                return time.perf_counter() - start
            if time.perf_counter() - start > timeout_s:
                sys.exit(f"the node did not show retention.ms={value} on every topic within {timeout_s:.0f} s")
            time.sleep(0.2)
    finally:
        admin.close()


def whole_apply(root: Path, bootstrap: str, topics: int, value: int) -> tuple[float, float]:
    """`reconciler apply PLAN` of a fresh plan (written first, not measured) setting every topic's retention.ms."""
    repo, plan = root / "apply-repo", root / f"plan-{value}.json"
    write_repo(repo, bootstrap, topics, value)
    time_process([str(RECONCILER), "--repo", str(repo), "plan", "--out", str(plan)])
    wall, cpu = time_process([str(RECONCILER), "--repo", str(repo), "apply", str(plan), "--auto-approve",
                              "--audit-log", str(root / "audit.jsonl")])
    waited = settled(bootstrap, topics, value)
    print(f"  apply, whole process: {wall:7.3f} s wall  {cpu:7.3f} s CPU  (then {waited:.2f} s until the node showed "
          "every value)", flush=True)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--apply-runs", type=int, default=3)
    parser.add_argument("--baseline-runs", type=int, default=1)
    parser.add_argument("--one-at-a-time", action="store_true", help="also time one DescribeConfigs per topic")
    parser.add_argument("--no-apply", action="store_true", help="the plan part only")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average at start: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-kraft-") as tmp:
        root = Path(tmp)
        with local_kraft(root / "kraft") as bootstrap:
            seed(bootstrap, args.topics)
            files = write_repo(root / "repo", bootstrap, args.topics)
            floor_script = root / "floor.py"
            floor_script.write_text(FLOOR, encoding="utf-8")
            floor = [str(PYTHON), str(floor_script)]
            commands = {
                PLAN: [str(RECONCILER), "--repo", str(root / "repo"), "plan"],
                FLOOR_ROW: [*floor, "batched", bootstrap, *map(str, files)],
            }
            if args.one_at_a_time:
                commands[SINGLE_ROW] = [*floor, "single", bootstrap, *map(str, files)]
            print(f"KRaft 4.x node {bootstrap}: {args.topics} topics; manifests: {len(files)} files, "
                  f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB", flush=True)
            timings = measure(commands, args.runs)
            whole: list[tuple[float, float]] = []
            baseline: list[float] = []
            if not args.no_apply:
                value = 900_000_000  # above every seeded retention: raising it is safe
                whole_apply(root, bootstrap, args.topics, value)  # unmeasured: creates the state topic
                for _ in range(args.apply_runs):
                    value += 1
                    whole.append(whole_apply(root, bootstrap, args.topics, value))
                for _ in range(args.baseline_runs):
                    value += 1
                    baseline.append(one_request_per_entity(bootstrap, args.topics, value))
                    print(f"  one request per entity: {baseline[-1]:7.3f} s", flush=True)
    print(f"load average at end: {load_average()}")
    print()
    plan = timings[PLAN]
    table(list(timings.items()), timings[FLOOR_ROW], "read floor")
    ratio = plan.median / timings[FLOOR_ROW].median
    print(f"\nplan / read floor = {ratio:5.2f}x  (target <= 1.2x)  {'met' if ratio <= 1.2 else 'NOT MET'}")
    if whole:
        wall, cpu = statistics.median(w for w, _ in whole), statistics.median(c for _, c in whole)
        one = statistics.median(baseline)
        print()
        print(f"{'':28s}{'wall s':>9s}{'entities/s':>12s}{'x one request each':>20s}")
        print(f"{'apply, whole process':28s}{wall:9.3f}{args.topics / wall:12,.0f}{one / wall:20.1f}")
        print(f"{'one request per entity':28s}{one:9.3f}{args.topics / one:12,.0f}{1:20.1f}")
        print(f"(whole process: {cpu:.3f} s CPU, median)")
        print(f"\napply / one request per entity = {one / wall:.1f}x faster (target >= 10x)  "
              f"{'met' if one / wall >= 10 else 'NOT MET'}")


PLAN = "reconciler plan"
FLOOR_ROW = "read floor (same requests)"
SINGLE_ROW = "one DescribeConfigs per topic"


if __name__ == "__main__":
    main()
