"""Group configs (kind Groups, `groups/<group id>`) as a Kafka 4.x controller validates an IncrementalAlterConfigs of
a GROUP resource (`ControllerConfigurationValidator` -> `GroupConfig.validate(props, GroupCoordinatorConfig,
ShareGroupConfig)`):

* KRaft clusters of Kafka 4.0 or later only (ConfigResource.Type.GROUP is new in 4.0, KIP-848);
* known keys of the cluster's line (`GroupConfig.validateNames`; a key only 4.1 has needs 4.1), values of their
  type and validator (`ConfigDef.parse`);
* `GroupConfig.validateValues`, on the group's config with GroupConfig's defaults for keys not set: each value
  within its broker-level bounds (`consumer.session.timeout.ms` between `group.consumer.min.session.timeout.ms`
  and `group.consumer.max.session.timeout.ms`, ...), and each session timeout greater than its heartbeat interval.
  The bounds are static broker configs: from the declared server.properties an error; assumed to be Kafka's
  default (no server.properties declared) a warning that says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from reconciler.catalog import Catalog, version_tuple
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredEntity, DesiredState, EntityRef, SecretRef, SourceRef
from reconciler.units import parse_int
from reconciler.values import problem, shown

# GroupConfig.validateValues: group key -> (broker key of its lower bound, of its upper bound); None: no bound
BOUNDS: dict[str, tuple[str | None, str | None]] = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms",
                                      "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
}
# each session timeout must be greater than its heartbeat interval
PAIRS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
         ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
         ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


def check_groups(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    groups = [(ref, e) for ref, e in state.entities.items() if ref.entity_type == "groups"]
    if not groups:
        return []
    cluster, version = state.cluster, state.cluster.kafka_version
    if not cluster.is_kraft or version_tuple(version)[:2] < (4, 0):
        what = "a ZooKeeper-mode cluster has none" if not cluster.is_kraft else f"this cluster runs {version}"
        return [Diagnostic("error", f"{ref.display}: group configs need a KRaft cluster of Kafka 4.0 or later "
                           f"(ConfigResource.Type.GROUP, KIP-848); {what}", e.source, ref.name) for ref, e in groups]
    diags: list[Diagnostic] = []
    for ref, entity in sorted(groups):
        diags.extend(_keys(catalog, ref, entity, version))
        diags.extend(_values(state, catalog, ref, entity))
    return diags


def _keys(catalog: Catalog, ref: EntityRef, entity: DesiredEntity, version: str) -> Iterator[Diagnostic]:
    for key, value in entity.config.items():
        base = catalog.entity_key("group", key, version)
        if base is None:
            newer = catalog.first_release("group", key, version)
            hint = catalog.suggest(key, "group", version)
            message = (f"group config '{key}' needs Kafka {newer} or later; this cluster runs {version}" if newer
                       else f"unknown group config '{key}'" + (f"; did you mean '{hint}'?" if hint else "")
                       + f" (GroupConfig: {', '.join(catalog.names('group', version))})")
            yield Diagnostic("error", f"{ref.display}: {message}", value.source, key)
        elif isinstance(value.value, SecretRef):
            yield Diagnostic("error", f"{ref.display}: group config '{key}' is not a password; write its value",
                             value.source, key)
        elif (reason := problem(base, value.value)) is not None:
            yield Diagnostic("error", f"{ref.display}: invalid value '{shown(value.value)}' for '{key}': {reason}",
                             value.source, key)


def _effective(catalog: Catalog, entity: DesiredEntity, version: str) -> dict[str, tuple[int, SourceRef | None]]:
    """The group's values as GroupConfig parses them: declared, else GroupConfig's default (source None)."""
    out = {}
    for key in catalog.names("group", version):
        declared = entity.config.get(key)
        text = declared.value if declared is not None and isinstance(declared.value, str) else None
        if text is None:
            base = catalog.entity_key("group", key, version)
            text, source = (base.default if base else None), None
        else:
            source = declared.source if declared is not None else None
        number = parse_int(text, 32)
        if number is not None:
            out[key] = (number, source)
    return out


def _broker_bound(state: DesiredState, catalog: Catalog, key: str) -> tuple[int, bool] | None:
    """A static broker bound: (value, declared) from the declared server.properties, else Kafka's default."""
    for broker in (DEFAULT_ENTITY, "default", *(str(b) for b in state.cluster.brokers)):
        raw = state.static.get(broker, {}).get(key)
        if raw is not None and isinstance(raw.value, str) and (n := parse_int(raw.value, 32)) is not None:
            return n, True
    base = catalog.broker(key, state.cluster.kafka_version)
    default = parse_int(base.default, 32) if base is not None else None
    return None if default is None else (default, False)


def _values(state: DesiredState, catalog: Catalog, ref: EntityRef, entity: DesiredEntity) -> Iterator[Diagnostic]:
    version = state.cluster.kafka_version
    for key, value in entity.config.items():  # GroupConfig.validateValues runs only once every value parses
        base = catalog.entity_key("group", key, version)
        if base is None or not isinstance(value.value, str) or problem(base, value.value) is not None:
            return
    values = _effective(catalog, entity, version)
    for key, (low_key, high_key) in BOUNDS.items():
        if key not in values or values[key][1] is None:
            continue  # a default never crosses the default bounds; only declared values are judged
        number, source = values[key]
        for bound_key, below in ((low_key, True), (high_key, False)):
            bound = _broker_bound(state, catalog, bound_key) if bound_key else None
            if bound is None or (number >= bound[0] if below else number <= bound[0]):
                continue
            relation = "greater than or equal to" if below else "less than or equal to"
            kafka = f"\"{key} must be {relation} {bound_key}\" (GroupConfig.validateValues)"
            if bound[1]:
                yield Diagnostic("error", f"{ref.display}: {key} {number} is refused: {kafka}; the brokers' "
                                 f"server.properties set {bound_key}={bound[0]}", source, key)
            else:
                yield Diagnostic("warning", f"{ref.display}: {key} {number}: if the brokers run with Kafka's default "
                                 f"{bound_key}={bound[0]} (no server.properties declared), they refuse it: {kafka}",
                                 source, key)
    for session, heartbeat in PAIRS:
        if session in values and heartbeat in values and values[session][0] <= values[heartbeat][0]:
            if values[session][1] is None and values[heartbeat][1] is None:
                continue
            where = values[session][1] or values[heartbeat][1]
            yield Diagnostic("error", f"{ref.display}: {session} {values[session][0]} must be greater than "
                             f"{heartbeat} {values[heartbeat][0]} (GroupConfig.validateValues; a key not set takes "
                             "GroupConfig's default)", where, session if values[session][1] else heartbeat)
