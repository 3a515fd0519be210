"""What `risk.annotate` rates changes against: inherited values and replication factors.

Inherited values follow KIP-226 precedence as far as the manifests tell it cheaply: the desired cluster
default (`brokers/<default>`, what apply converges to), then the static server.properties declared in the
manifests, then Kafka's default from the catalog. Per-broker overrides of topic defaults are ignored (a
topic's value would differ per leader); quota entities fall back through Kafka's quota precedence.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.catalog import Catalog
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, LiveState
from reconciler.render.units import parse_number

_DEFAULT_BROKERS = EntityRef("brokers", DEFAULT_ENTITY)


def quota_fallbacks(ref: EntityRef) -> tuple[EntityRef, ...]:
    """More general quota entities, most specific first, whose value applies once `ref` loses a key."""
    d = DEFAULT_ENTITY
    if ref.entity_type == "users" and ref.client is not None:
        user, client = ref.name, ref.client
        chain = [EntityRef("users", user, d), EntityRef("users", user), EntityRef("users", d, client),
                 EntityRef("users", d, d), EntityRef("users", d)]
    elif ref.entity_type in ("clients", "users", "ips"):
        chain = [EntityRef(ref.entity_type, d)]
    else:
        chain = []
    return tuple(r for r in dict.fromkeys(chain) if r != ref)


class RiskContext:
    """Lookups for one plan; the RF histogram is built once, and only if a change needs it."""

    def __init__(self, desired: DesiredState, live: LiveState, catalog: Catalog) -> None:
        self.desired, self.live, self.catalog = desired, live, catalog
        self._histogram: dict[int, int] | None = None

    def _desired(self, ref: EntityRef, key: str) -> str | None:
        entity = self.desired.entities.get(ref)
        value = entity.config.get(key) if entity is not None else None
        return value.value if value is not None and isinstance(value.value, str) else None

    def _static(self, broker: str, key: str) -> str | None:
        for name in (broker, "default") if broker == DEFAULT_ENTITY else (broker,):
            value = self.desired.static.get(name, {}).get(key)
            if value is not None and isinstance(value.value, str):
                return value.value
        return None

    def _scaled(self, key: str, value: str | None) -> str | None:
        """`log.retention.hours=168` -> `604800000`: hour/minute synonyms in the ms unit of their group."""
        base = self.catalog.broker(key)
        factor = base.synonym_factor if base is not None else 1
        number = parse_number(value)
        if factor == 1 or number is None or not number.is_integer():
            return value
        return str(int(number) * factor)

    def _broker_keys(self, key: str) -> tuple[list[str], str | None]:
        """Keys to look for (a listener-prefixed key first, then its base's synonym group) and the default."""
        info = self.catalog.resolve_broker(key)
        if info.base is None:
            quota = self.catalog.quota("brokers", key)  # replication throttles
            return [key], quota.default if quota is not None else None
        group = list(info.base.synonyms or (info.base.name,))
        defaults = ((s, k.default) for s in group if (k := self.catalog.broker(s)) is not None and k.default)
        return list(dict.fromkeys([key, *group])), next((self._scaled(s, d) for s, d in defaults), None)

    def inherited(self, ref: EntityRef, key: str) -> str | None:
        """The value `key` has on `ref` when the entity does not set it, once the plan is applied."""
        levels: list[tuple[EntityRef | None, str]]
        if ref.entity_type == "topics":
            topic = self.catalog.topic(key)
            if topic is None:
                return None
            levels = [(_DEFAULT_BROKERS, ""), (None, DEFAULT_ENTITY)]
            keys, default = list(topic.synonyms), topic.default
        elif ref.entity_type == "brokers":
            levels = [(None, DEFAULT_ENTITY)]
            if ref.name != DEFAULT_ENTITY:
                levels = [(_DEFAULT_BROKERS, ""), (None, ref.name), *levels]
            keys, default = self._broker_keys(key)
        else:
            for fallback in quota_fallbacks(ref):
                if (value := self._desired(fallback, key)) is not None:
                    return value
            quota = self.catalog.quota(ref.quota_kind, key)
            return quota.default if quota is not None else None
        for entity, broker in levels:
            for k in keys:
                value = self._desired(entity, k) if entity is not None else self._static(broker, k)
                if value is not None:
                    return self._scaled(k, value)
        return default

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
