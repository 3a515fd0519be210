"""Topic names, partition counts and replication factors; broker ids referenced by manifests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reconciler.assignment import broker_default
from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredTopic, SecretRef, SourceRef
from reconciler.rules.limits import Limits
from reconciler.units import parse_int
from reconciler.values import shown

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


def topic_name_problem(name: str) -> str | None:
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is {len(name)} characters long; Kafka allows at most {MAX_TOPIC_NAME}"
    if not TOPIC_NAME.match(name):
        bad = sorted({c for c in name if not re.match(r"[a-zA-Z0-9._-]", c)})
        return f"topic name contains {''.join(bad)!r}; Kafka allows only ASCII letters, digits, '.', '_' and '-'"
    return None


def check_topics(state: DesiredState) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    brokers = len(state.cluster.brokers)
    collisions: dict[str, str] = {}
    for topic in state.topics.values():
        problem = topic_name_problem(topic.name)
        if problem:
            diags.append(Diagnostic("error", problem, topic.source, topic.name))
            continue
        folded = topic.name.replace(".", "_")
        if folded in collisions and collisions[folded] != topic.name:
            diags.append(Diagnostic(
                "error",
                f"topic '{topic.name}' collides with '{collisions[folded]}': Kafka's metric names treat '.' and "
                "'_' alike, so it refuses such pairs",
                topic.source, topic.name,
            ))
        collisions.setdefault(folded, topic.name)
        if topic.partitions is not None and topic.partitions < 1:
            diags.append(Diagnostic("error", "partitions must be at least 1", topic.partitions_source or topic.source,
                                    "partitions"))
        rf = topic.replication_factor
        if rf is not None and rf < 1:
            diags.append(Diagnostic("error", "replicationFactor must be at least 1", topic.rf_source or topic.source,
                                    "replicationFactor"))
        elif rf is not None and rf > brokers:
            diags.append(Diagnostic(
                "error",
                f"replicationFactor {shown(str(rf))} is larger than the cluster's {brokers} broker(s) (spec.brokers)",
                topic.rf_source or topic.source, "replicationFactor",
            ))
        isr = topic.config.get("min.insync.replicas")
        isr_value = isr.value if isr is not None and not isinstance(isr.value, SecretRef) else ""
        wanted = parse_int(isr_value, 32)
        if rf is not None and isr is not None and wanted is not None and wanted > rf:
            diags.append(Diagnostic("warning", min_isr_above_rf(topic.name, isr_value, rf), isr.source,
                                    "min.insync.replicas"))
    return diags


def min_isr_above_rf(topic: str, wanted: str, rf: int) -> str:
    """The one wording of a topic's min.insync.replicas above its replication factor (validate judges a declared
    replication factor, plan the live one: rules/live.py), so a plan never says it twice in two ways."""
    return (f"topic {topic}: min.insync.replicas={wanted} is above its replication factor {rf}; producers with "
            f"acks=all will fail with NotEnoughReplicas. Set it to at most {rf} (usually {max(1, rf - 1)})")


def check_broker_ids(state: DesiredState) -> list[Diagnostic]:
    known = set(state.cluster.brokers)
    listed = ", ".join(str(b) for b in state.cluster.brokers)
    diags: list[Diagnostic] = []
    for ref, entity in state.entities.items():
        if ref.entity_type == "brokers" and ref.name != DEFAULT_ENTITY and int(ref.name) not in known:
            diags.append(Diagnostic(
                "error",
                f"broker {ref.name} is not one of this cluster's brokers ({listed}); add it to the Cluster's "
                "spec.brokers or fix the id",
                entity.source, "broker",
            ))
    return diags


@dataclass(frozen=True, slots=True)
class PartitionCount:
    """What a cluster's topics ask for once created: partitions, and partitions x replication factor."""

    partitions: int = 0
    replicas: int = 0
    largest: SourceRef | None = None  # the `partitions:` line of the topic with the most partitions


def _count_source(topic: DesiredTopic, default: SourceRef | None) -> SourceRef | None:
    if topic.partitions is not None:
        return topic.partitions_source or topic.source
    return default or topic.source


