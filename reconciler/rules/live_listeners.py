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
from typing import Literal

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


def _layers(desired: DesiredState, live: LiveState, broker: str) -> tuple[
        dict[str, object], dict[str, object], dict[str, object]]:
    """(declared server.properties, dynamic configs before, dynamic configs after): `<default>` overlaid with
    the broker's own, in ZooKeeper now and once the plan is applied (undeclared entities keep theirs)."""
    static: dict[str, object] = dict(desired.static.get(broker) or desired.static.get(DEFAULT_ENTITY) or {})
    before: dict[str, object] = {}
    after: dict[str, object] = {}
    for ref in (EntityRef("brokers", DEFAULT_ENTITY), EntityRef("brokers", broker)):
        old = _live_layer(live, ref)
        before.update(old)
        new = _desired_layer(desired, ref)
        after.update(old if new is None else new)
    return static, before, after


def _value(v: object) -> object:
    if isinstance(v, DesiredValue):
        return _UNKNOWN if isinstance(v.value, SecretRef) else (v.value or "").strip()
    return v.strip() if isinstance(v, str) else v


def _where(v: object, fallback: SourceRef | None) -> SourceRef | None:
    return v.source if isinstance(v, DesiredValue) else fallback


_Finding = tuple[Literal["error", "warning"], str, SourceRef | None, str]


def check_listener_configs(desired: DesiredState, live: LiveState) -> Iterator[Diagnostic]:
    """Per (severity, message, line, key) once, naming every broker it concerns."""
    found: dict[_Finding, list[str]] = {}
    for broker_id, reg in sorted(live.brokers.items()):
        for severity, message, where, key in _broker(desired, live, str(broker_id), reg.endpoints):
            found.setdefault((severity, message, where, key), []).append(str(broker_id))
    for (severity, message, where, key), brokers in found.items():
        yield Diagnostic(severity, message.replace("{brokers}", f"broker(s) {', '.join(brokers)}"), where, key)




def _broker(desired: DesiredState, live: LiveState, broker: str, endpoints: tuple[str, ...]) -> Iterator[_Finding]:
    """The broker compares its whole old and new config (server.properties included). The declared
    server.properties may list only part of the real file, so a side that is in neither it nor the dynamic
    configs is unknown: a warning, not an error."""
    entity = desired.entities.get(EntityRef("brokers", broker))
    fallback = entity.source if entity is not None else desired.cluster.source
    static, before, after = _layers(desired, live, broker)
    existing = {n for e in endpoints for n in _names(e)} | _names(str(_value(before.get("listeners", ""))))
    new_value = after.get("listeners")
    kept = existing & (_names(str(_value(new_value))) if new_value is not None else existing)
    for name in sorted(kept):
        prefix = f"listener.name.{name.lower()}."
        stores: list[tuple[str, SourceRef | None]] = []  # SSL store settings that change: one warning for them
        for key in sorted({k for k in (*before, *after) if k.startswith(prefix)}):
            if _value(before.get(key)) == _value(after.get(key)):
                continue  # the dynamic configs do not change it
            base = key[len(prefix):]
            old, new = before.get(key, static.get(key)), after.get(key, static.get(key))
            old_v, new_v = _value(old), _value(new)
            known = old is not None and new is not None
            if known and (old_v == new_v or _UNKNOWN in (old_v, new_v)):
                continue  # as in server.properties, or a password whose change only the plan can tell
            where = _where(after.get(key), _where(before.get(key), fallback))
            if base not in RECONFIGURABLE and known:
                yield ("error", f"Configs cannot be updated dynamically for existing listener {name}, restart broker "
                       f"or create a new listener for update ({key} on {{brokers}}; "
                       "DynamicListenerConfig.validateReconfiguration)", where, key)
            elif base not in RECONFIGURABLE:
                yield ("warning", f"{key} changes on the existing listener {name} on {{brokers}}: Kafka refuses it "
                       "(\"Configs cannot be updated dynamically for existing listener\", DynamicListenerConfig."
                       "validateReconfiguration) unless server.properties already has the same value, and the declared "
                       "server.properties do not show it", where, key)
            elif base in SSL_STORES and after.get(key) is not None:
                stores.append((key, where))
        if stores:
            keys = ", ".join(k for k, _ in stores)
            yield ("warning", f"the SSL store settings of listener {name} change on {{brokers}} ({keys}): when it "
                   "applies this, the broker checks the new store (SslFactory.validateReconfiguration): the same "
                   "number of entries, the same distinguished name and subject alternative names (unless "
                   "ssl.allow.dn.changes / ssl.allow.san.changes), and for the inter-broker listener a "
                   "certificate its truststore trusts; if that fails the broker keeps the old store and ignores "
                   "the whole update", stores[0][1], stores[0][0])
    yield from _keystore_removals(static, before, after, existing, fallback)
    yield from _metric_reporters(before, after, fallback)


