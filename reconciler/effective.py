"""The effective value of a config and where it comes from, with Kafka's synonyms list (PURE).

`kafka-configs.sh --describe --all` asks a broker (DescribeConfigs); this answers the same question from
ZooKeeper and the manifests, in the terms of Kafka 3.9's `kafka.server.ConfigHelper`:

* **Precedence** (`DynamicBrokerConfig.updateCurrentConfig`): server.properties, overlaid with
  `/config/brokers/<default>`, overlaid with `/config/brokers/<id>`; a key overlaid first removes its synonyms
  (`overrideProps` with `brokerConfigSynonyms(k, matchListenerOverride = false)`), so a dynamic
  `log.retention.ms` beats a static `log.retention.hours`. A topic override beats all of them
  (`ConfigHelper.createTopicConfigEntry` puts TOPIC_CONFIG first, then the chain of the topic's first broker
  synonym, `ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS`).
* **Synonyms list** (`ConfigHelper.configSynonyms`): source-major — every synonym found in the per-broker
  dynamic config (DYNAMIC_BROKER_CONFIG), then in `<default>` (DYNAMIC_DEFAULT_BROKER_CONFIG), then in
  server.properties (STATIC_BROKER_CONFIG), then Kafka's defaults (DEFAULT_CONFIG), each in the order of
  `DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true)` (the catalog's synonym
  groups; a listener-prefixed key is followed by its base config). The head of the list is the source.

Where we deliberately differ from Kafka's response, so the source shown is where the value comes from:
* Kafka ends `configSynonyms` with `dropWhile(_.name != name)`, so `retention.ms` reads DEFAULT_CONFIG with no
  synonyms when only `log.retention.hours` is set, although `KafkaConfig.logRetentionTimeMillis` takes the
  value from it. We keep the whole group for its first key (the one topics and dynamic configs use) and
  start the group at the requested key for the others (`log.retention.hours` lists only itself), which is
  what the dropWhile means for them. Values found under an hours/minutes synonym are converted to the
  requested key's unit.
* A topic is described by whichever broker answers, with that broker's per-broker layer; `broker=None`
  leaves the per-broker layer out (the value on every broker without an override of its own).
* `brokers/<default>`: Kafka lists only DYNAMIC_DEFAULT_BROKER_CONFIG there (`createBrokerConfigEntry(
  perBrokerConfig = false)`); we go on to the shared server.properties and Kafka's default, the value a
  broker without overrides gets.
* Quota entities have no DescribeConfigs: their chain follows `ClientQuotaManager`'s precedence (the entity,
  then the more general entities of `quota_fallbacks`, QUOTA_CONFIG), then the quota default.
* Sensitive values (PASSWORD configs and Kafka's password-suffix rule, SCRAM credentials, secret references)
  are never carried: their value is None, shown as `(sensitive)`, as Kafka's `isSensitive` does.

Three views of the layers: `DesiredLayers` (the manifests alone, for risk's inherited values), `LiveLayers`
(ZooKeeper) and `PlannedLayers` (ZooKeeper with a plan applied: what the manifests would make it, with
ownership, ignored keys and unmanaged entities exactly as `diff` decided). server.properties comes from the
manifests' `static` files in every view (ZooKeeper does not hold it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from reconciler.catalog import Catalog
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredValue, EntityRef, LiveState, SecretRef, SourceRef
from reconciler.plan import Plan
from reconciler.units import parse_int

ConfigSource = Literal[
    "TOPIC_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "STATIC_BROKER_CONFIG",
    "DEFAULT_CONFIG",
    "QUOTA_CONFIG",
    "DYNAMIC_GROUP_CONFIG",  # Kafka 4.x config entities (DescribeConfigsResponse.ConfigSource)
    "DYNAMIC_CLIENT_METRICS_CONFIG",
    "FINALIZED_FEATURE",  # a finalized feature level (DescribeFeatures)
]
_KAFKA4_SOURCES: dict[str, ConfigSource] = {"groups": "DYNAMIC_GROUP_CONFIG",
                                            "client-metrics": "DYNAMIC_CLIENT_METRICS_CONFIG",
                                            "features": "FINALIZED_FEATURE"}
_LISTENER = re.compile(r"listener\.name\.[^.]*\.(.*)")  # Kafka's ListenerConfigRegex
_DEFAULT_BROKERS = EntityRef("brokers", DEFAULT_ENTITY)
DEFAULT_LAYER = "Kafka default"


@dataclass(frozen=True, slots=True)
class Setting:
    """One value in one layer, and where it is written. `value` is None for a sensitive one."""

    value: str | None
    origin: str  # a manifest line, a znode path, "Kafka default"
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class Synonym:
    """One entry of the synonyms list: a config name, its value in that layer, the layer."""

    name: str
    value: str | None
    source: ConfigSource
    layer: str  # "topics/orders", "brokers/1", "brokers/<default>", "server.properties", "Kafka default"
    origin: str  # a manifest line or a znode path


@dataclass(frozen=True, slots=True)
class Effective:
    """A key's effective value on one entity (None: sensitive, or no value anywhere) and its chain."""

    key: str
    value: str | None
    source: ConfigSource
    sensitive: bool
    synonyms: tuple[Synonym, ...]

    @property
    def head(self) -> Synonym | None:
        return self.synonyms[0] if self.synonyms else None

    @property
    def is_default(self) -> bool:
        return self.source == "DEFAULT_CONFIG"


