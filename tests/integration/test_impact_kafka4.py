"""The impact job counts the Kafka 4.x entities a change set touches (issue 41), on a real SparkSession: the
inventory's configs rows of groups, client-metrics subscriptions and feature levels (as `snapshot` writes them from
a KRaft cluster's live state) against the manifests of examples/kafka4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.impact.frames import local_df
from reconciler.impact.inventory import SCHEMAS, live_rows
from reconciler.impact.kafka4 import kafka4_section, markdown
from reconciler.manifests.validate import load_and_validate
from reconciler.model import EntityRef, LiveEntity, LiveState, frozen_map

LAG = "org.apache.kafka.consumer.fetch.manager.records.lag"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kafka4"


class _Inventory:
    def __init__(self, configs: Any) -> None:
        self.configs = configs


def test_impact_counts_group_subscription_and_feature_changes(spark: Any) -> None:
    _, states, diags = load_and_validate(EXAMPLE)
    assert not diags
    live = LiveState("events-eu-1", frozen_map({}), frozen_map({}), frozen_map({
        ref: LiveEntity(ref, frozen_map(config), 0) for ref, config in {
            EntityRef("groups", "orders-service"): {"consumer.session.timeout.ms": "45000",
                                                    "consumer.heartbeat.interval.ms": "5000"},
            EntityRef("client-metrics", "consumer-lag"): {"metrics": LAG, "interval.ms": "30000"},
            EntityRef("features", "cluster"): {"metadata.version": "25", "group.version": "1",
                                               "transaction.version": "2", "share.version": "0",
                                               "eligible.leader.replicas.version": "1"},
        }.items()}))
    rows = live_rows(live)["configs"]  # what snapshot writes for a KRaft cluster's live state
    assert ("events-eu-1", "features", "cluster", "metadata.version", "25") in rows
    found = kafka4_section(_Inventory(local_df(spark, rows, SCHEMAS["configs"])), states)  # type: ignore[arg-type]
    assert found is not None
    (cluster,) = found["byCluster"]
    # orders-service: session 45000 -> 50000; payments-workers: new (3 keys); consumer-lag in sync;
    # producer-latency: new (3 keys)
    assert cluster["groups"] == {"entities": 2, "keys": 4}
    assert cluster["clientMetrics"] == {"entities": 1, "keys": 3}
    assert cluster["featureLevels"] == [{"feature": "metadata.version", "from": "4.0-IV3 (25)", "to": "4.1-IV1 (27)"},
                                        {"feature": "share.version", "from": "0", "to": "1"}]
    text = "\n".join(markdown(found, str))
    assert "| events-eu-1 | 2 (4) | 1 (3) | metadata.version 4.0-IV3 (25) → 4.1-IV1 (27), share.version 0 → 1 |" in text
