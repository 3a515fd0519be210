"""risk: every rule fires on its case and stays quiet on the near miss; annotate's inherited values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.model import (
    DEFAULT_ENTITY,
    ChangeOp,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    ZooKeeperSpec,
)
from reconciler.plan import Change, EntityPlan, Plan
from reconciler.risk import RISK_RULES, annotate, assess, rule_key, rules_for_key

TOPIC = EntityRef("topics", "orders")
DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
B1 = EntityRef("brokers", "1")
CLIENT = EntityRef("clients", "billing")
IP = EntityRef("ips", DEFAULT_ENTITY)
PMAP = "listener.security.protocol.map"
OVERRIDES = "max.connections.per.ip.overrides"
KEYSTORE = "listener.name.ext.ssl.keystore.password"
CHANGED: dict[str, Any] = {"redacted": "changed"}

# (rule id that must fire or None for safe, entity, key, op, before, after, extra keyword arguments)
Case = tuple[str | None, EntityRef, str, ChangeOp, str | None, str | None, dict[str, Any]]
CASES: list[Case] = [
    # retention: -1 is infinite, a raise or a move to infinite is safe
    ("retention-lowered", TOPIC, "retention.ms", "~", "604800000", "86400000", {}),
    ("retention-lowered", TOPIC, "retention.ms", "~", "-1", "86400000", {}),
    ("retention-lowered", DEFAULT, "log.retention.ms", "~", "604800000", "3600000", {}),
    ("retention-lowered", TOPIC, "retention.ms", "+", None, "86400000", {"inherited": "604800000"}),
    ("retention-lowered", TOPIC, "retention.ms", "-", "2592000000", None, {"inherited": "604800000"}),
    (None, TOPIC, "retention.ms", "~", "86400000", "-1", {}),
    (None, TOPIC, "retention.ms", "~", "86400000", "604800000", {}),
    (None, TOPIC, "retention.ms", "~", "86400000", " 86400000 ", {}),
    (None, TOPIC, "retention.ms", "-", "86400000", None, {"inherited": "604800000"}),
    ("retention-bytes-lowered", TOPIC, "retention.bytes", "~", "-1", "1073741824", {}),
    ("retention-bytes-lowered", DEFAULT, "log.retention.bytes", "~", "2147483648", "1073741824", {}),
    (None, TOPIC, "retention.bytes", "~", "1073741824", "-1", {}),
    ("local-retention-lowered", TOPIC, "local.retention.ms", "~", "-2", "3600000", {}),
    ("local-retention-lowered", DEFAULT, "log.local.retention.bytes", "~", "1073741824", "1048576", {}),
    (None, TOPIC, "local.retention.ms", "~", "3600000", "-2", {}),
    ("delete-retention-lowered", TOPIC, "delete.retention.ms", "~", "86400000", "60000", {}),
    ("delete-retention-lowered", DEFAULT, "log.cleaner.delete.retention.ms", "~", "86400000", "1000", {}),
    (None, TOPIC, "delete.retention.ms", "~", "60000", "86400000", {}),
    ("cleanup-policy-changed", TOPIC, "cleanup.policy", "~", "delete", "compact", {}),
    ("cleanup-policy-changed", DEFAULT, "log.cleanup.policy", "~", "delete", "compact,delete", {}),
    ("cleanup-policy-changed", TOPIC, "cleanup.policy", "+", None, "compact", {"inherited": "delete"}),
    (None, TOPIC, "cleanup.policy", "~", "compact,delete", "delete, compact", {}),
    (None, TOPIC, "cleanup.policy", "-", "delete", None, {"inherited": "delete"}),
    ("unclean-leader-election-enabled", TOPIC, "unclean.leader.election.enable", "~", "false", "true", {}),
    ("unclean-leader-election-enabled", DEFAULT, "unclean.leader.election.enable", "+", None, "TRUE",
     {"inherited": "false"}),
    (None, TOPIC, "unclean.leader.election.enable", "~", "true", "false", {}),
    ("min-isr-above-rf", TOPIC, "min.insync.replicas", "~", "2", "4", {"topic_rf": 3}),
    ("min-isr-above-rf", TOPIC, "min.insync.replicas", "-", "1", None, {"topic_rf": 1, "inherited": "2"}),
    ("min-isr-above-rf", DEFAULT, "min.insync.replicas", "~", "1", "3", {"rf_histogram": {2: 5, 3: 10}}),
    ("min-isr-above-rf", DEFAULT, "min.insync.replicas", "~", "1", "3", {"min_rf_in_cluster": 2}),
    (None, DEFAULT, "min.insync.replicas", "~", "3", "2", {"rf_histogram": {1: 4}}),  # already above: a cut
    # equal to the RF is not above it: only the (disruptive) raise fires
    ("min-isr-raised", DEFAULT, "min.insync.replicas", "~", "1", "2", {"rf_histogram": {2: 4, 3: 1}}),
    ("max-message-lowered", TOPIC, "max.message.bytes", "~", "1048588", "524288", {}),
    ("max-message-lowered", DEFAULT, "message.max.bytes", "~", "10485760", "1048588", {}),
    (None, TOPIC, "max.message.bytes", "~", "1048588", "10485760", {}),
    ("listener-removed", B1, "listeners", "~", "A://:9092,B://:9093", "A://:9092", {}),
    ("listener-removed", B1, "advertised.listeners", "~", "A://a:9092", "A://b:9092", {}),
    ("listener-removed", B1, "listeners", "-", "A://:9092,B://:9093", None, {"inherited": "A://:9092"}),
    (None, B1, "listeners", "~", "A://:9092", "A://:9092,B://:9093", {}),
    ("protocol-map-changed", B1, PMAP, "~", "A:PLAINTEXT,B:SSL", "A:PLAINTEXT", {}),
    ("protocol-map-changed", B1, PMAP, "~", "A:PLAINTEXT", "A:SSL", {}),
    (None, B1, PMAP, "~", "A:PLAINTEXT", "A:PLAINTEXT,B:SSL", {}),
    ("security-option-removed", B1, "listener.name.ext.sasl.enabled.mechanisms", "~", "PLAIN,SCRAM-SHA-512",
     "SCRAM-SHA-512", {}),
    (None, B1, "sasl.enabled.mechanisms", "~", "PLAIN", "PLAIN,SCRAM-SHA-512", {}),
    ("ssl-client-auth-changed", B1, "listener.name.ext.ssl.client.auth", "~", "none", "required", {}),
    (None, B1, "ssl.client.auth", "~", "required", "required", {}),
    ("threads-reduced", DEFAULT, "num.io.threads", "~", "16", "8", {}),
    ("threads-reduced", DEFAULT, "listener.name.internal.num.network.threads", "~", "8", "4", {}),
    ("threads-reduced", B1, "log.cleaner.threads", "-", "4", None, {"inherited": "1"}),
    ("threads-reduced", DEFAULT, "num.recovery.threads.per.data.dir", "~", "4", "2", {}),
    (None, DEFAULT, "num.io.threads", "~", "8", "16", {}),
    (None, DEFAULT, "background.threads", "+", None, "20", {"inherited": "10"}),
    ("quota-lowered", CLIENT, "producer_byte_rate", "~", "4194304", "1048576", {}),
    ("quota-lowered", CLIENT, "request_percentage", "~", "50.5", "25", {}),
    ("quota-lowered", CLIENT, "consumer_byte_rate", "+", None, "1048576", {}),
    ("quota-lowered", IP, "connection_creation_rate", "~", "100", "10", {}),
    ("quota-lowered", B1, "leader.replication.throttled.rate", "~", "10485760", "1048576", {}),
    (None, CLIENT, "producer_byte_rate", "~", "1048576", "4194304", {}),
    (None, CLIENT, "producer_byte_rate", "-", "1048576", None, {}),
    ("max-connections-lowered", DEFAULT, "max.connections", "~", "1000", "100", {}),
    ("max-connections-lowered", B1, "listener.name.e.max.connection.creation.rate", "~", "100", "10", {}),
    ("max-connections-lowered", DEFAULT, OVERRIDES, "~", "a:10,b:20", "a:10,b:5", {}),
    ("max-connections-lowered", DEFAULT, OVERRIDES, "~", "a:10,b:20", "a:10", {}),
    (None, DEFAULT, OVERRIDES, "~", "a:10", "a:10,b:20", {}),
    (None, DEFAULT, "max.connections", "~", "100", "1000", {}),
    ("segment-lowered", TOPIC, "segment.bytes", "~", "1073741824", "104857600", {}),
    ("segment-lowered", DEFAULT, "log.roll.ms", "~", "604800000", "60000", {}),
    (None, TOPIC, "segment.ms", "~", "3600000", "604800000", {}),
    ("compression-changed", TOPIC, "compression.type", "~", "producer", "zstd", {}),
    (None, TOPIC, "compression.type", "~", "zstd", "zstd", {}),
    ("timestamp-type-changed", TOPIC, "message.timestamp.type", "~", "CreateTime", "LogAppendTime", {}),
    ("timestamp-type-changed", DEFAULT, "log.message.timestamp.type", "+", None, "LogAppendTime",
     {"inherited": "CreateTime"}),
    (None, TOPIC, "message.timestamp.type", "-", "CreateTime", None, {"inherited": "CreateTime"}),
    ("min-isr-raised", TOPIC, "min.insync.replicas", "~", "1", "2", {"topic_rf": 3}),
    ("min-isr-raised", TOPIC, "min.insync.replicas", "~", "2", "3", {"topic_rf": 3}),
    (None, TOPIC, "min.insync.replicas", "~", "2", "1", {"topic_rf": 3}),
    ("credential-changed", B1, KEYSTORE, "~", None, None, CHANGED),
    ("credential-changed", B1, "listener.name.ext.scram-sha-512.sasl.jaas.config", "~", None, None,
     {"redacted": "unknown"}),
    ("credential-changed", B1, "listener.name.ext.ssl.key.password", "-", None, None, CHANGED),
    ("credential-changed", B1, "custom.secret", "~", None, None, CHANGED),
    (None, B1, KEYSTORE, "~", None, None, {"redacted": "unchanged"}),
    (None, B1, KEYSTORE, "+", None, None, CHANGED),
    ("removal-reverts-lower", DEFAULT, "log.cleaner.io.max.bytes.per.second", "-", "10485760", None,
     {"inherited": "1048576"}),
    (None, DEFAULT, "log.cleaner.min.cleanable.ratio", "-", "0.3", None, {"inherited": "0.5"}),
    (None, DEFAULT, "log.cleaner.backoff.ms", "~", "30000", "1000", {}),  # a change, not a removal
    (None, DEFAULT, "sasl.kerberos.service.name", "-", "kafka", None, {}),  # not a number: no fallback rule
    (None, TOPIC, "preallocate", "~", "false", "true", {}),
]


def _fired(case: Case) -> tuple[str, tuple[str, ...]]:
    _, entity, key, op, before, after, extra = case
    return assess(key, op, before, after, entity=entity, **extra)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0] or 'safe'}:{c[2]}{c[3]}{c[4]}->{c[5]}" for c in CASES])
def test_rule_table(case: Case) -> None:
    rule_id = case[0]
    risk, reasons = _fired(case)
    if rule_id is None:
        assert (risk, reasons) == ("safe", ())
        return
    rule = next(r for r in RISK_RULES if r.id == rule_id)
    assert risk == rule.risk
    assert reasons, "a risky change always says why"


def test_every_rule_has_a_firing_case_and_a_near_miss() -> None:
    firing = {c[0] for c in CASES if c[0] is not None}
    assert firing == {r.id for r in RISK_RULES}
    safe_keys = {rule_key(c[2]) for c in CASES if c[0] is None}
    for rule in RISK_RULES:
        if rule.keys and rule.id != "min-isr-above-rf":
            assert rule.keys & safe_keys, f"no near miss for {rule.id}"


def test_reasons_use_human_units_and_say_what_happens() -> None:
    _, reasons = assess("retention.ms", "~", "604800000", "86400000", entity=TOPIC)
    assert reasons == ("retention lowered from 7d to 1d (7× lower): data older than 1d is deleted",)
    _, reasons = assess("retention.ms", "~", "-1", "86400000", entity=TOPIC)
    assert reasons[0].startswith("retention lowered from infinite to 1d")
    _, reasons = assess("min.insync.replicas", "~", "1", "3", entity=DEFAULT, rf_histogram={2: 5, 1: 2, 3: 9})
    assert "exceeds the replication factor of 7 topic(s) (lowest 1)" in reasons[0]


def test_unparsable_values_are_a_change_with_the_rules_risk() -> None:
    risk, reasons = assess("retention.ms", "~", "7d", "86400000", entity=TOPIC)
    assert risk == "destructive"
    assert "not comparable as numbers" in reasons[0]
    assert assess("num.io.threads", "~", "eight", "eight", entity=DEFAULT) == ("safe", ())
    assert assess("retention.ms", "~", "NaN", "nan", entity=TOPIC)[0] == "destructive"
    assert assess("retention.ms", "+", None, "abc", entity=TOPIC)[0] == "destructive"  # nothing inherited
    assert assess("max.connections.per.ip.overrides", "~", "a:1", "a:x", entity=DEFAULT)[0] == "disruptive"


def test_most_severe_reason_first() -> None:
    risk, reasons = assess("min.insync.replicas", "~", "2", "4", entity=TOPIC, topic_rf=3)
    assert risk == "destructive"
    assert reasons[0].startswith("min.insync.replicas 4 exceeds the topic's replication factor 3")
    assert reasons[1].startswith("min.insync.replicas raised from 2 to 4")


def test_rules_for_listener_and_mechanism_prefixed_keys() -> None:
    assert rule_key("listener.name.external.scram-sha-512.sasl.jaas.config") == "sasl.jaas.config"
    assert rule_key("listener.name.internal.max.connections") == "max.connections"
    assert rule_key("retention.ms") == "retention.ms"
    assert [r.id for r in rules_for_key("log.retention.ms")] == ["retention-lowered", "removal-reverts-lower"]
    assert [r.id for r in rules_for_key("no.such.key")] == ["removal-reverts-lower"]


def test_rule_table_is_data_for_the_impact_job() -> None:
    ids = [r.id for r in RISK_RULES]
    assert len(ids) == len(set(ids))
    for rule in RISK_RULES:
        assert rule.risk in ("safe", "disruptive", "destructive")
        assert rule.kind in ("lowered", "raised", "changed", "enabled", "removed", "above_rf", "reduced")
        assert rule.reason.format(key="k", before="b", after="a", detail="d")


@given(
    key=st.sampled_from(sorted({k for r in RISK_RULES for k in r.keys} | {"x.y", "listener.name.a.b"})),
    op=st.sampled_from(["+", "~", "-"]),
    before=st.none() | st.text(max_size=12),
    after=st.none() | st.text(max_size=12),
    inherited=st.none() | st.text(max_size=12),
    rf=st.none() | st.integers(-1, 5),
)
def test_assess_never_crashes(
    key: str, op: ChangeOp, before: str | None, after: str | None, inherited: str | None, rf: int | None
) -> None:
    risk, reasons = assess(key, op, before, after, entity=TOPIC, topic_rf=rf, inherited=inherited,
                           rf_histogram={rf: 1} if rf is not None else None)
    assert (risk == "safe") == (not reasons)


# --- annotate -------------------------------------------------------------------------------------------


def _desired(static_hours: str | None = "168") -> DesiredState:
    dv = DesiredValue
    static = {DEFAULT_ENTITY: {"log.retention.hours": dv(static_hours)}} if static_hours else {}
    return DesiredState(
        cluster=ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1, 2, 3)),
        entities={
            DEFAULT: DesiredEntity(DEFAULT, {"min.insync.replicas": dv("3")}),
            EntityRef("clients", DEFAULT_ENTITY): DesiredEntity(
                EntityRef("clients", DEFAULT_ENTITY), {"producer_byte_rate": dv("1048576")}
            ),
        },
        topics={
            "orders": DesiredTopic("orders", 6, 3, {}),
            "small": DesiredTopic("small", 1, 2, {}),
            "pinned": DesiredTopic("pinned", 1, 1, {"min.insync.replicas": dv("1")}),
        },
        static=static,
    )


def _live() -> LiveState:
    return LiveState(
        cluster="c1",
        brokers={},
        topics={"legacy": LiveTopic("legacy", {0: (1, 2)}), "orders": LiveTopic("orders", {0: (1, 2, 3)})},
        entities={EntityRef("topics", "legacy"): LiveEntity(EntityRef("topics", "legacy"), {}, 0)},
    )


def _plan(*entities: EntityPlan) -> Plan:
    return Plan(cluster="c1", entities=entities)


def test_annotate_rates_against_inherited_values_and_recomputes_the_id() -> None:
    plan = _plan(
        EntityPlan(DEFAULT, 1, (Change("min.insync.replicas", "~", "2", "3"),)),
        EntityPlan(CLIENT, None, (Change("producer_byte_rate", "-", "4194304", None),)),
        EntityPlan(TOPIC, 0, (Change("retention.ms", "-", "2592000000", None),
                              Change("retention.ms", "+", None, "3600000"))),
    ).with_id()
    rated = annotate(plan, _desired(), _live())
    broker, client, topic = (e.changes for e in rated.entities)
    # topics inheriting min.insync.replicas: orders (3), small (2), legacy (2); pinned has its own
    assert broker[0].risk == "destructive"
    assert "the replication factor of 2 topic(s) (lowest 2)" in broker[0].reasons[0]
    # removing a client's quota falls back to clients/<default> (1 MiB/s), lower than 4 MiB/s
    assert client[0].risk == "disruptive"
    assert "from 4 MiB/s to 1 MiB/s" in client[0].reasons[0]
    # retention falls back to the static log.retention.hours=168 (7d)
    assert topic[0].risk == "destructive"
    assert "from 30d to 7d" in topic[0].reasons[0]
    assert "from 7d to 1h" in topic[1].reasons[0]
    assert rated.plan_id and rated.plan_id != plan.plan_id


def test_annotate_uses_the_catalog_default_without_static_config() -> None:
    plan = _plan(EntityPlan(DEFAULT, 1, (Change("num.io.threads", "-", "16", None),
                                         Change("log.retention.ms", "+", None, "86400000"))))
    rated = annotate(plan, _desired(static_hours=None), _live())
    threads, retention = rated.entities[0].changes
    assert threads.risk == "disruptive"
    assert "reduced from 16 to 8" in threads.reasons[0]
    assert "from 7d to 1d" in retention.reasons[0]  # log.retention.hours default 168, scaled to ms


def test_annotate_sensitive_changes_never_need_values() -> None:
    plan = _plan(EntityPlan(B1, 2, (
        Change(KEYSTORE, "~", sensitive=True, redacted="changed"),
        Change("listener.name.e.ssl.key.password", "~", sensitive=True, redacted="unchanged", reencode=True),
    )))
    rotated, reencoded = annotate(plan, _desired(), _live()).entities[0].changes
    assert rotated.risk == "disruptive"
    assert reencoded.risk == "safe"


# --- issue 13 §3: risk that agrees with Kafka ------------------------------------------------------------


@pytest.mark.parametrize(("policy", "risk"), [
    # Kafka deletes by time/size only when cleanup.policy contains `delete` (a compact-only log is compacted,
    # never truncated by retention): lowering retention on it removes nothing
    (frozenset({"compact"}), "safe"),
    (frozenset({"compact", "delete"}), "destructive"),
    (frozenset({"delete"}), "destructive"),
    (None, "destructive"),  # unknown policy: assume Kafka's default, delete
])
@pytest.mark.parametrize(("key", "before", "after"), [
    ("retention.ms", "604800000", "3600000"), ("retention.bytes", "-1", "1073741824")])
def test_lowering_retention_destroys_only_under_the_delete_policy(
    policy: frozenset[str] | None, risk: str, key: str, before: str, after: str
) -> None:
    assert assess(key, "~", before, after, entity=TOPIC, cleanup_policy=policy)[0] == risk


def test_annotate_reads_the_effective_cleanup_policy_of_each_topic() -> None:
    """The policy after the plan: the topic's own, else the cluster's log.cleanup.policy, else delete."""
    desired = _desired()
    dv = DesiredValue
    topics = dict(desired.topics)
    topics["orders"] = DesiredTopic("orders", 6, 3, {"cleanup.policy": dv("compact")})
    topics["small"] = DesiredTopic("small", 1, 2, {"cleanup.policy": dv("compact,delete")})
    entities = dict(desired.entities)
    entities[DEFAULT] = DesiredEntity(DEFAULT, {"log.cleanup.policy": dv("compact")})
    desired = DesiredState(cluster=desired.cluster, entities=entities, topics=topics, static=desired.static)
    lower = Change("retention.ms", "~", "604800000", "3600000")
    plan = _plan(*(EntityPlan(EntityRef("topics", t), 0, (lower,)) for t in ("orders", "small", "pinned")))
    risks = [e.changes[0].risk for e in annotate(plan, desired, _live()).entities]
    # orders: compact; small: compact,delete; pinned inherits the cluster's compact
    assert risks == ["safe", "destructive", "safe"]


def test_annotate_rates_one_change_per_topic_by_that_topics_replication_factor() -> None:
    """annotate rates each distinct case once and reuses it: the same change on topics of different
    replication factors must still get each topic's own rating (orders RF 3, legacy RF 2 in ZooKeeper)."""
    raise_isr = Change("min.insync.replicas", "~", "1", "3")
    plan = _plan(*(EntityPlan(EntityRef("topics", t), 0, (raise_isr,)) for t in ("legacy", "orders")))
    legacy, orders = (e.changes[0] for e in annotate(plan, _desired(), _live()).entities)
    by_rf = {rf: assess("min.insync.replicas", "~", "1", "3", entity=TOPIC, topic_rf=rf) for rf in (2, 3)}
    assert by_rf[2] != by_rf[3]  # the two cases differ, so sharing one rating would show
    assert (legacy.risk, legacy.reasons) == by_rf[2]
    assert (orders.risk, orders.reasons) == by_rf[3]


