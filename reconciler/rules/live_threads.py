"""Thread-pool steps against each registered broker's current effective value (ground truth §3.3).

Kafka accepts a new thread count only between half (integer division) and double the current value and
otherwise rejects the whole dynamic update of that broker, logging only. The current value is the effective
one (per-broker dynamic > `<default>` dynamic > static server.properties > Kafka default); a listener's
`listener.name.<l>.num.network.threads` falls back to `num.network.threads`. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, LiveState, SourceRef
from reconciler.units import parse_int

THREAD_POOL_KEYS = (
    "background.threads",
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
)
CLEANER_KEY = "log.cleaner.threads"
# Kafka 3.9 defaults, used only if the catalog lacks one.
FALLBACK_DEFAULTS = {
    "background.threads": 10,
    "num.io.threads": 8,
    "num.network.threads": 3,
    "num.recovery.threads.per.data.dir": 1,
    "num.replica.fetchers": 1,
    CLEANER_KEY: 1,
}
_LISTENER_THREADS = re.compile(r"listener\.name\.[^.]*\.num\.network\.threads")


@dataclass(frozen=True, slots=True)
class _Value:
    text: str
    source: SourceRef | None = None


Layer = Mapping[str, _Value]


def step_problem(key: str, current: int, new: int) -> str | None:
    """Kafka's own message when `new` is not an acceptable single step from `current`."""
    if new == current:
        return None
    if key == CLEANER_KEY:
        if new < 1:
            return "Log cleaner threads should be at least 1"
        if new < current // 2:
            return f"Log cleaner threads cannot be reduced to less than half the current value {current}"
        if new > current * 2:
            return f"Log cleaner threads cannot be increased to more than double the current value {current}"
        return None
    prefix = f"Dynamic thread count update validation failed for {key}={new}"
    if new <= 0:
        return f"{prefix}, value should be at least 1"
    if new < current // 2:
        return f"{prefix}, value should be at least half the current value {current}"
    if new > current * 2:
        return f"{prefix}, value should not be greater than double the current value {current}"
    return None


def steps(current: int, target: int) -> list[int]:
    """The shortest chain of accepted updates from `current` to `target` (both >= 1)."""
    chain = [current]
    while chain[-1] != target:
        v = chain[-1]
        chain.append(min(target, v * 2) if target > v else max(target, v // 2, 1))
    return chain


def _advice(current: int, new: int) -> str:
    if new < 1:
        return "use a value of at least 1"
    if current < 1:
        return "it cannot be raised from 0 dynamically: set it in server.properties and restart the broker(s)"
    chain = " → ".join(str(v) for v in steps(current, new))
    verb = "raise" if new > current else "lower"
    return f"{verb} it in steps: {chain}, applying each step (plan, apply) before the next"


class _Layers:
    """Config layers per broker, before (live) and after (desired) the plan."""

    def __init__(self, desired: DesiredState, live: LiveState) -> None:
        self.desired, self.live = desired, live
        self.ignore = frozenset(desired.cluster.policy.ignore_keys)

    def live_layer(self, name: str) -> Layer:
        entity = self.live.entities.get(EntityRef("brokers", name))
        if entity is None or entity.version is None:
            return {}
        return {k: _Value(v) for k, v in entity.config.items()}

    def after_layer(self, name: str) -> Layer:
        ref = EntityRef("brokers", name)
        entity = self.desired.entities.get(ref)
        before = self.live_layer(name)
        if entity is None and not self.desired.cluster.policy.prune:
            return before  # undeclared entities are never touched
        kept = {k: v for k, v in before.items() if k in self.ignore}
        if entity is not None:
            kept.update(
                (k, _Value(dv.value, dv.source))
                for k, dv in entity.config.items()
                if isinstance(dv.value, str) and k not in self.ignore
            )
        return kept

    def static_layer(self, name: str) -> Layer:
        names = (DEFAULT_ENTITY, "default") if name == DEFAULT_ENTITY else (name,)
        for n in names:
            props = self.desired.static.get(n)
            if props:
                return {k: _Value(v.value, v.source) for k, v in props.items() if isinstance(v.value, str)}
        return {}

    def entity_source(self, name: str) -> SourceRef | None:
        entity = self.desired.entities.get(EntityRef("brokers", name))
        return entity.source if entity is not None else self.desired.cluster.source


def _lookup(key: str, base: str, layers: Sequence[Layer], default: int) -> tuple[int, _Value]:
    """(index of the layer that decides, value); a listener-prefixed key in any layer beats the base key."""
    for name in dict.fromkeys((key, base)):
        for i, layer in enumerate(layers):
            if name in layer:
                return i, layer[name]
    return len(layers), _Value(str(default))


def check_thread_pools(desired: DesiredState, live: LiveState, catalog: Catalog) -> Iterator[Diagnostic]:
    layers = _Layers(desired, live)
    default_live, default_after = layers.live_layer(DEFAULT_ENTITY), layers.after_layer(DEFAULT_ENTITY)
    default_static = layers.static_layer(DEFAULT_ENTITY)
    per_broker = {
        b: (layers.live_layer(str(b)), layers.after_layer(str(b)), layers.static_layer(str(b)))
        for b in sorted(live.brokers)
    }
    every = [default_live, default_after, default_static, *(x for t in per_broker.values() for x in t)]
    listener_keys = sorted({k for layer in every for k in layer if _LISTENER_THREADS.fullmatch(k)})
    keys = [*THREAD_POOL_KEYS, CLEANER_KEY, *listener_keys]
    version = desired.cluster.kafka_version
    defaults = {k: _catalog_default(catalog, version, k) for k in (*THREAD_POOL_KEYS, CLEANER_KEY)}

    found: dict[tuple[str, int, int, str, SourceRef | None], list[int]] = {}
    for broker, (b_live, b_after, b_static) in per_broker.items():
        before = [b_live, default_live, b_static, default_static]
        after = [b_after, default_after, b_static, default_static]
        for key in keys:
            base = "num.network.threads" if key in listener_keys else key
            _, old = _lookup(key, base, before, defaults[base])
            where, new = _lookup(key, base, after, defaults[base])
            current, target = parse_int(old.text, 32), parse_int(new.text, 32)
            if current is None or target is None:
                continue  # not a number: the offline type rules report it
            problem = step_problem(key, current, target)
            if problem is None:
                continue
            source = new.source if where < 2 else None  # set by a manifest (dynamic layers only)
            if source is None:  # the value was removed: point at the entity that removes it
                owner = str(broker) if key in b_live or base in b_live else DEFAULT_ENTITY
                source = layers.entity_source(owner)
            found.setdefault((key, current, target, problem, source), []).append(broker)

    for (key, current, target, problem, source), brokers in found.items():
        which = f"broker {brokers[0]}" if len(brokers) == 1 else "brokers " + ", ".join(map(str, brokers))
        yield Diagnostic(
            "error",
            f"{problem} ({which}; Kafka would reject the whole dynamic update and only log it): "
            f"{_advice(current, target)}",
            source,
            key,
        )


def _catalog_default(catalog: Catalog, version: str, key: str) -> int:
    entry = catalog.broker(key, version)
    if entry is not None and (number := parse_int(entry.default, 32)) is not None:
        return number
    return FALLBACK_DEFAULTS[key]
