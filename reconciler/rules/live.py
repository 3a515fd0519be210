"""Plan-time rules that need live state (SPEC §4, ground truth §3.3).

Brokers validate these only when they apply an update read from ZooKeeper and then silently drop the
whole update (logging only), so they must be caught before anything is written: per-broker overrides for
brokers that are not registered, listener changes against each broker's registered endpoints, thread-pool
steps against the current effective values, and min.insync.replicas above a topic's replication factor.
Pure: standard library and the core only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from reconciler.catalog import Catalog, load_catalog
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredValue, EntityRef, LiveState, SourceRef
from reconciler.rules.elr import check_elr_live
from reconciler.rules.live_listeners import check_listener_configs
from reconciler.rules.live_threads import check_thread_pools
from reconciler.rules.topics import min_isr_above_rf
from reconciler.units import parse_int

# Kafka's default listener.security.protocol.map: every security protocol is a listener name of its own.
DEFAULT_PROTOCOL_MAP = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
_ENDPOINT_NAME = re.compile(r"^\s*([^:/\s]+)://")


def check_live(desired: DesiredState, live: LiveState, catalog: Catalog | None = None) -> list[Diagnostic]:
    """Every problem found with live context, sorted by source; errors mean the plan must not be applied."""
    catalog = catalog if catalog is not None else load_catalog()
    diags = [
        *_no_brokers(desired, live),
        *_unregistered(desired, live),
        *_listeners(desired, live),
        *check_listener_configs(desired, live),
        *check_thread_pools(desired, live, catalog),
        *_min_insync(desired, live, catalog),
        *check_elr_live(desired, (live.features or {}).get("eligible.leader.replicas.version")),
    ]
    return sorted(diags, key=Diagnostic.sort_key)


def static_value(desired: DesiredState, broker: str, key: str) -> tuple[str, SourceRef | None] | None:
    """A server.properties value of one broker ("<default>" = the shared file); never written, only read."""
    names = (DEFAULT_ENTITY, "default") if broker in (DEFAULT_ENTITY, "default") else (broker,)
    for name in names:
        raw: DesiredValue | str | None = desired.static.get(name, {}).get(key)
        if isinstance(raw, DesiredValue) and isinstance(raw.value, str):
            return raw.value, raw.source
        if isinstance(raw, str):
            return raw, None
    return None


def _no_brokers(desired: DesiredState, live: LiveState) -> Iterator[Diagnostic]:
    """No broker registered under the chroot: a connect string that misses the cluster's chroot, or brokers
    not started. Config znodes and topics can still be written (brokers read them when they start), but the
    replicas are assigned over the declared brokers, not the registered ones as `AdminZkClient.createTopic`
    would, and nothing can be checked against the brokers' current values."""
    if live.brokers:
        return
    connect = desired.cluster.zookeeper.connect
    where = desired.cluster.zookeeper.source or desired.cluster.source
    yield Diagnostic("warning", f"no broker is registered in {connect}/brokers/ids: is the connect string the one "
                     "in the brokers' server.properties (zookeeper.connect, chroot included), and are they running? "
                     "apply refuses to write where no declared broker is registered unless --allow-no-brokers "
                     "(pre-seeding configs before the brokers' first start; the demo, scripts/demo.sh, starts "
                     "three for clusters/local-dev)", where, "connect")


def _unregistered(desired: DesiredState, live: LiveState) -> Iterator[Diagnostic]:
    for ref, entity in desired.entities.items():
        if ref.entity_type != "brokers" or ref.name == DEFAULT_ENTITY or not ref.name.isdigit():
            continue
        if int(ref.name) not in live.brokers:
            yield Diagnostic(
                "warning",
                f"broker {ref.name} has per-broker overrides but is not registered in /brokers/ids (stopped, "
                f"or not in this cluster?): the config is written but only takes effect when broker "
                f"{ref.name} starts, and it cannot be checked against the broker's current values",
                entity.source,
            )


# --- listeners -----------------------------------------------------------------------------------------


def _names(value: str) -> list[str]:
    """Listener names of "NAME://host:port,..." (upper-case, as Kafka normalises them)."""
    return [m.group(1).upper() for part in value.split(",") if (m := _ENDPOINT_NAME.match(part))]


def _protocol_map(value: str) -> dict[str, str]:
    pairs = (item.split(":", 1) for item in value.split(",") if ":" in item)
    return {k.strip().upper(): v.strip().upper() for k, v in pairs}


@dataclass(frozen=True, slots=True)
class _Str:
    value: str
    source: SourceRef | None


def _desired_str(config: Mapping[str, DesiredValue], key: str) -> _Str | None:
    dv = config.get(key)
    return _Str(dv.value, dv.source) if dv is not None and isinstance(dv.value, str) else None


def _inter_broker_listener(desired: DesiredState, broker: str) -> str:
    if desired.listeners is not None and desired.listeners.inter_broker_listener:
        return desired.listeners.inter_broker_listener.upper()
    for key in ("inter.broker.listener.name", "security.inter.broker.protocol"):
        for name in (broker, DEFAULT_ENTITY):
            found = static_value(desired, name, key)
            if found is not None:
                return found[0].strip().upper()
    return "PLAINTEXT"  # Kafka's default security.inter.broker.protocol, used as the listener name