def test_a_partition_increase_is_disruptive_with_kafka_topics_reason() -> None:
    from reconciler.plan import PartitionIncrease
    from reconciler.render.common import plan_totals

    grow = PartitionIncrease("orders", 6, 12, 3, {6: (1, 2, 3)})
    plan = Plan(cluster="c1", partition_increases=(grow,))
    assert grow.risk == "disruptive" and plan.max_risk == "disruptive"
    assert "keyed producers map keys to other partitions" in grow.reasons[0]
    assert "partition logic or ordering of the messages will be affected" in grow.reasons[0]
    totals = plan_totals(plan)
    assert (totals.disruptive, totals.max_risk) == (1, "disruptive")


@pytest.mark.parametrize(("key", "before", "after", "expected"), [
    ("retention.ms", "604800000", "259200", "from 7d to 259200 (2,333× lower)"),
    ("retention.ms", "604800000", "3600000", "from 7d to 1h (168× lower)"),
    ("num.io.threads", "16", "12", "from 16 to 12 (1.3× lower)"),
    ("producer_byte_rate", "10485760", "1048576", "from 10 MiB/s to 1 MiB/s (10× lower)"),
    ("min.insync.replicas", "1", "2", "from 1 to 2 (2× higher)"),
])
def test_reasons_state_both_sides_humanised_and_the_factor(key: str, before: str, after: str,
                                                           expected: str) -> None:
    entity = CLIENT if key.endswith("_rate") else TOPIC if key.startswith("ret") else DEFAULT
    _, reasons = assess(key, "~", before, after, entity=entity)
    assert expected in reasons[0], reasons