class Layers(Protocol):
    """The dynamic configs (per entity) and the static server.properties (per broker) of one view."""

    def dynamic(self, ref: EntityRef) -> Mapping[str, Setting]: ...

    def static(self, broker: str) -> Mapping[str, Setting]: ...


def origin_of(source: SourceRef | None, fallback: str) -> str:
    return f"{source.file}:{source.line}" if source is not None else fallback


def _desired_settings(config: Mapping[str, DesiredValue], fallback: str) -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for key, dv in config.items():
        secret = isinstance(dv.value, SecretRef)
        out[key] = Setting(None if secret else str(dv.value), origin_of(dv.source, fallback), secret)
    return out


class _CachedLayers:
    """A view's layers, each built once (a describe of a large cluster asks for `<default>` thousands of
    times); server.properties comes from the manifests in every view."""

    def __init__(self, desired: DesiredState | None) -> None:
        self._desired = desired
        self._static: dict[str, Mapping[str, Setting]] = {}
        self._dynamic: dict[EntityRef, Mapping[str, Setting]] = {}

    def static(self, broker: str) -> Mapping[str, Setting]:
        if broker not in self._static:
            props = self._desired.static.get(broker) if self._desired is not None else None
            self._static[broker] = _desired_settings(props or {}, "server.properties")
        return self._static[broker]

    def dynamic(self, ref: EntityRef) -> Mapping[str, Setting]:
        if ref not in self._dynamic:
            self._dynamic[ref] = self._build(ref)
        return self._dynamic[ref]

    def _build(self, ref: EntityRef) -> Mapping[str, Setting]:
        raise NotImplementedError


class DesiredLayers(_CachedLayers):
    """The manifests alone (what risk rates a change against)."""

    def __init__(self, desired: DesiredState) -> None:
        super().__init__(desired)
        self.desired = desired

    def _build(self, ref: EntityRef) -> Mapping[str, Setting]:
        if ref.entity_type == "topics":
            topic = self.desired.topics.get(ref.name)
            return _desired_settings(topic.config, ref.display) if topic is not None else {}
        entity = self.desired.entities.get(ref)
        return _desired_settings(entity.config, ref.display) if entity is not None else {}


class LiveLayers(_CachedLayers):
    """ZooKeeper's dynamic configs (server.properties from the manifests: ZooKeeper does not hold it)."""

    def __init__(self, live: LiveState, catalog: Catalog, desired: DesiredState | None = None) -> None:
        super().__init__(desired)
        self.live, self.catalog = live, catalog

    def _build(self, ref: EntityRef) -> Mapping[str, Setting]:
        entity = self.live.entities.get(ref)
        if entity is None or entity.version is None:
            return {}
        where = f"/config/{ref.path}"
        return {k: self._setting(ref, k, v, where) for k, v in entity.config.items()}

    def _setting(self, ref: EntityRef, key: str, value: str, where: str) -> Setting:
        secret = is_sensitive(self.catalog, ref, key)
        return Setting(None if secret else value, where, secret)


