"""Broker and topic config keys as a broker's alter-config path would check them (ground truth §3.2, §4.1, §6).

A direct ZooKeeper write skips these checks and brokers silently drop what they dislike, so every rule
here names the key, says why Kafka refuses it and what to write instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from reconciler.catalog import Catalog, ConfigKey
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredValue, SecretRef
from reconciler.units import humanize, looks_like_seconds, parse_int, parse_number, unit_hint
from reconciler.values import canonical, problem, shown

ZK_MODE_BANNED_TRUE = ("remote.log.copy.disable", "remote.log.delete.on.disable")


def _unknown(catalog: Catalog, key: str, scope: str, version: str, what: str, value: DesiredValue) -> Diagnostic:
    newer = catalog.first_release(scope, key, version)  # a key only a newer line (or release) has
    if newer is not None:
        message = f"{what} '{key}' needs Kafka {newer} or later; this cluster runs {version}"
    else:
        hint = catalog.suggest(key, scope, version)
        message = f"unknown {what} '{key}'" + (f"; did you mean '{hint}'?" if hint else "")
    return Diagnostic("error", message, value.source, key)


def _value_problem(base: ConfigKey, key: str, value: DesiredValue) -> Diagnostic | None:
    if isinstance(value.value, SecretRef):
        return None  # secret rules decide where references are legal
    reason = problem(base, value.value)
    if reason is None:
        return None
    hint = unit_hint(key, value.value) or ""
    return Diagnostic("error", f"invalid value '{shown(value.value)}' for '{key}': {reason}{hint}", value.source,
                      key)


def check_broker_key(
    catalog: Catalog, entity: str, key: str, value: DesiredValue, version: str
) -> Iterator[Diagnostic]:
    info = catalog.resolve_broker(key, version)
    base = info.base
    if base is None:
        quota = catalog.quota("brokers", key, version)  # replication throttles: dynamic-only broker keys
        if catalog.removed("broker", key, version) is not None:
            return  # rules.cluster.removed_configs says which release removed it and what replaces it
        if quota is None:
            yield _unknown(catalog, key, "broker", version, "broker config", value)
        elif (problem := _value_problem(quota, key, value)) is not None:
            yield problem
        return
    if info.scope == "read-only":
        hint = catalog.suggest(key, "broker", version)
        use = f"; set '{hint}' instead, which is dynamic" if hint and hint != key else ""
        yield Diagnostic(
            "error",
            f"'{key}' is read-only: brokers read it from server.properties at startup only and ignore a dynamic "
            f"value (changing it needs a restart){use}",
            value.source,
            key,
        )
        return
    if base.listener_prefix_only and info.listener is None:
        yield Diagnostic(
            "error",
            f"'{key}' can be updated dynamically only per listener: write listener.name.<listener>.{key} "
            "(in the Listeners document's listenerConfigs)",
            value.source,
            key,
        )
        return
    if entity == DEFAULT_ENTITY and info.scope == "per-broker" and not info.password:
        yield Diagnostic(
            "error",
            f"'{key}' is a per-broker config: Kafka ignores it at the cluster default (brokers/<default>); "
            "set it in a BrokerConfig for each broker id",
            value.source,
            key,
        )
        return
    if (problem := _value_problem(base, key, value)) is not None:
        yield problem


def check_topic_key(catalog: Catalog, key: str, value: DesiredValue, version: str,
                    zookeeper: bool = True) -> Iterator[Diagnostic]:
    base = catalog.topic(key, version)
    if base is None:
        if catalog.removed("topic", key, version) is None:  # else rules.cluster.removed_configs reports it
            yield _unknown(catalog, key, "topic", version, "topic config", value)
        return
    if isinstance(value.value, SecretRef):
        yield Diagnostic("error", f"topic config '{key}' is not a password; write its value", value.source, key)
        return
    if (problem := _value_problem(base, key, value)) is not None:
        yield problem
    elif zookeeper and key in ZK_MODE_BANNED_TRUE and canonical(base, value.value) == "true":  # in any case
        yield Diagnostic(
            "error",
            f"it is invalid to set '{key}' to true in ZooKeeper mode (Kafka rejects it)",
            value.source,
            key,
        )


def _compaction_lags(config: dict[str, DesiredValue], where: str) -> Iterator[Diagnostic]:
    low, high = config.get("min.compaction.lag.ms"), config.get("max.compaction.lag.ms")
    if low is None or high is None or isinstance(low.value, SecretRef) or isinstance(high.value, SecretRef):
        return
    lo, hi = parse_int(low.value), parse_int(high.value)
    if lo is None or hi is None:
        return  # the value rule already reported it
    if lo > hi:
        yield Diagnostic(
            "error",
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi}) for {where}",
            low.source,
            "min.compaction.lag.ms",
        )


def seconds_in_ms(key: str, value: DesiredValue) -> Diagnostic | None:
    """A warning for `retention.ms: 604800`: Kafka reads milliseconds, so that is 10m4.8s, not the 7d it
    most likely meant (`units.looks_like_seconds` says which values look so)."""
    if not isinstance(value.value, str):
        return None
    meant = looks_like_seconds(key, value.value)
    seconds = parse_number(value.value)
    if meant is None or seconds is None:
        return None
    return Diagnostic(
        "warning",
        f"'{key}' is in milliseconds: {value.value} is {humanize(key, value.value) or value.value}; if you meant "
        f"{meant}, write {int(seconds) * 1000}",
        value.source,
        key,
    )


def check_configs(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    version = state.cluster.kafka_version
    diags: list[Diagnostic] = []
    for ref, entity in state.entities.items():
        if ref.entity_type != "brokers":
            continue
        for key, value in entity.config.items():
            diags.extend(check_broker_key(catalog, ref.name, key, value, version))
            if (warning := seconds_in_ms(key, value)) is not None:
                diags.append(warning)
    accepted: set[tuple[str, str]] = set()  # (key, value) pairs found valid: topics repeat a few values
    not_seconds: set[tuple[str, object]] = set()  # (key, value) pairs that do not look like seconds
    for topic in state.topics.values():
        for key, value in topic.config.items():
            pair = (key, value.value)
            if pair not in not_seconds:
                if (warning := seconds_in_ms(key, value)) is not None:
                    diags.append(warning)
                elif isinstance(value.value, str):
                    not_seconds.add(pair)
            if pair in accepted:
                continue
            problems = list(check_topic_key(catalog, key, value, version, not state.cluster.is_kraft))
            if problems:
                diags.extend(problems)
            elif isinstance(value.value, str):
                accepted.add((key, value.value))
        if "min.compaction.lag.ms" in topic.config and "max.compaction.lag.ms" in topic.config:
            diags.extend(_compaction_lags(dict(topic.config), f"topic {topic.name}"))
    return diags
