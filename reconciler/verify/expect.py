"""What the brokers must report once a plan is applied: one `Expectation` per broker (or topic, or quota
entity) and key, in the terms of Kafka's DescribeConfigs / DescribeTopics / DescribeClientQuotas answers.

The config sources are those of Kafka's `DescribeConfigsResponse.ConfigSource`: a `<default>` key is
reported by every broker with source DYNAMIC_DEFAULT_BROKER_CONFIG, a per-broker key by that broker with
DYNAMIC_BROKER_CONFIG, a topic override with DYNAMIC_TOPIC_CONFIG (`ConfigHelper.describeConfigs`,
`DynamicBrokerConfig`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.catalog import SCRAM_KEYS
from reconciler.model import DEFAULT_ENTITY, EntityRef
from reconciler.plan import Plan

Kind = Literal["broker", "topic", "quota", "layout", "acl", "scram", "resource", "feature"]
PRESENT = "present"  # an ACL entry's expected value: DescribeAcls reports it

DYNAMIC_DEFAULT_BROKER = "DYNAMIC_DEFAULT_BROKER_CONFIG"
DYNAMIC_BROKER = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_TOPIC = "DYNAMIC_TOPIC_CONFIG"
SENSITIVE = "(sensitive)"  # the expected "value" of a password: present, never compared (plans hold none)
PARTITIONS = "partitions"
REPLICATION_FACTOR = "replication.factor"
DELETED = "deleted"  # a topic's layout key: the topic must no longer be reported

# SCRAM credentials in users/<user> (ScramMechanism names): DescribeUserScramCredentials reports each user's
# mechanisms with their iterations (never a key or salt); the expectation's value is the iteration count.

# Config resources of Kafka 4.x (KRaft): our entity type -> (the ConfigResource.Type name, the source a key set
# on one is reported from). DescribeConfigs answers for a group id / subscription name.
RESOURCE_SOURCES = {"groups": ("GROUP", "DYNAMIC_GROUP_CONFIG"),
                    "client-metrics": ("CLIENT_METRICS", "DYNAMIC_CLIENT_METRICS_CONFIG")}

# DescribeClientQuotas' entity types (ClientQuotaEntity.USER, CLIENT_ID, IP) for our config entity types.
QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}


@dataclass(frozen=True, slots=True)
class Expectation:
    """One key that one broker (or the cluster, for topics and quotas) must report after the apply."""

    entity: str  # the plan's entity display name: "brokers/<default>", "topics/orders", "users/alice"
    key: str  # a config key, or `partitions` / `replication.factor` for a topic's layout
    kind: Kind
    target: str  # broker id for "broker"; topic name for "topic"/"layout"; the quota entity's display name
    value: str | None  # canonical value expected (SENSITIVE for a password); None: absent (removed)
    source: str | None = None  # the config source a broker must report it from (broker and topic kinds)
    sensitive: bool = False  # a password: Kafka reports it present (source, sensitive) but never its value


def quota_entity(ref: EntityRef) -> tuple[tuple[str, str | None], ...]:
    """The DescribeClientQuotas entity of a quota config entity (`<default>` is a null name)."""
    def part(kind: str, name: str) -> tuple[str, str | None]:
        return (QUOTA_ENTITY_TYPES[kind], None if name == DEFAULT_ENTITY else name)

    parts = [part(ref.entity_type, ref.name)]
    if ref.client is not None:
        parts.append(part("clients", ref.client))
    return tuple(sorted(parts, key=lambda p: p[0]))


def quota_key(parts: Iterable[tuple[str, str | None]]) -> str:
    """One string per quota entity, as both sides name it: `user=alice,client-id=<default>`."""
    return ",".join(f"{kind}={DEFAULT_ENTITY if name is None else name}" for kind, name in sorted(parts))


def expectations(plan: Plan, brokers: Sequence[int]) -> tuple[Expectation, ...]:
    """Everything `plan` changed, as the brokers `brokers` must report it (one per broker for broker keys)."""
    out: list[Expectation] = []
    for entity in plan.entities:
        ref = entity.ref
        for change in entity.changes:
            removed = change.op == "-" or entity.delete_entity
            value = None if removed else (SENSITIVE if change.sensitive else change.after)
            if ref.entity_type == "brokers":
                targets: Iterable[int] = brokers if ref.name == DEFAULT_ENTITY else (int(ref.name),)
                source = DYNAMIC_DEFAULT_BROKER if ref.name == DEFAULT_ENTITY else DYNAMIC_BROKER
                out.extend(Expectation(ref.display, change.key, "broker", str(b), value, source, change.sensitive)
                           for b in targets)
            elif ref.entity_type == "topics":
                out.append(Expectation(ref.display, change.key, "topic", ref.name, value, DYNAMIC_TOPIC,
                                       change.sensitive))
            elif ref.entity_type in RESOURCE_SOURCES:  # a group's config, a client-metrics subscription
                out.append(Expectation(ref.display, change.key, "resource", ref.display, value,
                                       RESOURCE_SOURCES[ref.entity_type][1]))
            elif ref.entity_type == "features":  # DescribeFeatures: the finalized level
                out.append(Expectation(ref.display, change.key, "feature", ref.name, value))
            elif ref.entity_type == "users" and ref.client is None and change.key in SCRAM_KEYS:
                iterations = None if removed or change.iterations is None else str(change.iterations)
                out.append(Expectation(ref.display, change.key, "scram", ref.name, iterations))
            else:
                out.append(Expectation(ref.display, change.key, "quota", quota_key(quota_entity(ref)), value))
    for topic in plan.topics_to_create:
        display = f"topics/{topic.name}"
        out.append(Expectation(display, PARTITIONS, "layout", topic.name, str(topic.partitions)))
        out.append(Expectation(display, REPLICATION_FACTOR, "layout", topic.name, str(topic.replication_factor)))
        out.extend(Expectation(display, key, "topic", topic.name, value, DYNAMIC_TOPIC)
                   for key, value in sorted(topic.config.items()))
    for gone in plan.topics_to_delete:
        out.append(Expectation(f"topics/{gone.name}", DELETED, "layout", gone.name, None))
    for grow in plan.partition_increases:
        out.append(Expectation(f"topics/{grow.name}", PARTITIONS, "layout", grow.name, str(grow.target)))
    for acl in plan.acls:  # each entry added reported by DescribeAcls, each removed no longer (key: the entry)
        display, target = f"acl {acl.resource.display}", acl.resource.display
        out.extend(Expectation(display, e.display, "acl", target, PRESENT) for e in acl.add)
        out.extend(Expectation(display, e.display, "acl", target, None) for e in acl.remove)
    return tuple(out)