def check_partitions(state: DesiredState, catalog: Catalog, limits: Limits) -> tuple[list[Diagnostic], PartitionCount]:
    """The operator's bounds on partitions (rules/limits.py): per topic, and per cluster in partitions and in
    replicas, over the counts each topic would be created with (its own, else the brokers' `num.partitions`
    and `default.replication.factor`, exactly what the plan uses). Checked offline, in validation, so a plan
    never allocates an assignment for counts beyond them. Topics already refused (a count below 1, a
    replication factor above the brokers) are left to those rules and not counted."""
    default_p, default_p_source = broker_default(state, catalog, "num.partitions")
    default_rf, _ = broker_default(state, catalog, "default.replication.factor")
    uncounted = any(t.partitions is None for t in state.topics.values())
    if default_p > limits.topic_partitions and default_p_source is not None and uncounted:
        return [Diagnostic(
            "error",
            f"num.partitions {shown(str(default_p))}: topics that do not set partitions would be created with more "
            f"partitions than {limits.setting('topic_partitions')} ({limits.topic_partitions:,}) allows for one "
            "topic; set partitions on those topics, or ask the operator to raise the setting",
            default_p_source, "num.partitions",
        )], PartitionCount()
    tally = _Tally(limits, len(state.cluster.brokers))
    for topic in state.topics.values():
        count = topic.partitions if topic.partitions is not None else default_p
        rf = topic.replication_factor if topic.replication_factor is not None else default_rf
        tally.add(topic, count, rf, _count_source(topic, default_p_source))
    return tally.diags, PartitionCount(tally.partitions, tally.replicas, tally.largest_source)


@dataclass(slots=True)
class _Tally:
    """`check_partitions`' running totals over one cluster's topics; each bound is reported once, where crossed."""

    limits: Limits
    brokers: int
    partitions: int = 0
    replicas: int = 0
    largest: int = 0
    largest_source: SourceRef | None = None
    diags: list[Diagnostic] = field(default_factory=list)

    def add(self, topic: DesiredTopic, count: int, rf: int, source: SourceRef | None) -> None:
        limits = self.limits
        if count > limits.topic_partitions:
            self.diags.append(Diagnostic(
                "error",
                f"partitions {shown(str(count))} is more than {limits.setting('topic_partitions')} "
                f"({limits.topic_partitions:,}) allows for one topic; Kafka sets no limit, but every partition is "
                "placed and planned one by one. Use fewer partitions, or ask the operator to raise the setting",
                source, "partitions",
            ))
            return
        if count < 1 or rf < 1 or (self.brokers and rf > self.brokers):
            return
        before = (self.partitions, self.replicas)
        self.partitions += count
        self.replicas += count * rf
        if count > self.largest:
            self.largest, self.largest_source = count, source
        if before[0] <= limits.cluster_partitions < self.partitions:
            self.diags.append(Diagnostic(
                "error",
                f"with topic {topic.name}, this cluster's topics declare more than "
                f"{limits.setting('cluster_partitions')} ({limits.cluster_partitions:,}) partitions in all; split "
                "them over clusters, or ask the operator to raise the setting",
                source, "partitions",
            ))
        if before[1] <= limits.cluster_replicas < self.replicas:
            self.diags.append(Diagnostic(
                "error",
                f"with topic {topic.name}, this cluster's topics declare more than "
                f"{limits.setting('cluster_replicas')} ({limits.cluster_replicas:,}) partition replicas in all "
                "(partitions x replication factor); lower them, or ask the operator to raise the setting",
                topic.rf_source or source,
                "replicationFactor" if topic.replication_factor is not None else "partitions",
            ))


def check_loaded_partitions(counts: dict[str, PartitionCount], limits: Limits) -> list[Diagnostic]:
    """The bound on the partitions of every cluster one command loads, crossed at the first cluster (by name)
    that takes the total past it: reported at that cluster's largest topic."""
    total = 0
    for name in sorted(counts):
        total += counts[name].partitions
        if total > limits.partitions:
            return [Diagnostic(
                "error",
                f"the clusters loaded together declare more than {limits.setting('partitions')} "
                f"({limits.partitions:,}) partitions, reached with cluster {name} (its largest topic is here); "
                "plan fewer clusters at once, or ask the operator to raise the setting",
                counts[name].largest, "partitions",
            )]
    return []
