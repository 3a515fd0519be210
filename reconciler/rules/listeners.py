"""Listener declarations as Kafka's KafkaConfig and DynamicListenerConfig would check them (ground truth §3.3)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from reconciler.errors import Diagnostic
from reconciler.model import BrokerListeners, DesiredState, ListenersSpec, SecretRef, SourceRef

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


def _endpoints(items: tuple[str, ...], what: str, src: SourceRef | None) -> Iterator[Endpoint | Diagnostic]:
    for item in items:
        parsed = parse_endpoint(item)
        yield Diagnostic("error", f"{what}: {parsed}", src, what) if isinstance(parsed, str) else parsed


def _broker(spec: ListenersSpec, b: BrokerListeners) -> Iterator[Diagnostic]:
    listeners: list[Endpoint] = []
    for item in _endpoints(b.listeners, "listeners", b.source):
        if isinstance(item, Diagnostic):
            yield item
        else:
            listeners.append(item)
    advertised: list[Endpoint] = []
    for item in _endpoints(b.advertised, "advertised.listeners", b.source):
        if isinstance(item, Diagnostic):
            yield item
        else:
            advertised.append(item)
    where = f"broker {b.broker}"
    names = [e.name for e in listeners]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        yield Diagnostic("error", f"{where}: each listener must have a different name ({dup} repeats)", b.source,
                         "listeners")
    ports = [e.port for e in listeners if e.port != 0]
    for port in sorted({p for p in ports if ports.count(p) > 1}):
        yield Diagnostic("error", f"{where}: each listener must have a different port ({port} repeats)", b.source,
                         "listeners")
    for e in listeners + advertised:
        if e.name not in spec.security_protocol_map:
            yield Diagnostic("error", f"{where}: no security protocol defined for listener {e.name} in "
                             "securityProtocolMap", b.source, "securityProtocolMap")
    extra = sorted({e.name for e in advertised} - set(names))
    if extra:
        yield Diagnostic("error", f"{where}: advertised listeners {', '.join(extra)} are not in listeners; "
                         "advertised.listeners must be a subset of listeners", b.source, "advertised")
    for e in advertised:
        if e.host == "0.0.0.0":
            yield Diagnostic("error", f"{where}: advertised listener {e.name} uses the non-routable meta-address "
                             "0.0.0.0; advertise a routable host", b.source, "advertised")
    inter = spec.inter_broker_listener
    visible = {e.name for e in advertised} if advertised else set(names)
    if inter is not None and inter not in visible:
        yield Diagnostic("error", f"{where}: the inter-broker listener {inter} must be among its "
                         "(advertised) listeners; brokers refuse to drop it", b.source, "interBrokerListener")


def check_listeners(state: DesiredState) -> list[Diagnostic]:
    spec = state.listeners
    if spec is None:
        return []
    diags: list[Diagnostic] = []
    for b in spec.brokers.values():
        diags.extend(_broker(spec, b))
    if spec.inter_broker_listener and spec.inter_broker_listener not in spec.security_protocol_map:
        diags.append(Diagnostic("error", f"interBrokerListener {spec.inter_broker_listener} is not in "
                                "securityProtocolMap", spec.source, "interBrokerListener"))
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