def test_no_factor_when_a_side_is_unlimited_or_zero() -> None:
    _, reasons = assess("retention.ms", "~", "-1", "86400000", entity=TOPIC)
    assert "×" not in reasons[0]
    _, reasons = assess("producer_byte_rate", "~", "1048576", "0", entity=CLIENT)
    assert "×" not in reasons[0]


@pytest.mark.parametrize(("key", "value", "meant"), [
    ("retention.ms", "604800", "7d"), ("segment.ms", "86400", "1d"), ("log.roll.ms", "7200", "2h"),
    ("retention.ms", "3600000", None),  # a round number of milliseconds: as meant
    ("retention.ms", "-1", None), ("retention.ms", "1000", None), ("segment.bytes", "3600", None),
    ("retention.ms", "432000000", None),  # 5d in ms
])
def test_a_ms_value_written_in_seconds_is_a_warning(key: str, value: str, meant: str | None) -> None:
    from reconciler.model import SourceRef
    from reconciler.rules.configs import seconds_in_ms

    warning = seconds_in_ms(key, DesiredValue(value, SourceRef("clusters/a/topics.yaml", 7, 9)))
    if meant is None:
        assert warning is None
    else:
        assert warning is not None and warning.severity == "warning"
        assert f"if you meant {meant}, write {int(value) * 1000}" in warning.message
        assert (warning.source.file, warning.source.line) == ("clusters/a/topics.yaml", 7)




