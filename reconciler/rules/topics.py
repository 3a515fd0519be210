"""Topic names, partition counts and replication factors; broker ids referenced by manifests."""

from __future__ import annotations

import re

from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, SecretRef

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
                f"replicationFactor {rf} is larger than the cluster's {brokers} broker(s) (spec.brokers)",
                topic.rf_source or topic.source, "replicationFactor",
            ))
        isr = topic.config.get("min.insync.replicas")
        isr_value = isr.value if isr is not None and not isinstance(isr.value, SecretRef) else ""
        if rf is not None and isr is not None and isr_value.isdigit() and int(isr_value) > rf:
            diags.append(Diagnostic(
                "warning",
                f"min.insync.replicas {isr_value} is above the replication factor {rf}: producers with "
                "acks=all will always fail for this topic",
                isr.source, "min.insync.replicas",
            ))
    return diags


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