class PlannedLayers(LiveLayers):
    """ZooKeeper once `plan` is applied: what the manifests would make it. Keys the plan leaves alone keep
    their live value; a declared key's origin is its manifest line."""

    def __init__(self, live: LiveState, plan: Plan, desired: DesiredState, catalog: Catalog) -> None:
        super().__init__(live, catalog, desired)
        self._changes = {e.ref: e for e in plan.entities}
        self._created = {t.name: t for t in plan.topics_to_create}
        self._declared = DesiredLayers(desired)

    def _build(self, ref: EntityRef) -> Mapping[str, Setting]:
        out = dict(super()._build(ref))
        declared = self._declared.dynamic(ref)
        for key, setting in declared.items():
            if key in out:
                out[key] = Setting(out[key].value, setting.origin, out[key].sensitive)
        created = self._created.get(ref.name) if ref.entity_type == "topics" else None
        if created is not None:
            src = origin_of(created.source, ref.display)
            out.update((k, Setting(v, declared[k].origin if k in declared else src)) for k, v in created.config.items())
        entity = self._changes.get(ref)
        for change in entity.changes if entity is not None else ():
            if change.op == "-":
                out.pop(change.key, None)
                continue
            origin = origin_of(change.source, declared[change.key].origin if change.key in declared else ref.display)
            out[change.key] = Setting(None if change.sensitive else change.after, origin, change.sensitive)
        return out


def is_sensitive(catalog: Catalog, ref: EntityRef, key: str) -> bool:
    """Kafka's `KafkaConfig.maybeSensitive` for `key` on `ref`: `Catalog.is_sensitive` at the entity's scope
    (passwords, SCRAM credentials, and any key whose type the catalog does not know)."""
    return catalog.is_sensitive(key, ref.quota_kind)


# --- the chain ------------------------------------------------------------------------------------------


def broker_synonyms(catalog: Catalog, key: str, version: str | None) -> tuple[str, ...]:
    """`brokerConfigSynonyms(key, matchListenerOverride = true)`, started at `key` (see the module doc)."""
    info = catalog.resolve_broker(key, version)
    if info.listener is not None:
        match = _LISTENER.fullmatch(key)
        base = info.base.name if info.base is not None else match.group(1) if match else key
        return (key, base)
    group = info.base.synonyms if info.base is not None and info.base.synonyms else (key,)
    return group[group.index(key):] if key in group else (key,)


def _factor(catalog: Catalog, name: str) -> int:
    base = catalog.broker(name)
    return base.synonym_factor if base is not None else 1