def test_every_topic_with_a_value_in_seconds_gets_its_own_warning() -> None:
    """check_configs remembers values that do not look like seconds, never the warnings: each topic's own line."""
    from dataclasses import replace

    from reconciler.catalog import load_catalog
    from reconciler.model import SourceRef
    from reconciler.rules.configs import check_configs

    def topic(name: str, line: int, retention: str) -> DesiredTopic:
        src = SourceRef("clusters/c1/topics.yaml", line, 7)
        return DesiredTopic(name, 3, 3, {"retention.ms": DesiredValue(retention, src)})

    topics = {"a": topic("a", 3, "604800"), "b": topic("b", 4, "86400000"), "c": topic("c", 5, "604800"),
              "d": topic("d", 6, "86400000")}
    diags = check_configs(replace(_desired(None), topics=topics), load_catalog())
    warned = [d.source.line for d in diags if d.source is not None and "in milliseconds" in d.message]
    assert warned == [3, 5]


# --- issue 13 §4: rotating the password encoder secret ---------------------------------------------------


def _rotation_plan() -> Plan:
    return _plan(EntityPlan(B1, 2, (Change(KEYSTORE, "~", sensitive=True, redacted="unchanged", reencode=True,
                                           rotation=True),)))


def test_a_rotation_is_disruptive_and_says_what_must_be_true_first() -> None:
    (rotated,) = annotate(_rotation_plan(), _desired(), _live()).entities[0].changes
    assert rotated.risk == "disruptive"
    assert "password.encoder.secret" in rotated.reasons[0] and "password.encoder.old.secret" in rotated.reasons[0]
    # without `rotation`, the same re-encode (an undecodable value re-encoded with the one secret) stays safe
    (plain,) = annotate(_plan(EntityPlan(B1, 2, (Change(KEYSTORE, "~", sensitive=True, redacted="unchanged",
                                                        reencode=True),))), _desired(), _live()).entities[0].changes
    assert plain.risk == "safe"


