"""Benchmark: diff of a 10,000-topic cluster, in memory (no ZooKeeper). Target: well under 0.5 s.

Synthetic states: 10,000 declared topics with 4 config keys each (a third of them drifted, some live values
spelled non-canonically, a tenth of the topics missing live and to be created, some growing partitions),
2,000 undeclared live topics, broker defaults, 6 per-broker entities and 500 quota entities.
Usage: .venv/bin/python bench/diff_10k.py [--topics N] [--runs R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from reconciler.catalog import load_catalog
from reconciler.diff import build_plan
from reconciler.model import (
    DEFAULT_ENTITY,
    BrokerRegistration,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    SourceRef,
    ZooKeeperSpec,
    frozen_map,
)

BROKERS = tuple(range(1, 7))


def states(n_topics: int) -> tuple[DesiredState, LiveState]:
    src = SourceRef("clusters/big/topics.yaml", 1)
    topics: dict[str, DesiredTopic] = {}
    live_topics: dict[str, LiveTopic] = {}
    live_entities: dict[EntityRef, LiveEntity] = {}
    for i in range(n_topics):
        name = f"topic-{i:05d}"
        config = {
            "retention.ms": DesiredValue(str(86_400_000 * (1 + i % 7)), src),
            "cleanup.policy": DesiredValue("compact,delete" if i % 5 == 0 else "delete", src),
            "min.insync.replicas": DesiredValue("2", src),
            "segment.bytes": DesiredValue("1073741824", src),
        }
        partitions = 12 + (1 if i % 50 == 0 else 0)
        topics[name] = DesiredTopic(
            name, partitions, 3, frozen_map(config), SourceRef("clusters/big/topics.yaml", i)
        )
        if i % 10 == 9:
            continue  # missing live: created
        assignment = {p: (1 + p % 6, 1 + (p + 1) % 6, 1 + (p + 2) % 6) for p in range(12)}
        live_topics[name] = LiveTopic(name, assignment, version=1)
        live_config = {
            "retention.ms": str(86_400_000 * (1 + i % 7)) if i % 3 else "1",
            "cleanup.policy": "compact, delete" if i % 5 == 0 else "delete",
            "min.insync.replicas": " 2",
            "segment.bytes": "1073741824",
        }
        if i % 4 == 0:
            live_config["leader.replication.throttled.replicas"] = "0:1"
        if i % 11 == 0:
            live_config["max.message.bytes"] = "2000000"
        ref = EntityRef("topics", name)
        live_entities[ref] = LiveEntity(ref, live_config, version=3)
    for i in range(n_topics // 5):
        name = f"legacy-{i:05d}"
        live_topics[name] = LiveTopic(name, {0: (1, 2, 3)}, version=1)
        ref = EntityRef("topics", name)
        live_entities[ref] = LiveEntity(ref, {"retention.ms": "1000"}, version=0)

    entities: dict[EntityRef, DesiredEntity] = {}
    default = EntityRef("brokers", DEFAULT_ENTITY)
    entities[default] = DesiredEntity(
        default, frozen_map({"log.retention.ms": DesiredValue("604800000", src)}), src
    )
    live_entities[default] = LiveEntity(default, {"log.retention.ms": "604800000", "num.io.threads": "8"}, 5)
    for b in BROKERS:
        ref = EntityRef("brokers", str(b))
        entities[ref] = DesiredEntity(ref, frozen_map({"log.cleaner.threads": DesiredValue("2", src)}), src)
        live_entities[ref] = LiveEntity(ref, {"log.cleaner.threads": "1"}, 2)
    for i in range(500):
        ref = EntityRef("clients", f"app-{i}")
        entities[ref] = DesiredEntity(
            ref, frozen_map({"producer_byte_rate": DesiredValue("1048576", src)}), src
        )
        live_entities[ref] = LiveEntity(ref, {"producer_byte_rate": "1048576" if i % 2 else "2097152"}, 1)

    cluster = ClusterSpec("big", "3.6", ZooKeeperSpec("zk:2181/big"), BROKERS)
    desired = DesiredState(cluster, frozen_map(entities), frozen_map(topics))
    live = LiveState(
        "big",
        {
            b: BrokerRegistration(b, (f"PLAINTEXT://b{b}:9092",), {"PLAINTEXT": "PLAINTEXT"}, f"r{b % 3}")
            for b in BROKERS
        },
        live_topics,
        live_entities,
    )
    return desired, live


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    catalog = load_catalog()
    desired, live = states(args.topics)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        plan, diags = build_plan(desired, live, catalog=catalog)
        times.append(time.perf_counter() - start)
    counts = plan.counts
    print(
        f"diff of {args.topics} topics: median {statistics.median(times) * 1000:.1f} ms over {args.runs} "
        f"runs (min {min(times) * 1000:.1f} ms); plan: {counts.add} add, {counts.change} change, "
        f"{counts.remove} remove, "
        f"{counts.topics_created} topics created, {counts.partitions_added} partitions added, "
        f"{len(plan.unmanaged)} unmanaged, {plan.ignored} ignored, {len(diags)} diagnostics"
    )


if __name__ == "__main__":
    main()
