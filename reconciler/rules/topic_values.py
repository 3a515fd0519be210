"""Topic configs as `LogConfig.validateValues` / `validateTopicLogConfigValues` check them with the effective
broker defaults (issue 13; docs/kafka-validation.md). Kafka 3.9's `AdminZkClient.validateTopicConfig` runs
these before writing; a direct ZooKeeper write skips them and every broker then fails to build the topic's
`LogConfig` and ignores the change.

With `remote.storage.enable=true` (tiered storage, KIP-405; the key exists from 3.0):
  * a compacted topic is refused: "Remote log storage is unsupported for the compacted topics";
  * local.retention.ms/bytes must not be -1 while retention is limited, nor exceed it
    (validateRemoteStorageRetentionTime / validateRemoteStorageRetentionSize);
  * the brokers must run with remote.log.storage.system.enable=true (validateRemoteStorageOnlyIfSystemEnabled):
    an error when the declared server.properties say otherwise, a warning when none are declared.
Effective values are the topic's own, else the broker default the manifests give (`effective.resolve`).
"""

from __future__ import annotations

from collections.abc import Iterator

from reconciler.catalog import Catalog
from reconciler.effective import DesiredLayers, resolve
from reconciler.errors import Diagnostic
from reconciler.model import DesiredState, DesiredTopic, EntityRef, SourceRef
from reconciler.rules.broker_values import limited
from reconciler.units import parse_int

__all__ = ["check_topic_values"]

SYSTEM_KEY = "remote.log.storage.system.enable"


def _number(text: str | None) -> int | None:
    return parse_int(text)  # bounded: never int() of a 4,300-digit string


def _remote(state: DesiredState, catalog: Catalog, layers: DesiredLayers, topic: DesiredTopic) -> Iterator[Diagnostic]:
    enabled = topic.config.get("remote.storage.enable")
    if enabled is None or not isinstance(enabled.value, str) or enabled.value.strip().lower() != "true":
        return
    ref, version = EntityRef("topics", topic.name), state.cluster.kafka_version

    def value(key: str) -> tuple[str | None, SourceRef | None]:
        own = topic.config.get(key)
        source = own.source if own is not None else enabled.source
        return resolve(layers, catalog, ref, key, version=version).value, source

    policy, policy_at = value("cleanup.policy")
    if "compact" in (policy or "delete").lower():
        yield Diagnostic("error", f"topic {topic.name}: Remote log storage is unsupported for the compacted topics "
                         f"(cleanup.policy {policy}; LogConfig.validateNoRemoteStorageForCompactedTopic)",
                         policy_at, "cleanup.policy")
    for local_key, total_key in (("local.retention.ms", "retention.ms"), ("local.retention.bytes", "retention.bytes")):
        (local_text, local_at), (total_text, _) = value(local_key), value(total_key)
        local, total = _number(local_text), _number(total_text)
        if local is None or total is None or not limited(total_key, total) or local == -2:
            continue
        if local == -1:
            message = f"{local_key} must not be -1 as {total_key} value is set as {total}"
        elif local > total:
            message = f"{local_key} {local} must not be more than {total_key} property value: {total}"
        else:
            continue
        yield Diagnostic("error", f"topic {topic.name}: {message} (LogConfig.validateRemoteStorageRetention"
                         f"{'Time' if local_key.endswith('ms') else 'Size'})", local_at, local_key)
    yield from _system_enabled(state, topic, enabled.source)


def _system_enabled(state: DesiredState, topic: DesiredTopic, at: SourceRef | None) -> Iterator[Diagnostic]:
    declared = {b: props[SYSTEM_KEY].value for b, props in state.static.items() if SYSTEM_KEY in props}
    off = sorted(b for b, v in declared.items() if str(v).strip().lower() != "true")
    where = f"topic {topic.name}: remote.storage.enable=true needs {SYSTEM_KEY}=true on the brokers"
    kafka = "LogConfig.validateRemoteStorageOnlyIfSystemEnabled"
    if off:
        yield Diagnostic("error", f"{where}; the server.properties declared for broker(s) {', '.join(off)} set it "
                         f"to false: Tiered Storage functionality is disabled in the broker ({kafka})", at,
                         "remote.storage.enable")
    elif not declared or len(declared) < len(state.static):
        yield Diagnostic("warning", f"{where} (not set in the declared server.properties, so Kafka's default false "
                         f"is assumed; the broker refuses the config unless it is enabled: {kafka})", at,
                         "remote.storage.enable")


def check_topic_values(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    layers = DesiredLayers(state)
    diags: list[Diagnostic] = []
    for topic in state.topics.values():
        if "remote.storage.enable" in topic.config:
            diags.extend(_remote(state, catalog, layers, topic))
    return diags
