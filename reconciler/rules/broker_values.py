"""Broker-wide values as a broker checks them when it applies a dynamic update (issue 13; docs/kafka-validation.md).

A broker builds a new `KafkaConfig` from server.properties, `<default>` and its own dynamic config
(`DynamicBrokerConfig.validate` / `processReconfiguration`), so every `require(...)` of
`KafkaConfig.validateValues` runs, then each Reconfigurable's `validateReconfiguration`. If any fails, the
broker ignores the whole update. These checks see the same effective values, per broker, from the manifests:
its BrokerConfig, `<default>`, its declared server.properties, Kafka's default (`effective.resolve`).

When a verdict rests on a value the manifests cannot know (a key neither set dynamically nor in the declared
server.properties, which may list only part of the real file, so Kafka's default is assumed), it is a warning
that says so: Kafka will decide at apply time.
Rules and their Kafka sources (3.9; the same in 2.8-3.9 unless a version is named):
  log.roll.ms >= 1, log.roll.jitter.ms >= 0, log.retention.ms >= 1 or negative (unlimited)
                                       KafkaConfig.validateValues
  log.cleaner.threads >= 1             LogCleaner.validateReconfiguration (and KafkaConfig's division by it)
  dedupe buffer / cleaner threads > 1 MiB   KafkaConfig.validateValues
  max.connections.per.ip = 0 needs overrides; overrides are `host:int` with valid host characters
                                       KafkaConfig.validateValues, Csv.parseCsvMap, Utils.validHostPattern
  max.connections, max.connection.creation.rate (broker-wide or per listener) >= 1
                                       ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration
  num.replica.fetchers >= 1            DynamicThreadPool / ReplicaFetcherManager validateReconfiguration
  log.local.retention.* vs log.retention.* (3.6+)   DynamicLogConfig.validateReconfiguration
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from reconciler.catalog import Catalog
from reconciler.effective import DesiredLayers, EntityResolver
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, SourceRef
from reconciler.units import parse_int

__all__ = ["check_broker_values", "limited", "version_at_least"]

MIB = 1024 * 1024
_HOST_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-%._:")


def limited(total_key: str, total: int) -> bool:
    """Whether a retention bounds local retention: Kafka compares when `*.ms` is not -1 (unlimited) and when
    `*.bytes` is above -1 (LogConfig / DynamicLogConfig)."""
    return total != -1 if total_key.endswith(".ms") else total > -1


def version_at_least(version: str, wanted: str) -> bool:
    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())

    return parts(version) >= parts(wanted)


@dataclass(frozen=True, slots=True)
class _Value:
    """One key's effective value on one broker, where the manifests set it, and whether Kafka's default had
    to be assumed because no server.properties is declared for that broker."""

    key: str
    text: str | None
    source: SourceRef | None  # the manifest line that sets it (None: static or default)
    assumed: bool
    at_default: bool = False  # set in brokers/<default> (so on every broker without its own value)

    def number(self) -> int | None:
        return parse_int(self.text)  # None: not a number (the value rules report it); bounded, never raises


class _Broker:
    """Effective values of one broker (or of `<default>` when the cluster names no brokers)."""

    def __init__(self, desired: DesiredState, catalog: Catalog, layers: DesiredLayers, broker: str) -> None:
        self.desired, self.catalog, self.layers, self.broker = desired, catalog, layers, broker
        self.ref = EntityRef("brokers", broker)
        self.where = "the cluster default" if broker == DEFAULT_ENTITY else f"broker {broker}"
        # `effective.resolve` of each key, with the broker's layers looked up once
        self.resolve = EntityResolver(layers, catalog, self.ref, version=desired.cluster.kafka_version)

    def get(self, key: str) -> _Value:
        found = self.resolve(key)
        source, layer = self._source(key)
        return _Value(key, found.value, source, found.is_default, layer == DEFAULT_ENTITY)

    def _source(self, key: str) -> tuple[SourceRef | None, str | None]:
        for name in (self.broker, DEFAULT_ENTITY):
            entity = self.desired.entities.get(EntityRef("brokers", name))
            if entity is not None and key in entity.config:
                return entity.config[key].source, name
        return None, None

    def declared(self, key: str) -> bool:
        return self._source(key)[1] is not None


def _problem(b: _Broker, values: tuple[_Value, ...], message: str, kafka: str) -> Diagnostic:
    """Error when every input is known; a warning naming the assumption otherwise. Located at the first value
    the manifests set."""
    shown = next((v for v in values if v.source is not None), values[0])
    assumed = [v.key for v in values if v.assumed]
    where = "brokers/<default> (every broker)" if all(v.at_default or v.source is None for v in values) \
        and shown.at_default else b.where
    text = f"{where}: {message} ({kafka})"
    if assumed:
        text += (f"; assuming Kafka's default for {', '.join(assumed)} (set neither here nor in the declared "
                 "server.properties): the broker checks this when it applies the update")
    return Diagnostic("warning" if assumed else "error", text, shown.source, shown.key)


def _log_times(b: _Broker) -> Iterator[Diagnostic]:
    kafka = "KafkaConfig.validateValues"
    if b.declared("log.roll.ms") and (n := (roll := b.get("log.roll.ms")).number()) is not None and n < 1:
        yield _problem(b, (roll,), f"log.roll.ms must be greater than or equal to 1, not {n}", kafka)
    if b.declared("log.roll.jitter.ms") and (n := (jitter := b.get("log.roll.jitter.ms")).number()) is not None \
            and n < 0:
        yield _problem(b, (jitter,), f"log.roll.jitter.ms must be greater than or equal to 0, not {n}", kafka)
    if b.declared("log.retention.ms") and (retention := b.get("log.retention.ms")).number() == 0:  # -1: unlimited
        yield _problem(b, (retention,), "log.retention.ms must be unlimited (-1) or greater than or equal to 1, "
                       "not 0", kafka)


def _cleaner(b: _Broker) -> Iterator[Diagnostic]:
    if not (b.declared("log.cleaner.threads") or b.declared("log.cleaner.dedupe.buffer.size")):
        return
    threads, buffer = b.get("log.cleaner.threads"), b.get("log.cleaner.dedupe.buffer.size")
    n, size = threads.number(), buffer.number()
    if n is not None and n < 1:
        yield _problem(b, (threads,), "log cleaner threads should be at least 1",
                       "LogCleaner.validateReconfiguration")
    elif n is not None and size is not None and size // n <= MIB:
        yield _problem(b, (buffer, threads), f"log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner "
                       f"thread ({size} bytes / {n} threads = {size // n} bytes, must be more than {MIB})",
                       "KafkaConfig.validateValues")


def _connections(b: _Broker, listeners: list[str]) -> Iterator[Diagnostic]:
    declared = b.declared("max.connections.per.ip"), b.declared("max.connections.per.ip.overrides")
    if not any(declared) and not any(b.declared(k) for k in _connection_keys(listeners)):
        return  # Kafka's defaults pass these checks
    per_ip, overrides = b.get("max.connections.per.ip"), b.get("max.connections.per.ip.overrides")
    parsed: dict[str, str] = {}
    if declared[1] and (overrides.text or "").strip():
        for item in (overrides.text or "").split(","):
            host, sep, count = item.strip().rpartition(":")
            if not sep or not host.strip():
                yield _problem(b, (overrides,), f"max.connections.per.ip.overrides entry '{item.strip()}' is not "
                               "host:count", "KafkaConfig (Csv.parseCsvMap)")
                continue
            if parse_int(count) is None:
                yield _problem(b, (overrides,), f"max.connections.per.ip.overrides entry '{item.strip()}': "
                               f"'{count.strip()}' is not a number", "KafkaConfig.maxConnectionsPerIpOverrides")
            if not set(host.strip()) <= _HOST_CHARS:
                yield _problem(b, (overrides,), f"max.connections.per.ip.overrides contains invalid addresses : "
                               f"{host.strip()}", "KafkaConfig.validateValues (Utils.validHostPattern)")
            parsed[host.strip()] = count.strip()
    if any(declared) and per_ip.number() == 0 and not parsed:
        yield _problem(b, (per_ip, overrides), "max.connections.per.ip can be set to zero only if "
                       "max.connections.per.ip.overrides property is set", "KafkaConfig.validateValues")
    for key in _connection_keys(listeners):
        value = b.get(key) if b.declared(key) else None
        if value is not None and (n := value.number()) is not None and n <= 0:
            base = "max.connection.creation.rate" if key.endswith("max.connection.creation.rate") else "max.connections"
            yield _problem(b, (value,), f"Invalid {base} {n} for {key}: each listener's connection quota must "
                           "be at least 1", "ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration")


def _connection_keys(listeners: list[str]) -> list[str]:
    """max.connections and max.connection.creation.rate, broker-wide then per listener (the order of checks)."""
    prefixes = [f"listener.name.{name.lower()}." for name in listeners]
    return [key for base in ("max.connections", "max.connection.creation.rate")
            for key in (base, *(p + base for p in prefixes))]


def _fetchers(b: _Broker) -> Iterator[Diagnostic]:
    fetchers = b.get("num.replica.fetchers")
    if b.declared("num.replica.fetchers") and (n := fetchers.number()) is not None and n < 1:
        yield _problem(b, (fetchers,), f"Dynamic thread count update validation failed for num.replica.fetchers="
                       f"{n}, value should be at least 1", "DynamicThreadPool.validateReconfiguration")


def _local_retention(b: _Broker) -> Iterator[Diagnostic]:
    """DynamicLogConfig.validateReconfiguration (3.6+): local retention within the total retention."""
    if not version_at_least(b.desired.cluster.kafka_version, "3.6"):
        return
    pairs = (("log.local.retention.ms", "log.retention.ms"), ("log.local.retention.bytes", "log.retention.bytes"))
    for local_key, total_key in pairs:
        if not (b.declared(local_key) or b.declared(total_key)):
            continue
        local, total = b.get(local_key), b.get(total_key)
        lv, tv = local.number(), total.number()
        if lv is None or tv is None:
            continue
        tv = -1 if total_key == "log.retention.ms" and tv < 0 else tv
        if not limited(total_key, tv) or lv == -2:
            continue
        if lv == -1:
            message = f"{local_key} must not be -1 as {total_key} value is set as {tv}"
        elif lv > tv:
            message = f"{local_key} {lv} must not be more than {total_key} property value: {tv}"
        else:
            continue
        yield _problem(b, (local, total), message, "DynamicLogConfig.validateReconfiguration")


def check_broker_values(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    layers = DesiredLayers(state)
    names = sorted(state.listeners.security_protocol_map) if state.listeners is not None else []
    brokers = [str(b) for b in state.cluster.brokers] or [DEFAULT_ENTITY]
    diags: list[Diagnostic] = []
    seen: set[tuple[str, str, int]] = set()
    for broker in brokers:
        b = _Broker(state, catalog, layers, broker)
        for diag in (*_log_times(b), *_cleaner(b), *_connections(b, names), *_fetchers(b), *_local_retention(b)):
            where = diag.source
            key = (diag.message.split(": ", 1)[1], where.file if where else "", where.line if where else 0)
            if key not in seen:  # the same <default> value fails on every broker: say it once
                seen.add(key)
                diags.append(diag)
    return diags
