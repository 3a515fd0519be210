"""Dynamic broker values a broker judges with context the manifests do not hold (docs/kafka-validation.md,
"Agreement with the brokers"): found by the validation corpus, where validate accepted what a real broker refused.
Each is a warning that says what Kafka checks and why the manifests cannot decide it, or an error where the value
alone decides (thread-pool steps and metric.reporters are decided by plan, against the brokers: S01, S06):

* class-valued keys (`principal.builder.class`, `ssl.engine.factory.class`, listener-prefixed callback handlers)
  are loaded by the brokers when they apply the update (`KafkaConfig.getConfiguredInstance`): a class missing from
  their class path, or not implementing the interface, is refused;
* listener keys set directly in a BrokerConfig (`listeners`, `advertised.listeners`,
  `listener.security.protocol.map`): a value that is no endpoint list or protocol map is refused by every broker
  (`CoreUtils.listenerListToEndPoints`, `KafkaConfig.getMap`): an error; a well-formed one is checked by each
  broker against its current listeners (`DynamicListenerConfig.validateReconfiguration`; a KRaft node's static
  controller listener too): a warning pointing at the Listeners kind, which plan checks against the brokers.
"""

from __future__ import annotations

from collections.abc import Iterator

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredValue, SecretRef
from reconciler.rules.listeners import parse_endpoint

LISTENER_KEYS = ("listeners", "advertised.listeners", "listener.security.protocol.map")


def check_broker_context(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    version = state.cluster.kafka_version
    diags: list[Diagnostic] = []
    for ref, entity in state.entities.items():
        if ref.entity_type != "brokers":
            continue
        for key, value in entity.config.items():
            if isinstance(value.value, SecretRef):
                continue
            base = catalog.resolve_broker(key, version).base
            if base is None or base.scope == "read-only":
                continue  # the key rules say why
            if base.type == "CLASS":  # metric.reporters (a LIST of classes): plan warns (rules/live.py, S06)
                diags.extend(_classes(key, value))
            elif key in LISTENER_KEYS and state.listeners is None:  # else the Listeners kind declares them
                diags.extend(_listener_key(key, value))
    return diags


def _classes(key: str, value: DesiredValue) -> Iterator[Diagnostic]:
    if not str(value.value).strip():
        return
    yield Diagnostic(
        "warning",
        f"{key}: the brokers load {str(value.value)!r} when they apply the update and refuse a class they cannot "
        "load or that does not implement the interface Kafka expects; the manifests cannot see their class path",
        value.source, key)


def _listener_key(key: str, value: DesiredValue) -> Iterator[Diagnostic]:
    text = str(value.value)
    items = [i.strip() for i in text.split(",") if i.strip()]
    if key == "listener.security.protocol.map":
        bad = next((i for i in items if i.count(":") != 1 or not all(i.split(":"))), None)
        problem = f"'{bad}' is not LISTENER:PROTOCOL" if bad is not None else None
    else:
        problem = next((p for i in items if isinstance(p := parse_endpoint(i), str)), None)
    if problem is not None:
        yield Diagnostic("error", f"{key} {text!r}: {problem}; every broker refuses it (KafkaConfig)",
                         value.source, key)
        return
    yield Diagnostic(
        "warning",
        f"{key} set directly: each broker checks it against its current listeners (an existing listener keeps its "
        "security protocol, the inter-broker and controller listeners stay; DynamicListenerConfig."
        "validateReconfiguration). Declare listeners with the Listeners kind, which plan checks against the "
        "brokers' registered endpoints",
        value.source, key)