def _listeners(desired: DesiredState, live: LiveState) -> Iterator[Diagnostic]:
    for broker_id, reg in sorted(live.brokers.items()):
        entity = desired.entities.get(EntityRef("brokers", str(broker_id)))
        listeners = _desired_str(entity.config, "listeners") if entity is not None else None
        if entity is None or listeners is None:
            continue  # listeners not managed for this broker: nothing changes
        advertised = _desired_str(entity.config, "advertised.listeners") or listeners
        map_value = _desired_str(entity.config, "listener.security.protocol.map")
        if map_value is not None:
            new_map = _protocol_map(map_value.value)
        elif desired.listeners is not None:
            new_map = {k.upper(): v.upper() for k, v in desired.listeners.security_protocol_map.items()}
        else:
            new_map = dict(DEFAULT_PROTOCOL_MAP)
        live_map = {k.upper(): v.upper() for k, v in reg.protocol_map.items()}
        for endpoint in reg.endpoints:
            for name in _names(endpoint):
                live_map.setdefault(name, DEFAULT_PROTOCOL_MAP.get(name, ""))
        new_names = set(_names(listeners.value))
        for name, old in sorted(live_map.items()):
            new = new_map.get(name)
            if name in new_names and old and new and new != old:
                yield Diagnostic(
                    "error",
                    f"Security protocol cannot be updated for existing listener {name} (broker {broker_id}: "
                    f"{old} -> {new}). Add a listener with a new name and port for {new}, move clients to "
                    f"it, then remove {name}",
                    map_value.source if map_value is not None else listeners.source,
                    "listener.security.protocol.map",
                )
        inter = _inter_broker_listener(desired, str(broker_id))
        key = "advertised.listeners" if advertised is not listeners else "listeners"
        if inter in live_map and inter not in set(_names(advertised.value)):
            yield Diagnostic(
                "error",
                f"Advertised listener must be specified for inter-broker listener {inter}: broker "
                f"{broker_id} would lose the listener the brokers replicate over. Keep {inter}; to move "
                "inter-broker traffic, change inter.broker.listener.name in server.properties with a rolling "
                "restart first",
                advertised.source,
                key,
            )


# --- min.insync.replicas -------------------------------------------------------------------------------


def _default_min_isr(
    desired: DesiredState, live: LiveState, catalog: Catalog
) -> tuple[int, SourceRef | None, bool]:
    """The cluster-wide default after the plan: (value, source, declared in the manifests)."""
    ref = EntityRef("brokers", DEFAULT_ENTITY)
    entity = desired.entities.get(ref)
    if entity is not None:
        found = _desired_str(entity.config, "min.insync.replicas")
        if found is not None and (number := parse_int(found.value)) is not None:
            return number, found.source, True
    elif (le := live.entities.get(ref)) is not None and (number := parse_int(le.config.get("min.insync.replicas"))
                                                           ) is not None:
        return number, None, False
    static = static_value(desired, DEFAULT_ENTITY, "min.insync.replicas")
    if static is not None and (number := parse_int(static[0])) is not None:
        return number, static[1], False
    key = catalog.broker("min.insync.replicas", desired.cluster.kafka_version)
    default = key.default if key is not None and key.default else "1"
    number = parse_int(default)
    return 1 if number is None else number, None, False


def _min_insync(desired: DesiredState, live: LiveState, catalog: Catalog) -> Iterator[Diagnostic]:
    default, default_source, declared = _default_min_isr(desired, live, catalog)
    low: list[str] = []  # topics below the cluster default
    low_source: SourceRef | None = default_source if declared else None
    for name in sorted(desired.topics.keys() | live.topics.keys()):
        topic = desired.topics.get(name)
        existing = live.topics.get(name)
        rf = topic.replication_factor if topic is not None else None
        rf = rf if rf is not None else (existing.replication_factor if existing is not None else None)
        if not rf:
            continue
        override = _desired_str(topic.config, "min.insync.replicas") if topic is not None else None
        if override is None and topic is None:
            live_cfg = live.entities.get(EntityRef("topics", name))
            if live_cfg is not None and "min.insync.replicas" in live_cfg.config:
                continue  # an unmanaged topic's own override: not ours to judge
        if override is not None:
            if topic is not None and topic.replication_factor is not None:
                continue  # validate judged it against the declared replication factor (rules/topics.py)
            if (wanted := parse_int(override.value)) is not None and wanted > rf:
                yield Diagnostic("warning", min_isr_above_rf(name, override.value, rf), override.source,
                                 "min.insync.replicas")
        elif default > rf and (declared or topic is not None):
            low.append(f"{name} (RF {rf})")
            if low_source is None and topic is not None:
                low_source = topic.source  # the default is static: point at a declared topic it hits
    if low:
        shown = ", ".join(low[:10]) + (f" and {len(low) - 10} more" if len(low) > 10 else "")
        yield Diagnostic(
            "warning",
            f"min.insync.replicas={default} (cluster default) is above the replication factor of {len(low)} "
            f"topic(s): {shown}; producers with acks=all to them will fail with NotEnoughReplicas. Lower the "
            "default or give those topics a min.insync.replicas no higher than their replication factor",
            low_source,
            "min.insync.replicas",
        )
