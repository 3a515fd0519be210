"""ELR (KIP-966) at plan time: a cluster that has eligible.leader.replicas.version >= 1 refuses broker-level
min.insync.replicas and the removal of the cluster-level one (ConfigurationControlManager, Kafka 4.0/4.1)."""

from __future__ import annotations

from dataclasses import replace

from reconciler.model import (
    DEFAULT_ENTITY,
    NO_ZOOKEEPER,
    AdminClientSpec,
    ClusterSpec,
    DesiredEntity,
    DesiredFeature,
    DesiredState,
    DesiredValue,
    EntityRef,
    KraftSpec,
    Policy,
    SourceRef,
    frozen_map,
)
from reconciler.rules.elr import check_elr, check_elr_live

AT = SourceRef("clusters/k/brokers.yaml", 5)
CLUSTER = ClusterSpec("k", "4.1", NO_ZOOKEEPER, (1, 2), kraft=KraftSpec(AdminClientSpec(("h:9092",))),
                      source=SourceRef("clusters/k/cluster.yaml", 1))


def state(*entities: tuple[str, dict[str, str]], prune: bool = False, elr: int | None = None) -> DesiredState:
    found = {}
    for name, config in entities:
        ref = EntityRef("brokers", name)
        found[ref] = DesiredEntity(ref, frozen_map({k: DesiredValue(v, AT) for k, v in config.items()}), AT)
    features = {} if elr is None else {"eligible.leader.replicas.version": DesiredFeature(
        "eligible.leader.replicas.version", str(elr), elr, SourceRef("clusters/k/features.yaml", 6))}
    cluster = replace(CLUSTER, policy=Policy(prune=prune))
    return DesiredState(cluster, frozen_map(found), frozen_map({}), features=frozen_map(features))


def messages(diags: list) -> list[str]:  # type: ignore[type-arg]
    return [d.message for d in diags]


def test_live_elr_refuses_broker_level_min_isr() -> None:
    desired = state(("1", {"min.insync.replicas": "1"}))
    (d,) = check_elr_live(desired, 1)
    assert d.source == AT and "Broker-level min.insync.replicas cannot be altered while ELR is enabled" in d.message
    assert "the cluster has eligible.leader.replicas.version=1" in d.message


def test_live_elr_requires_cluster_level_where_the_plan_would_remove_it() -> None:
    assert check_elr_live(state(), 1) == []  # brokers/<default> not managed: nothing removes it
    (d,) = check_elr_live(state((DEFAULT_ENTITY, {"num.io.threads": "8"})), 1)
    assert "declare min.insync.replicas in brokers/<default>" in d.message
    (d,) = check_elr_live(state(prune=True), 1)
    assert d.key == "min.insync.replicas"
    assert check_elr_live(state((DEFAULT_ENTITY, {"min.insync.replicas": "2"})), 1) == []
    ignoring = state((DEFAULT_ENTITY, {"num.io.threads": "8"}))
    ignoring = replace(ignoring, cluster=replace(ignoring.cluster, policy=Policy(ignore_keys=("min.insync.replicas",))))
    assert check_elr_live(ignoring, 1) == []  # policy.ignoreKeys: the plan leaves the live value alone


def test_live_elr_off_or_declared_leaves_it_to_the_offline_rule() -> None:
    assert check_elr_live(state(("1", {"min.insync.replicas": "1"})), 0) == []
    assert check_elr_live(state(("1", {"min.insync.replicas": "1"})), None) == []
    declared = state(("1", {"min.insync.replicas": "1"}), elr=1)
    assert check_elr_live(declared, 1) == []  # check_elr says it, once
    assert len(check_elr(declared)) == 2  # broker-level refused, cluster-level missing


def test_zookeeper_clusters_have_no_elr() -> None:
    zk = replace(state(("1", {"min.insync.replicas": "1"}), elr=1),
                 cluster=replace(CLUSTER, kraft=None, zookeeper=replace(NO_ZOOKEEPER, connect="h:2181")))
    assert check_elr(zk) == []
