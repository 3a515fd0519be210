"""What `risk.annotate` rates changes against: inherited values and replication factors.

Inherited values are `effective.resolve` over the manifests alone (`DesiredLayers`), leaving out the
entity's own layer: the desired cluster default (`brokers/<default>`, what apply converges to), then the
static server.properties declared in the manifests, then Kafka's default, with Kafka's synonyms. Per-broker
overrides of topic defaults are ignored (a topic's value would differ per leader); quota entities fall back
through Kafka's quota precedence.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.catalog import Catalog
from reconciler.effective import DesiredLayers, quota_fallbacks, resolve
from reconciler.model import DesiredState, EntityRef, LiveState

__all__ = ["RiskContext", "quota_fallbacks"]


class RiskContext:
    """Lookups for one plan; the RF histogram is built once, and only if a change needs it."""

    def __init__(self, desired: DesiredState, live: LiveState, catalog: Catalog) -> None:
        self.desired, self.live, self.catalog = desired, live, catalog
        self._histogram: dict[int, int] | None = None
        self._layers = DesiredLayers(desired)
        self._policies: dict[tuple[str | None], frozenset[str]] = {}  # by `_own_policy`: 1,000 topics, few values

    def inherited(self, ref: EntityRef, key: str) -> str | None:
        """The value `key` has on `ref` when the entity does not set it, once the plan is applied."""
        return resolve(self._layers, self.catalog, ref, key, inherited=True).value

    def cleanup_policy(self, ref: EntityRef) -> frozenset[str]:
        """The topic's effective cleanup.policy once the plan is applied (its own value, else the cluster's
        log.cleanup.policy, else Kafka's `delete`), as a set of policies."""
        memo = self._own_policy(ref)
        if memo is not None and (found := self._policies.get(memo)) is not None:
            return found
        value = resolve(self._layers, self.catalog, ref, "cleanup.policy").value or "delete"
        policies = frozenset(p.strip().lower() for p in value.split(",") if p.strip())
        if memo is not None:
            self._policies[memo] = policies
        return policies

    def _own_policy(self, ref: EntityRef) -> tuple[str | None] | None:
        """What a topic's cleanup.policy depends on besides the cluster's layers (the same for the whole
        plan): its own declared value, (None,) when it inherits. None: not memoised (not a topic, a secret)."""
        if ref.entity_type != "topics":
            return None
        topic = self.desired.topics.get(ref.name)
        own = topic.config.get("cleanup.policy") if topic is not None else None
        if own is None:
            return (None,)
        return (own.value,) if isinstance(own.value, str) else None

    def topic_rf(self, name: str) -> int | None:
        topic = self.desired.topics.get(name)
        if topic is not None and topic.replication_factor is not None:
            return topic.replication_factor
        live = self.live.topics.get(name)
        return live.replication_factor if live is not None and live.assignment else None

    def rf_histogram(self) -> Mapping[int, int]:
        """RF -> number of topics without their own min.insync.replicas (they inherit the broker value)."""
        if self._histogram is None:
            counts: dict[int, int] = {}
            for name in set(self.live.topics) | set(self.desired.topics):
                declared = self.desired.topics.get(name)
                live = self.live.entities.get(EntityRef("topics", name))
                config = declared.config if declared is not None else live.config if live is not None else {}
                rf = self.topic_rf(name)
                if rf and "min.insync.replicas" not in config:
                    counts[rf] = counts.get(rf, 0) + 1
            self._histogram = dict(sorted(counts.items()))
        return self._histogram
