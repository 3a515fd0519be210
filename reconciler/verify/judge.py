"""One broker answer against one expectation: taken, not taken (with what the broker reports instead), or
not answered. Mirrors how Kafka builds a DescribeConfigs entry (`ConfigHelper.createBrokerConfigEntry`):
the entry's value is what the broker *runs* (its current KafkaConfig), its synonyms are the stored layers
in precedence order (per-broker, `<default>`, static, default).

Two ways a write is lost inside a broker, both seen on Kafka 3.9:
- a password it cannot decode is dropped ("Dynamic password config … could not be decoded, ignoring",
  `DynamicBrokerConfig.fromPersistentProps`): the key is missing from the synonyms;
- an update it refuses ("Failed to update broker configuration", `DynamicBrokerConfig.processReconfiguration`)
  leaves the synonyms updated but the running config unchanged, for *every* key of that update: the
  entry's value then differs from its first synonym's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.verify.expect import Expectation

Status = Literal["taken", "not_taken", "unreachable"]


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    source: str
    value: str | None  # None for sensitive values


@dataclass(frozen=True, slots=True)
class ReportedConfig:
    """One DescribeConfigs entry as the broker sent it."""

    value: str | None  # what the broker runs (None when sensitive)
    source: str
    sensitive: bool
    synonyms: tuple[Synonym, ...] = ()  # Kafka's precedence order, highest first


@dataclass(frozen=True, slots=True)
class Outcome:
    status: Status
    detail: str = ""  # for not_taken / unreachable: what the broker reports instead, or why no answer


TAKEN = Outcome("taken")


def _same(a: str | None, b: str | None) -> bool:
    """Equal as Kafka values: list entries may be reported with or without blanks after the commas."""
    if a is None or b is None:
        return a is b
    return a == b or [p.strip() for p in a.split(",")] == [p.strip() for p in b.split(",")]


def _shown(value: str | None, sensitive: bool) -> str:
    return "(sensitive)" if sensitive else ("null" if value is None else value)


def judge_config(exp: Expectation, reported: ReportedConfig | None) -> Outcome:
    """A broker or topic config key against what the broker reported for it (None: not reported at all)."""
    layer = None if reported is None else next(
        (s for s in reported.synonyms if s.name == exp.key and s.source == exp.source), None)
    if exp.value is None:
        if layer is not None:
            sensitive = reported.sensitive if reported is not None else False
            return Outcome("not_taken", f"still set from {exp.source} ({_shown(layer.value, sensitive)})")
        if reported is not None and not reported.sensitive and reported.value is not None:
            # the layer in effect: a topic key's synonyms may name only broker keys (KRaft lists
            # `message.max.bytes` DEFAULT_CONFIG for a topic's max.message.bytes), so the first synonym counts
            first = next((s for s in reported.synonyms if s.name == exp.key),
                         reported.synonyms[0] if reported.synonyms else None)
            if first is None or not _same(reported.value, first.value):
                return Outcome("not_taken", f"removed from storage but still in effect: the broker runs "
                                            f"{reported.value} (it refused the dynamic update: see its log)")
        return TAKEN
    if layer is None:
        if exp.sensitive:
            return Outcome("not_taken", f"not held by the broker as {exp.source}: a password the broker cannot "
                                        "decode is dropped (is its password.encoder.secret the cluster's?)")
        if reported is None:
            return Outcome("not_taken", "not reported by the broker")
        return Outcome("not_taken", f"broker reports {_shown(reported.value, reported.sensitive)} "
                                    f"from {reported.source}")
    if not exp.sensitive and not _same(layer.value, exp.value):
        return Outcome("not_taken", f"broker holds {_shown(layer.value, False)} as {exp.source}")
    assert reported is not None
    first = reported.synonyms[0] if reported.synonyms else None
    if (not reported.sensitive and first is not None and first.name == exp.key
            and not _same(reported.value, first.value)):
        return Outcome("not_taken", f"stored but not in effect: the broker runs {_shown(reported.value, False)} "
                                    "(it refused the dynamic update: see its log)")
    return TAKEN


def judge_quota(exp: Expectation, reported: Mapping[str, float] | None) -> Outcome:
    """A quota key against DescribeClientQuotas' values for its entity (None: the entity has none)."""
    value = None if reported is None else reported.get(exp.key)
    if exp.value is None:
        return TAKEN if value is None else Outcome("not_taken", f"still set ({value:g})")
    if value is None:
        return Outcome("not_taken", "not reported by the broker")
    try:
        expected = float(exp.value)
    except ValueError:
        return Outcome("not_taken", f"broker reports {value:g}")
    return TAKEN if value == expected else Outcome("not_taken", f"broker reports {value:g}")


@dataclass(frozen=True, slots=True)
class ReportedLayout:
    partitions: int
    replication_factor: int


def judge_layout(exp: Expectation, reported: ReportedLayout | None) -> Outcome:
    """A created or grown topic's partition count / replication factor against DescribeTopics; a deleted
    topic (value None) must no longer be reported (the controller deletes it asynchronously)."""
    if exp.value is None:
        return TAKEN if reported is None else Outcome("not_taken", "the topic still exists (deletion pending: "
                                                                   "is delete.topic.enable true on the brokers?)")
    if reported is None:
        return Outcome("not_taken", "the topic is not reported by the broker")
    got = reported.partitions if exp.key == "partitions" else reported.replication_factor
    return TAKEN if str(got) == exp.value else Outcome("not_taken", f"broker reports {exp.key} {got}")


def judge_acl(exp: Expectation, reported: Mapping[str, set[str]]) -> Outcome:
    """An ACL entry (`exp.key`) of a resource pattern (`exp.target`) against DescribeAcls: present when added
    (value set), absent when removed (value None)."""
    there = exp.key in reported.get(exp.target, set())
    if exp.value is None:
        return Outcome("not_taken", "the brokers still report it") if there else TAKEN
    return TAKEN if there else Outcome("not_taken", "not reported by DescribeAcls")


def judge_scram(exp: Expectation, reported: Mapping[str, Mapping[str, int]]) -> Outcome:
    """A SCRAM credential (user `exp.target`, mechanism `exp.key`) against DescribeUserScramCredentials: the
    mechanism with the planned iterations when set (value), no such mechanism when removed (value None)."""
    iterations = reported.get(exp.target, {}).get(exp.key)
    if exp.value is None:
        return TAKEN if iterations is None else Outcome("not_taken", "the brokers still report the credential")
    if iterations is None:
        return Outcome("not_taken", "not reported by DescribeUserScramCredentials")
    return TAKEN if str(iterations) == exp.value else Outcome("not_taken", f"brokers report {iterations} iterations")


def worst(outcomes: Sequence[Outcome]) -> Status:
    order = {"taken": 0, "unreachable": 1, "not_taken": 2}
    return max((o.status for o in outcomes), key=order.__getitem__, default="taken")


def judge_feature(exp: Expectation, reported: Mapping[str, int]) -> Outcome:
    """A feature level against DescribeFeatures' finalized levels (a feature not finalized is at 0)."""
    level = reported.get(exp.key, 0)
    return TAKEN if str(level) == exp.value else Outcome("not_taken", f"finalized at {level}")
