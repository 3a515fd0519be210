"""Plan-time rules on listener configs that need the broker's current ones (docs/kafka-validation.md S04-S06).

`DynamicListenerConfig.validateReconfiguration` (2.8-3.9) compares, for every listener that exists before and
after the update, the broker's `listener.name.<l>.*` configs minus the reconfigurable ones (the SSL
keystore/truststore set `DynamicSecurityConfigs`, `max.connections`, `max.connection.creation.rate`,
`num.network.threads`): any difference and the broker refuses the whole update with "Configs cannot be
updated dynamically for existing listener <l>, restart broker or create a new listener for update". Those are
errors here. What only the broker can check (a new keystore's contents, metric reporter classes on its class
path) becomes a warning that says what Kafka will check when it applies the update.
Pure: standard library and the core only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredValue, EntityRef, LiveState, SecretRef, SourceRef

__all__ = ["check_listener_configs"]

# SslConfigs.RECONFIGURABLE_CONFIGS (DynamicSecurityConfigs), SocketServer / DataPlaneAcceptor
# ListenerReconfigurableConfigs: what may change on an existing listener
SSL_STORES = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
})
RECONFIGURABLE = SSL_STORES | {"max.connections", "max.connection.creation.rate", "num.network.threads"}
_NAME = re.compile(r"^\s*([^:/\s]+)://")
_UNKNOWN = object()  # a secret reference against a stored (encoded) value: equal or not, only the plan knows


def _names(value: str) -> set[str]:
    return {m.group(1).upper() for item in value.split(",") if (m := _NAME.match(item))}


def _live_layer(live: LiveState, ref: EntityRef) -> dict[str, str]:
    entity = live.entities.get(ref)
    return dict(entity.config) if entity is not None else {}


def _desired_layer(desired: DesiredState, ref: EntityRef) -> dict[str, DesiredValue] | None:
    """The entity's configs once applied (None: undeclared, so ZooKeeper's are kept)."""
    entity = desired.entities.get(ref)
    return dict(entity.config) if entity is not None else None


def _merged(desired: DesiredState, live: LiveState, broker: str) -> tuple[dict[str, str], dict[str, object]]:
    """(before, after) of `<default>` overlaid with the broker's own dynamic configs."""
    before: dict[str, str] = {}
    after: dict[str, object] = {}
    for ref in (EntityRef("brokers", DEFAULT_ENTITY), EntityRef("brokers", broker)):
        old = _live_layer(live, ref)
        before.update(old)
        new = _desired_layer(desired, ref)
        after.update(old if new is None else {k: v for k, v in new.items()})
    return before, after


def _value(v: object) -> object:
    if isinstance(v, DesiredValue):
        return _UNKNOWN if isinstance(v.value, SecretRef) else (v.value or "").strip()
    return v.strip() if isinstance(v, str) else v


def _where(v: object, fallback: SourceRef | None) -> SourceRef | None:
    return v.source if isinstance(v, DesiredValue) else fallback


def check_listener_configs(desired: DesiredState, live: LiveState) -> Iterator[Diagnostic]:
    for broker_id, reg in sorted(live.brokers.items()):
        broker = str(broker_id)
        entity = desired.entities.get(EntityRef("brokers", broker))
        fallback = entity.source if entity is not None else desired.cluster.source
        before, after = _merged(desired, live, broker)
        existing = {n for e in reg.endpoints for n in _names(e)} | _names(before.get("listeners", ""))
        new_value = after.get("listeners")
        kept = existing & (_names(str(_value(new_value))) if new_value is not None else existing)
        for name in sorted(kept):
            prefix = f"listener.name.{name.lower()}."
            keys = sorted({k for k in (*before, *after) if k.startswith(prefix)})
            for key in keys:
                base = key[len(prefix):]
                old, new = before.get(key), after.get(key)
                old_v, new_v = _value(old), _value(new)
                both = old is not None and new is not None
                if old_v == new_v or (both and _UNKNOWN in (old_v, new_v)):
                    continue  # unchanged, or a password whose change only the plan can tell (its risk says so)
                if base not in RECONFIGURABLE:
                    yield Diagnostic(
                        "error",
                        f"Configs cannot be updated dynamically for existing listener {name}, restart broker or "
                        f"create a new listener for update ({key} on broker {broker}; "
                        "DynamicListenerConfig.validateReconfiguration)",
                        _where(new, fallback), key,
                    )
                elif base in SSL_STORES and new is not None:
                    yield Diagnostic(
                        "warning",
                        f"{key} changes on broker {broker}: when it applies this, the broker checks the new store "
                        "(SslFactory.validateReconfiguration): the same number of entries, the same distinguished "
                        "name and subject alternative names (unless ssl.allow.dn.changes / ssl.allow.san.changes), "
                        "and for the inter-broker listener a certificate its truststore trusts; if that fails the "
                        "broker keeps the old store and ignores the whole update",
                        _where(new, fallback), key,
                    )
        yield from _metric_reporters(broker, before, after, fallback)


def _metric_reporters(broker: str, before: Mapping[str, str], after: Mapping[str, object],
                      fallback: SourceRef | None) -> Iterator[Diagnostic]:
    new = after.get("metric.reporters")
    if new is None or _value(new) == _value(before.get("metric.reporters", "")) or not _value(new):
        return
    yield Diagnostic(
        "warning",
        f"metric.reporters changes on broker {broker}: every class named must be on the broker's class path with a "
        "public no-argument constructor (DynamicMetricsReporters.validateReconfiguration); otherwise the broker "
        "ignores the whole update",
        _where(new, fallback), "metric.reporters",
    )
