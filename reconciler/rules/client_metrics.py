"""Client-metrics subscriptions (kind ClientMetrics, `client-metrics/<name>`, KIP-714) as Kafka validates an
IncrementalAlterConfigs of a CLIENT_METRICS resource (`ClientMetricsConfigs.validate(name, props)`, 3.7-4.1):

* KRaft clusters of Kafka 3.7 or later: a ZooKeeper-mode broker refuses the resource type ("AlterConfigs is only
  supported for topics and brokers, but resource type is CLIENT_METRICS", `ZkAdminManager`, checked on a real 3.9.1
  broker) and registers no handler for it;
* known keys (`metrics`, `interval.ms`, `match`) and values of their type;
* `interval.ms` between 100 and 3600000 ("interval must be between 100 and 3600000 (1 hour)");
* each `match` entry `selector=regex` with a selector of `ALLOWED_MATCH_PARAMS` and a regular expression
  (`parseMatchingPatterns`: `Pattern.compile`; checked here with Python's `re`, whose syntax differs from Java's
  in corners: a pattern only Java reads is refused here, never written).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from reconciler.catalog import Catalog, version_tuple
from reconciler.errors import Diagnostic
from reconciler.model import DesiredEntity, DesiredState, EntityRef, SecretRef
from reconciler.units import parse_int
from reconciler.values import problem, shown

SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000


def check_client_metrics(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    subs = [(ref, e) for ref, e in state.entities.items() if ref.entity_type == "client-metrics"]
    if not subs:
        return []
    cluster, version = state.cluster, state.cluster.kafka_version
    if not cluster.is_kraft:
        return [Diagnostic("error", f"{ref.display}: client-metrics subscriptions need a KRaft cluster: a ZooKeeper-"
                           "mode broker refuses them (\"AlterConfigs is only supported for topics and brokers, but "
                           "resource type is CLIENT_METRICS\", ZkAdminManager)", e.source, ref.name) for ref, e in subs]
    if version_tuple(version)[:2] < (3, 7):
        return [Diagnostic("error", f"{ref.display}: client-metrics subscriptions need Kafka 3.7 or later "
                           f"(KIP-714); this cluster runs {version}", e.source, ref.name) for ref, e in subs]
    diags: list[Diagnostic] = []
    for ref, entity in sorted(subs):
        diags.extend(_subscription(catalog, ref, entity, version))
    return diags


def _subscription(catalog: Catalog, ref: EntityRef, entity: DesiredEntity, version: str) -> Iterator[Diagnostic]:
    for key, value in entity.config.items():
        base = catalog.entity_key("client-metrics", key, version)
        if base is None:
            yield Diagnostic("error", f"{ref.display}: unknown client-metrics config '{key}' (ClientMetricsConfigs: "
                             f"{', '.join(catalog.names('client-metrics', version))})", value.source, key)
            continue
        if isinstance(value.value, SecretRef):
            yield Diagnostic("error", f"{ref.display}: '{key}' is not a password; write its value", value.source, key)
            continue
        if (reason := problem(base, value.value)) is not None:
            yield Diagnostic("error", f"{ref.display}: invalid value '{shown(value.value)}' for '{key}': {reason}",
                             value.source, key)
            continue
        if key == "interval.ms":
            number = parse_int(value.value, 32)
            if number is not None and not MIN_INTERVAL_MS <= number <= MAX_INTERVAL_MS:
                yield Diagnostic("error", f"{ref.display}: Invalid value {number} for interval.ms, interval must be "
                                 f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour) (ClientMetricsConfigs)",
                                 value.source, key)
        elif key == "match":
            for item in (i for i in value.value.split(",") if i.strip()):
                if (why := _selector_problem(item.strip())) is not None:
                    yield Diagnostic("error", f"{ref.display}: match {shown(item)!r}: {why} "
                                     "(ClientMetricsConfigs.parseMatchingPatterns)", value.source, key)


def _selector_problem(item: str) -> str | None:
    selector, eq, pattern = item.partition("=")
    if not eq or not selector or not pattern:
        return "expected selector=regex"
    if selector.strip() not in SELECTORS:
        return f"unknown client selector {selector.strip()!r} (one of {', '.join(SELECTORS)})"
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None
