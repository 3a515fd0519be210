"""Listener declarations as Kafka's KafkaConfig and DynamicListenerConfig would check them (ground truth §3.3)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass

from reconciler.errors import Diagnostic
from reconciler.model import BrokerListeners, DesiredState, ListenersSpec, SecretRef, SourceRef
from reconciler.rules.broker_values import version_at_least

# Kafka's endpoint regex (EndPoint.uriParseExp); names must be simple identifiers to be usable as prefixes
ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
LISTENER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int


def parse_endpoint(text: str) -> Endpoint | str:
    """An endpoint, or the reason it is not one."""
    match = ENDPOINT.match(text.strip())
    if not match:
        return f"unable to parse '{text}' to a broker endpoint (expected NAME://host:port)"
    name, host, port = match.group(1), match.group(2), int(match.group(3))
    if not LISTENER_NAME.match(name):
        return f"listener name '{name}' in '{text}' must be letters, digits, '_' or '-'"
    if not 0 <= port <= 65535:
        return f"port {port} in '{text}' is out of range 0..65535"
    return Endpoint(name.upper(), host, port)


def _at(sources: tuple[SourceRef, ...], index: int, fallback: SourceRef | None) -> SourceRef | None:
    return sources[index] if index < len(sources) else fallback


def _endpoints(
    items: tuple[str, ...], what: str, sources: tuple[SourceRef, ...], src: SourceRef | None
) -> Iterator[Endpoint | Diagnostic]:
    for index, item in enumerate(items):
        parsed = parse_endpoint(item)
        at = _at(sources, index, src)
        yield Diagnostic("error", f"{what}: {parsed}", at, what) if isinstance(parsed, str) else parsed


def _ip_family(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _shared_ports(listeners: list[Endpoint], version: str) -> Iterator[tuple[int, str]]:
    """Kafka's duplicate-port rule. Before 3.6 every listener needs its own port. From 3.6 (KIP-797) two listeners
    may share one when one host is an IPv4 and the other an IPv6 address, and no third listener uses it."""
    by_port: dict[int, list[Endpoint]] = {}
    for e in listeners:
        if e.port != 0:  # Kafka skips port 0 (an ephemeral port)
            by_port.setdefault(e.port, []).append(e)
    for port, group in sorted(by_port.items()):
        if len(group) < 2:
            continue
        if not version_at_least(version, "3.6"):
            yield port, "each listener must have a different port"
            continue
        families = [_ip_family(e.host) for e in group]
        if len(group) == 2 and sorted(f or 0 for f in families) == [4, 6]:
            continue  # KIP-797: one IPv4 and one IPv6 listener on the same port
        yield port, ("each listener must have a different port unless exactly one listener has an IPv4 address "
                     "and the other an IPv6 address")


def _broker(spec: ListenersSpec, b: BrokerListeners, version: str) -> Iterator[Diagnostic]:
    listeners: list[Endpoint] = []
    places: dict[Endpoint, SourceRef | None] = {}  # each endpoint's own line
    for index, item in enumerate(_endpoints(b.listeners, "listeners", b.listener_sources, b.source)):
        if isinstance(item, Diagnostic):
            yield item
        else:
            listeners.append(item)
            places.setdefault(item, _at(b.listener_sources, index, b.source))
    advertised: list[Endpoint] = []
    ad_places: dict[Endpoint, SourceRef | None] = {}
    for index, item in enumerate(_endpoints(b.advertised, "advertised.listeners", b.advertised_sources, b.source)):
        if isinstance(item, Diagnostic):
            yield item
        else:
            advertised.append(item)
            ad_places.setdefault(item, _at(b.advertised_sources, index, b.source))
    where = f"broker {b.broker}"
    names = [e.name for e in listeners]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        second = [e for e in listeners if e.name == dup][1]
        yield Diagnostic("error", f"{where}: each listener must have a different name ({dup} repeats)",
                         places.get(second, b.source), "listeners")
    for port, problem in _shared_ports(listeners, version):
        second = [e for e in listeners if e.port == port][1]
        yield Diagnostic("error", f"{where}: {problem} (port {port}; CoreUtils.listenerListToEndPoints)",
                         places.get(second, b.source), "listeners")
    for e in listeners + advertised:
        if e.name not in spec.security_protocol_map:
            yield Diagnostic("error", f"{where}: no security protocol defined for listener {e.name} in "
                             "securityProtocolMap", places.get(e) or ad_places.get(e, b.source), "securityProtocolMap")
    for e in advertised:
        if e.name not in names:
            yield Diagnostic("error", f"{where}: advertised listener {e.name} is not in listeners; "
                             "advertised.listeners must be a subset of listeners", ad_places.get(e, b.source),
                             "advertised")
        if e.host == "0.0.0.0":
            yield Diagnostic("error", f"{where}: advertised listener {e.name} uses the non-routable meta-address "
                             "0.0.0.0; advertise a routable host", ad_places.get(e, b.source), "advertised")
    inter = spec.inter_broker_listener
    visible = {e.name for e in advertised} if advertised else set(names)
    if inter is not None and inter not in visible:
        yield Diagnostic("error", f"{where}: the inter-broker listener {inter} must be among its "
                         "(advertised) listeners; brokers refuse to drop it", spec.inter_broker_source or b.source,
                         "interBrokerListener")


def check_listeners(state: DesiredState) -> list[Diagnostic]:
    spec = state.listeners
    if spec is None:
        return []
    diags: list[Diagnostic] = []
    for b in spec.brokers.values():
        diags.extend(_broker(spec, b, state.cluster.kafka_version))
    if spec.inter_broker_listener and spec.inter_broker_listener not in spec.security_protocol_map:
        diags.append(Diagnostic("error", f"interBrokerListener {spec.inter_broker_listener} is not in "
                                "securityProtocolMap", spec.inter_broker_source or spec.source, "interBrokerListener"))
    diags.extend(_static_agreement(state, spec))
    diags.extend(_prefixed_listener_names(state, spec))
    return diags


def _static_agreement(state: DesiredState, spec: ListenersSpec) -> Iterator[Diagnostic]:
    """The inter-broker listener is static (server.properties); a declared one must agree with it."""
    for broker, props in state.static.items():
        static = props.get("inter.broker.listener.name")
        if static is None or isinstance(static.value, SecretRef) or spec.inter_broker_listener is None:
            continue
        if static.value.upper() != spec.inter_broker_listener:
            yield Diagnostic("error", f"interBrokerListener {spec.inter_broker_listener} differs from broker "
                             f"{broker}'s static inter.broker.listener.name={static.value}; it cannot be changed "
                             "dynamically", spec.source, "interBrokerListener")


def _prefixed_listener_names(state: DesiredState, spec: ListenersSpec) -> Iterator[Diagnostic]:
    known = {name.lower() for name in spec.security_protocol_map}
    for ref, entity in state.entities.items():
        if ref.entity_type != "brokers":
            continue
        for key, value in entity.config.items():
            if key.startswith("listener.name.") and key != "listener.security.protocol.map":
                listener = key.split(".")[2]
                if listener not in known:
                    yield Diagnostic("error", f"'{key}' names listener '{listener}', which is not in the Listeners "
                                     "securityProtocolMap", value.source, key)
