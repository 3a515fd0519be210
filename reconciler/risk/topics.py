"""Risk of a topic a plan creates: durability, decided by a table of rules (PURE).

A new topic loses nothing by being created, so for long it was rated safe; but what it is created with decides
what its producers may lose later. Kafka keeps a record on `replication.factor` brokers and with one replica
the loss of that broker's disk loses every record the topic holds, the more the longer its retention. (A
`min.insync.replicas` above the replication factor is validation's warning, said once: rules/topics.py.) The rules
read the topic's effective values once created (its own, else the brokers' default: `RiskContext.inherited`), and
hold whether or not a policy judges the topic: a policy is the team's rule, this is the plan's own rating.

`TOPIC_RULES` is data, as `risk.RISK_RULES` and `risk.acls.ACL_RULES`: the impact job reads the same table
(`created_topic_rules`) to rate the topics a change creates across the fleet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from reconciler.model import RISK_ORDER, Risk
from reconciler.plan import TopicCreate
from reconciler.units import parse_number, short

LONG_RETENTION_MS = 7 * 86_400_000  # a single replica holding a week of records or more: the reason says how much


@dataclass(frozen=True, slots=True)
class NewTopic:
    """What the rules read of a topic to create: its replication factor, the cluster's broker count and its
    effective retention.ms (its own, else inherited)."""

    replication_factor: int
    brokers: int
    retention_ms: str | None


@dataclass(frozen=True, slots=True)
class TopicRule:
    id: str
    risk: Risk
    matches: Callable[[NewTopic], bool]
    reason: Callable[[NewTopic], str]


def _retention(t: NewTopic) -> str:
    ms = parse_number(t.retention_ms)
    if ms is not None and (ms < 0 or ms >= LONG_RETENTION_MS):
        return f" ({short('retention.ms', t.retention_ms)} of them on one disk)"
    return ""


def _single(t: NewTopic) -> bool:
    return t.replication_factor == 1 and t.brokers > 1


TOPIC_RULES: tuple[TopicRule, ...] = (
    TopicRule("new-topic-single-replica", "disruptive", _single,
              lambda t: f"durability: created with a single replica on a {t.brokers}-broker cluster: the loss of "
                        f"that broker's disk loses the topic's records{_retention(t)}"),
)


def created_topic_rules(topic: NewTopic) -> tuple[TopicRule, ...]:
    """The rules a new topic fires, most severe first (table order within a risk)."""
    fired = [rule for rule in TOPIC_RULES if rule.matches(topic)]
    return tuple(sorted(fired, key=lambda r: -RISK_ORDER[r.risk]))


def rate_created_topic(created: TopicCreate, topic: NewTopic) -> TopicCreate:
    """`created` with its durability rated."""
    fired = created_topic_rules(topic)
    risk: Risk = fired[0].risk if fired else "safe"
    reasons = tuple(rule.reason(topic) for rule in fired)
    if (risk, reasons) == (created.risk, created.reasons):
        return created
    return replace(created, risk=risk, reasons=reasons)