@pytest.mark.parametrize(("static", "expect"), [
    ({}, "the manifests declare no server.properties to check this against"),
    ({"1": {"password.encoder.secret": "S3CR3T-new", "password.encoder.old.secret": "S3CR3T-old"},
      "2": {"password.encoder.secret": "S3CR3T-new"}}, "declared for broker(s) 2 do not set both"),
    ({"1": {"password.encoder.secret": "S3CR3T-new", "password.encoder.old.secret": "S3CR3T-old"}},
     "for broker(s) 1 set both"),
])
def test_rotation_warnings_check_the_declared_static_config(static: dict[str, dict[str, str]], expect: str) -> None:
    from reconciler.secrets.rotation import rotation_warnings

    desired = _desired(static_hours=None)
    desired = DesiredState(cluster=desired.cluster, entities=desired.entities, topics=desired.topics,
                           static={b: {k: DesiredValue(v) for k, v in p.items()} for b, p in static.items()})
    warnings = rotation_warnings(_rotation_plan(), desired)
    assert len(warnings) == 2  # one for the key, one for the cluster
    assert warnings[0].startswith(f"brokers/1 {KEYSTORE}: stored with passwordEncoder.oldSecret")
    assert expect in warnings[1] and "--allow-secret-rotation" in warnings[1]
    assert "S3CR3T" not in " ".join(warnings)  # values are never echoed
