"""The Kafka 4.x entities a change set touches, counted (issue 41): per cluster, the group configs and
client-metrics subscriptions whose config changes (keys set, changed or removed, as plan would write them), and
each feature level that moves (feature, from, to). Live values come from the inventory's `configs` table (the
snapshot reads them as `plan` does); the rows are few, so they are collected and compared on the driver with
Kafka's canonical comparison (`values.equal`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reconciler import values
from reconciler.catalog import Catalog, load_catalog
from reconciler.model import DesiredState

if TYPE_CHECKING:
    from reconciler.impact.inventory import Inventory

KINDS = ("groups", "client-metrics", "features")
Live = Mapping[tuple[str, str, str], Mapping[str, str]]  # (cluster, entity type, entity) -> key -> value


def kafka4_summary(inv: Inventory, states: Mapping[str, DesiredState]) -> dict[str, Any]:
    """The summary's `kafka4` section, when a selected cluster declares a Kafka 4.x entity (else nothing)."""
    found = kafka4_section(inv, states)
    return {} if found is None else {"kafka4": found}


def kafka4_section(inv: Inventory, states: Mapping[str, DesiredState]) -> dict[str, Any] | None:
    """The section over the clusters that declare a Kafka 4.x entity (None when none does)."""
    from pyspark.sql import functions as F

    clusters = sorted(n for n, s in states.items()
                      if any(r.entity_type in KINDS for r in s.entities) or s.cluster.policy.prune)
    if not clusters:
        return None
    rows = (inv.configs.where(F.col("cluster").isin(clusters) & F.col("entity_type").isin(list(KINDS)))
            .select("cluster", "entity_type", "entity", "key", "value").collect())
    live: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        live.setdefault((r["cluster"], r["entity_type"], r["entity"]), {})[r["key"]] = r["value"]
    return section({n: states[n] for n in clusters}, live)


def section(states: Mapping[str, DesiredState], live: Live, catalog: Catalog | None = None) -> dict[str, Any]:
    catalog = catalog or load_catalog()
    by_cluster: list[dict[str, Any]] = []
    for name, state in sorted(states.items()):
        version = state.cluster.kafka_version
        counts: dict[str, dict[str, int]] = {k: {"entities": 0, "keys": 0} for k in ("groups", "client-metrics")}
        levels = []
        declared = {(r.entity_type, r.name): e for r, e in state.entities.items() if r.entity_type in KINDS}
        for (kind, entity), want in sorted(declared.items()):
            have = live.get((name, kind, entity), {})
            if kind == "features":
                features = catalog.features(version)
                for key, value in sorted(want.config.items()):
                    before = have.get(key, "0")
                    if str(value.value) != before:
                        feature = features.get(key)
                        show = feature.display if feature is not None else str
                        levels.append({"feature": key, "from": show(int(before)), "to": show(int(str(value.value)))})
                continue
            changed = _changed(catalog, version, kind, {k: str(v.value) for k, v in want.config.items()}, have)
            if changed:
                counts[kind]["entities"] += 1
                counts[kind]["keys"] += changed
        if state.cluster.policy.prune:  # undeclared groups and subscriptions lose every key
            for (cluster, kind, entity), have in live.items():
                if cluster == name and kind in counts and (kind, entity) not in declared and have:
                    counts[kind]["entities"] += 1
                    counts[kind]["keys"] += len(have)
        if any(c["entities"] for c in counts.values()) or levels:
            by_cluster.append({"cluster": name, "groups": counts["groups"], "clientMetrics": counts["client-metrics"],
                               "featureLevels": levels})
    return {"groupsChanged": sum(c["groups"]["entities"] for c in by_cluster),
            "subscriptionsChanged": sum(c["clientMetrics"]["entities"] for c in by_cluster),
            "featureLevelsChanged": sum(len(c["featureLevels"]) for c in by_cluster),
            "byCluster": by_cluster}


def _changed(catalog: Catalog, version: str, kind: str, want: Mapping[str, str], have: Mapping[str, str]) -> int:
    """Keys plan would write: set or changed (canonically different), and removed (live, not declared)."""
    out = 0
    for key in want.keys() | have.keys():
        same = key in want and key in have and values.equal(catalog.entity_key(kind, key, version), want[key],
                                                             have[key])
        out += not same
    return out


def markdown(k4: Mapping[str, Any] | None, cell: Any) -> list[str]:
    """The report's lines: totals, then one row per cluster (group configs, subscriptions, feature levels)."""
    if not k4 or not k4["byCluster"]:
        return []
    lines = ["", "### Kafka 4.x entities", "",
             f"{k4['groupsChanged']:,} group config(s), {k4['subscriptionsChanged']:,} client-metrics "
             f"subscription(s) and {k4['featureLevelsChanged']:,} feature level(s) change", "",
             "| cluster | group configs (keys) | subscriptions (keys) | feature levels |", "|---|---|---|---|"]
    for c in k4["byCluster"]:
        levels = ", ".join(f"{cell(f['feature'])} {cell(f['from'])} → {cell(f['to'])}" for f in c["featureLevels"])
        lines.append(f"| {cell(c['cluster'])} | {c['groups']['entities']} ({c['groups']['keys']}) | "
                     f"{c['clientMetrics']['entities']} ({c['clientMetrics']['keys']}) | {levels or '—'} |")
    return lines