# A keystore is configured when one of these is set (SslFactory / DefaultSslEngineFactory: a file or a PEM key).
_KEYSTORE = ("ssl.keystore.location", "ssl.keystore.key")


def _keystore_removals(static: Mapping[str, object], before: Mapping[str, object], after: Mapping[str, object],
                       existing: set[str], fallback: SourceRef | None) -> Iterator[_Finding]:
    """Removing a listener's keystore, seen refused by Kafka 3.9 brokers: `SslFactory.validateReconfiguration`
    fails with "Cannot remove the SSL keystore from an existing listener for which a keystore was configured",
    and the broker ignores the whole update. It does so even once the listener is gone: `SocketServer`
    registers each processor's channel builder as a Reconfigurable (`createSelector`) and `removeListeners`
    unregisters only the acceptor, so the SSL factory of a removed listener keeps validating until the broker
    restarts. On a listener that exists now: an error. On one removed earlier: a warning, since only the
    brokers know whether they restarted since."""
    names = {k.split(".")[2] for k in before if k.startswith("listener.name.") and k.count(".") >= 3}
    for name in sorted(names):
        prefix = f"listener.name.{name}."
        gone = [prefix + k for k in _KEYSTORE
                if before.get(prefix + k) is not None and after.get(prefix + k, static.get(prefix + k)) is None]
        if not gone:
            continue
        where = _where(before.get(gone[0]), fallback)
        if name.upper() in existing:
            yield ("error", f"removing the SSL keystore of the existing listener {name.upper()} on {{brokers}}: "
                   "Kafka refuses it and ignores the whole update (\"Cannot remove the SSL keystore from an "
                   "existing listener for which a keystore was configured\", SslFactory.validateReconfiguration); "
                   "remove the listener first, keep its keystore settings until the brokers have restarted "
                   "without it, then remove them", where, gone[0])
        else:
            yield ("warning", f"removing the SSL keystore settings of the removed listener {name.upper()} on "
                   "{brokers}: a broker that has not restarted since the listener was removed still holds its SSL "
                   "channel builder (SocketServer.createSelector registers it; removeListeners does not remove it) "
                   "and refuses the whole update (\"Cannot remove the SSL keystore from an existing listener\"); "
                   "apply after a rolling restart, and check with apply --verify", where, gone[0])


def _metric_reporters(before: Mapping[str, object], after: Mapping[str, object],
                      fallback: SourceRef | None) -> Iterator[_Finding]:
    new = after.get("metric.reporters")
    if new is None or _value(new) == _value(before.get("metric.reporters", "")) or not _value(new):
        return
    yield ("warning", "metric.reporters changes on {brokers}: every class named must be on the broker's class path "
           "with a public no-argument constructor (DynamicMetricsReporters.validateReconfiguration); otherwise the "
           "broker ignores the whole update", _where(new, fallback), "metric.reporters")
