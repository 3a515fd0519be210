"""Policies as the evaluator reads them: a selector, rules, exceptions, each with where it is written (PURE).

Bounds are numbers in the key's own unit (`retention.ms` in ms, `*.bytes` in bytes); a manifest may write them in
the human forms `units.humanize` prints (`7d`, `12h`, `1 GiB`): `parse_bound` reads them back. A rule has exactly
one check (the schema enforces it); `check` names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from reconciler.model import SourceRef, frozen_map
from reconciler.units import DURATION_MS, SIZE_BYTES

Severity = Literal["error", "warning"]
Check = Literal["bounds", "allowed", "forbidden", "required", "namePattern", "maxCount", "maxDecrease",
                "maxUnreadLoss"]
# Entity kinds a selector may name: the dynamic config entity types of Kafka's ConfigType (ZooKeeper mode)
KINDS = ("topics", "brokers", "users", "clients", "ips")
# Topic settings that are not configs (the assignment's partition count and replica count)
TOPIC_SETTINGS = ("partitions", "replicationFactor")

_BOUND = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def parse_bound(raw: object) -> float:
    """A bound as a number: `3`, `0.5`, `7d`, `500ms`, `1 GiB`, `512MiB`. ValueError with the reason otherwise."""
    if isinstance(raw, bool):
        raise ValueError("a bound is a number or a duration/size such as 7d or 1 GiB, not a boolean")
    if isinstance(raw, int | float):
        return float(raw)
    match = _BOUND.fullmatch(str(raw)) if len(str(raw)) <= 40 else None
    if match is None:
        raise ValueError(f"{str(raw)[:40]!r} is not a number, a duration (7d, 12h, 30m, 10s, 500ms) or a size "
                         "(1 GiB, 512 MiB, 100 KiB)")
    number, unit = float(match.group(1)), match.group(2).lower()
    if not unit:
        return number
    factor = DURATION_MS.get(unit) or SIZE_BYTES.get(unit)
    if factor is None:
        raise ValueError(f"unknown unit {match.group(2)!r} in {str(raw)!r} (durations: ms, s, m, h, d, w; sizes: "
                         "B, KiB, MiB, GiB, TiB)")
    return number * factor


@dataclass(frozen=True, slots=True)
class Selector:
    """Which clusters and entities a policy judges. Empty fields select everything (kinds: topics)."""

    labels: Mapping[str, str] = field(default_factory=frozen_map)  # the Cluster's meta.labels, all must match
    clusters: tuple[str, ...] = ()  # cluster names or shell patterns (fnmatch)
    kinds: tuple[str, ...] = ("topics",)
    names: tuple[str, ...] = ()  # anchored regular expressions over entity names (topic, broker id, user…)
    source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    check: Check
    severity: Severity
    message: str
    source: SourceRef
    docs: str | None = None
    key: str | None = None  # the config key (or partitions / replicationFactor) a value check reads
    minimum: float | None = None
    maximum: float | None = None
    bounds_text: str = ""  # the bounds as written, for messages ("between 1d and 30d")
    values: tuple[str, ...] = ()  # allowed / forbidden values, or required keys
    pattern: str | None = None  # namePattern: an anchored regular expression
    limit: float | None = None  # maxCount: entities; maxDecrease: the factor; maxUnreadLoss: records


@dataclass(frozen=True, slots=True)
class PolicyException:
    """A named entity the policy does not judge until `expires` (a date, inclusive), with why."""

    entity: str  # `topics/orders`, `brokers/<default>`, `users/alice`
    reason: str
    expires: date
    source: SourceRef
    rules: tuple[str, ...] = ()  # rule ids; empty: every rule of the policy
    clusters: tuple[str, ...] = ()  # cluster names or patterns; empty: every cluster the policy selects


@dataclass(frozen=True, slots=True)
class PolicyDoc:
    name: str
    selector: Selector
    rules: tuple[Rule, ...]
    exceptions: tuple[PolicyException, ...]
    source: SourceRef
    cluster: str | None = None  # written in a cluster's directory: judges that cluster only


@dataclass(frozen=True, slots=True)
class PolicySet:
    """Every policy of one revision of the repository."""

    policies: tuple[PolicyDoc, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.policies)

    def by_name(self) -> dict[str, PolicyDoc]:
        return {p.name: p for p in self.policies}


def canonical_value(raw: object) -> str:
    """A value as the evaluator compares it: YAML booleans as Kafka writes them (`false`), numbers as text."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw).strip()