def _in_unit(catalog: Catalog, value: str | None, found: str, key_factor: int) -> str | None:
    """A value found under `found` in the unit of the requested key (hours/minutes -> ms)."""
    factor = _factor(catalog, found)
    if value is None or factor == key_factor:
        return value
    number = parse_int(value)  # Kafka reads these with getInt/getLong: integers only (bounded, never raises)
    if number is None:
        return value
    return str(number * factor // key_factor)


def quota_fallbacks(ref: EntityRef) -> tuple[EntityRef, ...]:
    """More general quota entities, most specific first, whose value applies where `ref` has none
    (ClientQuotaManager's precedence: <user, client> > user > <default user, client> > ... > client)."""
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


_Level = tuple[ConfigSource, str, Mapping[str, Setting]]


def _levels(layers: Layers, ref: EntityRef, broker: str | None) -> Iterator[_Level]:
    """The layers of `ref` in precedence order (the entity's own first), with their names."""
    if ref.entity_type == "topics":
        yield "TOPIC_CONFIG", ref.display, layers.dynamic(ref)
    elif ref.entity_type == "brokers":
        broker = None if ref.name == DEFAULT_ENTITY else ref.name
    elif ref.entity_type in _KAFKA4_SOURCES:  # one layer each; defaults from GroupConfig / ClientMetricsConfigs
        yield _KAFKA4_SOURCES[ref.entity_type], ref.display, layers.dynamic(ref)
        return
    else:
        for entity in (ref, *quota_fallbacks(ref)):
            yield "QUOTA_CONFIG", entity.display, layers.dynamic(entity)
        return
    if broker is not None:
        yield "DYNAMIC_BROKER_CONFIG", f"brokers/{broker}", layers.dynamic(EntityRef("brokers", broker))
    yield "DYNAMIC_DEFAULT_BROKER_CONFIG", _DEFAULT_BROKERS.display, layers.dynamic(_DEFAULT_BROKERS)
    if broker is not None:
        yield "STATIC_BROKER_CONFIG", f"server.properties of broker {broker}", layers.static(broker)
    yield "STATIC_BROKER_CONFIG", "server.properties", layers.static(DEFAULT_ENTITY)


_Names = tuple[tuple[str, ...], tuple[str, ...], tuple[Synonym, ...], int]


@functools.lru_cache(maxsize=4096)
def _names(catalog: Catalog, kind: str, key: str, version: str | None) -> _Names:
    """For a key of an entity kind (`topics`, `brokers` or a quota kind): the names looked up in the
    entity's own layer, the names in the other layers, the DEFAULT_CONFIG entries, the key's unit factor.
    The same for every entity of the kind (cached: a describe asks for every key of thousands of them)."""
    if kind == "topics":
        topic = catalog.topic(key, version)
        names = topic.synonyms if topic is not None else ()
        own: tuple[str, ...] = (key,)
        defaults = [(s, k.default) for s in names if (k := catalog.broker(s, version)) is not None and k.default]
        if not defaults and topic is not None and topic.default is not None:
            defaults = [(key, topic.default)]
        factor = 1
    elif kind == "brokers":
        names = own = broker_synonyms(catalog, key, version)
        defaults = [(s, k.default) for s in names if (k := catalog.broker(s, version)) is not None and k.default]
        quota = catalog.quota("brokers", key)  # the replication throttles: dynamic-only, not in KafkaConfig
        if not defaults and quota is not None and quota.default:
            defaults = [(key, quota.default)]
        factor = _factor(catalog, key)
    else:
        quota = catalog.entity_key(kind, key, version) if kind in _KAFKA4_SOURCES else catalog.quota(kind, key)
        names = own = (key,)
        defaults = [(key, quota.default)] if quota is not None and quota.default is not None else []
        factor = 1
    entries = tuple(Synonym(name, value, "DEFAULT_CONFIG", DEFAULT_LAYER, DEFAULT_LAYER) for name, value in defaults)
    return own, names, entries, factor


class EntityResolver:
    """`resolve` for many keys of one entity: its layers are looked up once."""

    def __init__(self, layers: Layers, catalog: Catalog, ref: EntityRef, *, version: str | None = None,
                 broker: str | None = None) -> None:
        self.catalog, self.ref, self.version = catalog, ref, version
        self.kind = ref.entity_type if ref.entity_type in ("topics", "brokers") else ref.quota_kind
        self.levels = [level for level in _levels(layers, ref, broker)]
        self.set_anywhere = frozenset(name for _, _, settings in self.levels for name in settings)

    def at_default(self, key: str) -> bool:
        """No layer sets `key` or a synonym of it: its value is Kafka's default (cheap, no chain built)."""
        own, names, _, _ = _names(self.catalog, self.kind, key, self.version)
        return self.set_anywhere.isdisjoint(own) and self.set_anywhere.isdisjoint(names)

    def __call__(self, key: str, inherited: bool = False) -> Effective:
        own, names, defaults, key_factor = _names(self.catalog, self.kind, key, self.version)
        chain: list[Synonym] = []
        sensitive = False
        for index, (source, layer, settings) in enumerate(self.levels):
            if not settings or (inherited and index == 0):  # the first level is always the entity's own
                continue
            for name in own if index == 0 else names:
                setting = settings.get(name)
                if setting is not None:
                    sensitive = sensitive or setting.sensitive
                    chain.append(Synonym(name, setting.value, source, layer, setting.origin))
        chain += defaults
        if sensitive or is_sensitive(self.catalog, self.ref, key):
            chain = [Synonym(s.name, None, s.source, s.layer, s.origin) for s in chain]
            sensitive = True
        if not chain:
            return Effective(key, None, "DEFAULT_CONFIG", sensitive, ())
        head = chain[0]
        value = None if sensitive else _in_unit(self.catalog, head.value, head.name, key_factor)
        return Effective(key, value, head.source, sensitive, tuple(chain))


def resolve(
    layers: Layers, catalog: Catalog, ref: EntityRef, key: str, *, version: str | None = None,
    broker: str | None = None, inherited: bool = False,
) -> Effective:
    """The effective value of `key` on `ref`. `inherited`: leave out the entity's own layer (the value the
    key would have if the entity did not set it)."""
    return EntityResolver(layers, catalog, ref, version=version, broker=broker)(key, inherited)
