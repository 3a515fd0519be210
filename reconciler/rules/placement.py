"""Replica placement as declared (spec.placement, a topic's `replicas:`), checked offline as Kafka checks a
reassignment or an explicit assignment, each problem at its manifest line:

* a topic's `replicas:` as Kafka's `AdminZkClient.validateTopicCreate` checks an assignment and
  `ReassignPartitionsCommand.parseExecuteAssignmentArgs` a reassignment JSON: partitions a consecutive 0-based
  sequence ("partitions should be a consecutive 0-based integer sequence"), every list as long as the others
  ("All partitions should have the same number of replicas"), no broker twice in a list ("Partition replica
  lists may not contain duplicate entries"), every broker a broker of the cluster (`verifyBrokerIds`: "Unknown
  broker id"), and as many partitions and replicas as `partitions:` and `replicationFactor:` say;
* spec.placement.drain: brokers of the cluster, not all of them, and no declared replica on one;
* a replication factor the brokers left after a drain can hold ("Replication factor: R larger than available
  brokers: N.", `AdminUtils.assignReplicasToBrokers`).
"""

from __future__ import annotations

from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredTopic


def check_placement(state: DesiredState) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    cluster = state.cluster
    known = set(cluster.brokers)
    drain = set(cluster.placement.drain)
    where = cluster.placement.drain_source or cluster.source
    for b in sorted(drain - known):
        diags.append(Diagnostic("error", f"spec.placement.drain names broker {b}, which is not one of this "
                                f"cluster's brokers ({', '.join(map(str, cluster.brokers))})", where, "drain"))
    usable = len(known - drain)
    if drain and not usable:
        diags.append(Diagnostic("error", "spec.placement.drain names every broker: replicas need somewhere to go",
                                where, "drain"))
    for topic in state.topics.values():
        if topic.replicas is not None:
            diags.extend(_replicas(topic, known, drain))
        elif drain and usable and topic.replication_factor is not None and topic.replication_factor > usable:
            diags.append(Diagnostic(
                "error", f"topic {topic.name}: Replication factor: {topic.replication_factor} larger than available "
                f"brokers: {usable}. (spec.placement.drain leaves {usable} of {len(known)})",
                topic.rf_source or topic.source, "replicationFactor"))
    return diags


def _replicas(topic: DesiredTopic, known: set[int], drain: set[int]) -> list[Diagnostic]:
    assert topic.replicas is not None
    out: list[Diagnostic] = []
    where = topic.replicas_source or topic.source

    def problem(text: str, key: str = "replicas") -> None:
        out.append(Diagnostic("error", f"topic {topic.name}: {text}", where, key))

    partitions = sorted(topic.replicas)
    if partitions != list(range(len(partitions))):
        problem("replicas: partitions should be a consecutive 0-based integer sequence "
                f"(found {', '.join(map(str, partitions))})")
    lengths = {len(r) for r in topic.replicas.values()}
    if len(lengths) > 1:
        problem("replicas: All partitions should have the same number of replicas")
    for p, replicas in sorted(topic.replicas.items()):
        twice = sorted({b for b in replicas if replicas.count(b) > 1})
        if twice:
            problem(f"replicas: Partition replica lists may not contain duplicate entries: {topic.name}-{p} contains "
                    f"multiple entries for {','.join(map(str, twice))}")
        for b in sorted(set(replicas) - known):
            problem(f"replicas of partition {p}: Unknown broker id {b} (not in spec.brokers)")
        for b in sorted(set(replicas) & drain):
            problem(f"replicas of partition {p} name broker {b}, which spec.placement.drain drains")
    if topic.partitions is not None and topic.partitions != len(partitions):
        problem(f"replicas declares {len(partitions)} partition(s) but partitions is {topic.partitions}; declare "
                "every partition's replicas", "replicas")
    if topic.replication_factor is not None and lengths and lengths != {topic.replication_factor}:
        problem(f"replicas lists {'/'.join(map(str, sorted(lengths)))} replica(s) per partition but "
                f"replicationFactor is {topic.replication_factor}", "replicas")
    if topic.placement is not None and topic.placement_source is not None and topic.placement != "keep":
        out.append(Diagnostic("warning", f"topic {topic.name}: placement {topic.placement} has no effect: its "
                              "replicas are declared", topic.placement_source, "placement"))
    return out
