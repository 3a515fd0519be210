"""Group configs and client-metrics subscriptions of a KRaft cluster through its Admin API, as kafka-configs.sh
--entity-type groups|client-metrics reads and writes them: config resources of type GROUP (32, Kafka 4.0+) and
CLIENT_METRICS (16, 3.7+), listed with ListConfigResources (KIP-1142: 4.1 lists groups with configs even when the
group does not exist; 3.7-4.0 list client-metrics resources only, and a 4.0 cluster's groups are those declared),
read with DescribeConfigs (the entries whose source is DYNAMIC_GROUP_CONFIG / DYNAMIC_CLIENT_METRICS_CONFIG) and
written with IncrementalAlterConfigs (kraft/write.py, like topics)."""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.kraft.admin import KraftAdmin
from reconciler.kraft.read import dynamic_values
from reconciler.model import EntityRef, LiveEntity, frozen_map

GROUP, CLIENT_METRICS = 32, 16  # ConfigResource.Type
DYNAMIC_CLIENT_METRICS_CONFIG, DYNAMIC_GROUP_CONFIG = 7, 8  # DescribeConfigsResponse.ConfigSource
RESOURCES = {"groups": (GROUP, "GROUP", DYNAMIC_GROUP_CONFIG),
             "client-metrics": (CLIENT_METRICS, "CLIENT_METRICS", DYNAMIC_CLIENT_METRICS_CONFIG)}


def resource_type(entity_type: str) -> int | None:
    found = RESOURCES.get(entity_type)
    return None if found is None else found[0]


def listed(admin: KraftAdmin, entity_type: str) -> set[str]:
    """The resources of `entity_type` the cluster lists (empty when it cannot list them: a 4.0 cluster's groups)."""
    _rtype, name, _source = RESOURCES[entity_type]
    try:
        answer = admin._admin.list_config_resources([name])
    except Exception:  # kafka-python: an older ListConfigResources version without resource types
        return set()
    return {str(n) for n in answer.get(name.lower(), answer.get(name, ()))}  # kafka-python: "group", "client_metrics"


def read_entities(admin: KraftAdmin, entity_types: Iterable[str], declared: Iterable[EntityRef]
                  ) -> dict[EntityRef, LiveEntity]:
    """The group and client-metrics entities with dynamic config: those listed and those declared."""
    out: dict[EntityRef, LiveEntity] = {}
    wanted = set(entity_types)
    for entity_type, (rtype, _name, source) in RESOURCES.items():
        names = {r.name for r in declared if r.entity_type == entity_type}
        if entity_type in wanted:
            names |= listed(admin, entity_type)
        if not names:
            continue
        for name, configs in admin.describe_configs(rtype, sorted(names)).items():
            values = dynamic_values(configs, source)
            if values:
                ref = EntityRef(entity_type, name)
                out[ref] = LiveEntity(ref, frozen_map(values), 0)
    return out
