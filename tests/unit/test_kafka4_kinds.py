"""The Kafka 4.x kinds through the pure steps (issue 41): manifests -> desired entities, diff (features are never
lowered because undeclared, groups and subscriptions pruned like quotas), risk and the --allow-downgrade guard,
KRaft request building, verify expectations, import documents, the impact's counts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reconciler.apply import guard
from reconciler.catalog import load_catalog
from reconciler.diff import build_plan
from reconciler.errors import RefusedError
from reconciler.impact.kafka4 import section
from reconciler.importer.kafka4 import client_metrics_doc, features_doc, subscription
from reconciler.kraft.operations import operations
from reconciler.manifests.validate import load_and_validate
from reconciler.model import (
    FEATURES_ENTITY,
    NO_ZOOKEEPER,
    AdminClientSpec,
    ApplySettings,
    ClusterSpec,
    DesiredState,
    EntityRef,
    KraftSpec,
    LiveEntity,
    LiveState,
    Policy,
    frozen_map,
)
from reconciler.plan import Change, EntityPlan, Plan
from reconciler.risk import annotate
from reconciler.verify.expect import expectations
from tests.unit.kafka4_cases import client_metrics, features, groups, kraft_cluster

FEATURES = EntityRef("features", FEATURES_ENTITY)
CLUSTER = ClusterSpec("k", "4.1", NO_ZOOKEEPER, (1,), kraft=KraftSpec(AdminClientSpec(("h:9092",))))


def load(tmp_path: Path, *docs: str, cluster: str | None = None) -> DesiredState:
    root = tmp_path / "repo"
    (root / "clusters" / "k").mkdir(parents=True)
    (root / "clusters" / "k" / "cluster.yaml").write_text(cluster or kraft_cluster())
    (root / "clusters" / "k" / "k4.yaml").write_text("---\n".join(docs))
    _, states, diags = load_and_validate(root)
    assert not [d for d in diags if d.severity == "error"], [d.render() for d in diags]
    return states["k"]


def live(entities: dict[EntityRef, dict[str, str]]) -> LiveState:
    return LiveState("k", frozen_map({}), frozen_map({}),
                     frozen_map({r: LiveEntity(r, frozen_map(c), 0) for r, c in entities.items()}))


def test_manifests_become_config_entities(tmp_path: Path) -> None:
    state = load(tmp_path, groups("    orders: {consumer.session.timeout.ms: 50000}\n"),
                 client_metrics("    s:\n      metrics: [a.b., c.d.]\n      interval.ms: 60000\n"
                                "      match: {client_software_name: java, client_id: \"app-.*\"}\n"),
                 features('    metadata.version: "4.1"\n    group.version: 1\n'))
    entities = state.entities
    assert entities[EntityRef("groups", "orders")].config["consumer.session.timeout.ms"].value == "50000"
    sub = entities[EntityRef("client-metrics", "s")].config
    assert (sub["metrics"].value, sub["match"].value) == ("a.b.,c.d.", "client_software_name=java,client_id=app-.*")
    assert {k: v.value for k, v in entities[FEATURES].config.items()} == {"metadata.version": "27",
                                                                          "group.version": "1"}


def test_diff_plans_declared_levels_and_leaves_the_others(tmp_path: Path) -> None:
    state = load(tmp_path, features('    metadata.version: "4.1"\n    share.version: 1\n'))
    now = live({FEATURES: {"metadata.version": "27", "share.version": "0", "kraft.version": "1",
                           "eligible.leader.replicas.version": "1"}})
    plan, diags = build_plan(state, now)
    assert not diags
    (entity,) = plan.entities
    assert [(c.key, c.op, c.before, c.after) for c in entity.changes] == [("share.version", "~", "0", "1")]
    assert plan.ignored == 0  # undeclared levels are neither removed nor counted as keys left alone


def test_groups_compare_canonically_and_are_pruned(tmp_path: Path) -> None:
    state = load(tmp_path, groups("    orders: {consumer.session.timeout.ms: 50000}\n"))
    now = live({EntityRef("groups", "orders"): {"consumer.session.timeout.ms": " 50000"},
                EntityRef("groups", "old"): {"consumer.session.timeout.ms": "46000"}})
    plan, _ = build_plan(state, now)
    assert plan.entities == () and plan.unmanaged == ("groups/old",)
    pruned = replace(state, cluster=replace(state.cluster, policy=Policy(prune=True)))
    plan, _ = build_plan(pruned, now)
    (entity,) = plan.entities
    assert entity.ref == EntityRef("groups", "old") and [c.op for c in entity.changes] == ["-"]


def _feature_plan(before: str, after: str) -> Plan:
    return Plan("k", entities=(EntityPlan(FEATURES, 0, (Change("share.version", "~", before, after),)),))


def test_feature_changes_are_disruptive_and_downgrades_need_the_flag(tmp_path: Path) -> None:
    state = load(tmp_path, features("    share.version: 1\n"))
    up = annotate(_feature_plan("0", "1"), state, live({}))
    (change,) = up.entities[0].changes
    assert change.risk == "disruptive" and "upgraded from 0 to 1" in change.reasons[0]
    down = annotate(_feature_plan("1", "0"), state, live({}))
    assert "apply needs --allow-downgrade" in down.entities[0].changes[0].reasons[0]
    settings = ApplySettings(CLUSTER, frozen_map({}))
    guard(up, settings, allow_destructive=False)  # an upgrade passes
    with pytest.raises(RefusedError, match="--allow-downgrade"):
        guard(down, settings, allow_destructive=False)
    guard(down, settings, allow_destructive=False, allow_downgrade=True)


def test_kraft_requests_for_the_new_kinds() -> None:
    plan = Plan("k", entities=(
        EntityPlan(EntityRef("groups", "g"), 0, (Change("consumer.session.timeout.ms", "+", None, "50000"),)),
        EntityPlan(EntityRef("client-metrics", "s"), 0, (Change("interval.ms", "-", "60000"),)),
        EntityPlan(FEATURES, 0, (Change("metadata.version", "~", "25", "27"), Change("share.version", "~", "1", "0"))),
    ))
    ops = operations(plan, None)
    (features_step,) = ops.of("UpdateFeatures")
    assert [(u.feature, u.level, u.downgrade) for u in features_step.payloads] == [
        ("metadata.version", 27, False), ("share.version", 0, True)]
    configs = [p for s in ops.of("IncrementalAlterConfigs") for p in s.payloads]
    assert (32, "g", [("consumer.session.timeout.ms", 0, "50000")]) in configs  # ConfigResource.Type.GROUP, SET
    assert (16, "s", [("interval.ms", 1, None)]) in configs  # CLIENT_METRICS, DELETE
    names = [s.request for s in ops.steps]
    assert names.index("UpdateFeatures") < names.index("IncrementalAlterConfigs")  # levels before configs


def test_verify_expects_what_describe_configs_and_features_report() -> None:
    plan = Plan("k", entities=(
        EntityPlan(EntityRef("groups", "g"), 0, (Change("consumer.session.timeout.ms", "+", None, "50000"),)),
        EntityPlan(FEATURES, 0, (Change("share.version", "~", "0", "1"),)),
    ))
    found = {(e.kind, e.target, e.key, e.value, e.source) for e in expectations(plan, (1,))}
    assert found == {("resource", "groups/g", "consumer.session.timeout.ms", "50000", "DYNAMIC_GROUP_CONFIG"),
                     ("feature", FEATURES_ENTITY, "share.version", "1", None)}


class _Writer:
    def value(self, scope: str, name: str, live: str) -> object:
        return int(live) if live.isdigit() else live

    def config(self, scope: str, live: object) -> dict[str, object]:
        return {}


def test_import_writes_what_the_desired_builder_reads_back(tmp_path: Path) -> None:
    live_sub = {"metrics": "a.b.,c.d.", "interval.ms": "60000", "match": "client_id=app-.*,client_software_name=j"}
    sub = subscription(live_sub, _Writer())
    assert sub == {"interval.ms": 60000, "match": {"client_id": "app-.*", "client_software_name": "j"},
                   "metrics": ["a.b.", "c.d."]}
    now = live({EntityRef("client-metrics", "s"): live_sub,
                FEATURES: {"metadata.version": "27", "share.version": "0", "group.version": "1"}})
    doc = client_metrics_doc(now, _Writer())
    levels = features_doc(now, load_catalog(), "4.1")
    assert doc is not None and levels is not None
    assert levels["spec"]["features"] == {"group.version": 1, "metadata.version": "4.1-IV1"}  # 0: not finalized
    import yaml

    state = load(tmp_path, yaml.safe_dump(doc), yaml.safe_dump(levels))
    plan, _ = build_plan(state, now)
    assert plan.entities == ()  # the imported documents plan no changes


def test_impact_counts_the_new_kinds(tmp_path: Path) -> None:
    state = load(tmp_path, groups("    g: {consumer.session.timeout.ms: 50000}\n"
                                  "    h: {consumer.session.timeout.ms: 46000}\n"), features("    share.version: 1\n"))
    found = section({"k": state}, {("k", "groups", "g"): {"consumer.session.timeout.ms": "45000",
                                                          "consumer.heartbeat.interval.ms": "5000"},
                                   ("k", "groups", "h"): {"consumer.session.timeout.ms": "46000"},
                                   ("k", "features", FEATURES_ENTITY): {"share.version": "0"}})
    assert found["groupsChanged"] == 1 and found["featureLevelsChanged"] == 1
    (cluster,) = found["byCluster"]
    assert cluster["groups"] == {"entities": 1, "keys": 2}  # one changed, one removed
    assert cluster["featureLevels"] == [{"feature": "share.version", "from": "0", "to": "1"}]


def test_the_kafka_4_example_validates_without_a_warning() -> None:
    """examples/kafka4: a 4.1 KRaft cluster with features (ELR among them), group configs and subscriptions."""
    root = Path(__file__).resolve().parents[2] / "examples" / "kafka4"
    _, states, diags = load_and_validate(root)
    assert [d.render() for d in diags] == []
    state = states["events-eu-1"]
    assert {r.entity_type for r in state.entities} >= {"groups", "client-metrics", "features"}
    assert state.features["eligible.leader.replicas.version"].level == 1
