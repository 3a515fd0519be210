"""rules.live.check_live: plan-time rules against live state (SPEC §4, ground truth §3.3)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reconciler.errors import Diagnostic
from reconciler.model import (
    DEFAULT_ENTITY,
    BrokerListeners,
    BrokerRegistration,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    ListenersSpec,
    LiveEntity,
    LiveState,
    LiveTopic,
    Policy,
    SecretRef,
    SourceRef,
    ZooKeeperSpec,
)
from reconciler.rules.live import check_live
from reconciler.rules.live_threads import step_problem, steps

DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
B1 = EntityRef("brokers", "1")


def src(line: int) -> SourceRef:
    return SourceRef("clusters/c1/brokers.yaml", line)


def state(
    entities: Mapping[EntityRef, Mapping[str, str]] | None = None,
    *,
    topics: Mapping[str, tuple[int | None, Mapping[str, str]]] | None = None,
    static: Mapping[str, Mapping[str, str]] | None = None,
    listeners: ListenersSpec | None = None,
    prune: bool = False,
) -> DesiredState:
    """Every desired value sits on its own line: line = 10 * entity index + key index."""
    ents = {}
    for i, (ref, config) in enumerate((entities or {}).items()):
        values = {k: DesiredValue(v, src(10 * (i + 1) + j)) for j, (k, v) in enumerate(config.items())}
        ents[ref] = DesiredEntity(ref, values, src(10 * (i + 1)))
    return DesiredState(
        cluster=ClusterSpec(
            "c1", "3.6", ZooKeeperSpec("zk:2181"), (1, 2, 3), policy=Policy(prune=prune), source=src(1)
        ),
        entities=ents,
        topics={
            n: DesiredTopic(n, 3, rf, {k: DesiredValue(v, src(500)) for k, v in c.items()}, src(400))
            for n, (rf, c) in (topics or {}).items()
        },
        listeners=listeners,
        static={
            b: {k: DesiredValue(v, SourceRef(f"static/{b}.properties", 1)) for k, v in p.items()}
            for b, p in (static or {}).items()
        },
    )


def live(
    entities: Mapping[EntityRef, Mapping[str, str]] | None = None,
    *,
    brokers: tuple[int, ...] = (1, 2, 3),
    endpoints: Mapping[str, str] | None = None,
    topics: Mapping[str, int] | None = None,
) -> LiveState:
    protocols = dict(endpoints or {"PLAINTEXT": "PLAINTEXT"})
    regs = {
        b: BrokerRegistration(
            b, tuple(f"{name}://b{b}:{9092 + i}" for i, name in enumerate(protocols)), protocols
        )
        for b in brokers
    }
    return LiveState(
        cluster="c1",
        brokers=regs,
        topics={
            n: LiveTopic(n, {p: tuple(range(1, rf + 1)) for p in range(3)}, 1)
            for n, rf in (topics or {}).items()
        },
        entities={r: LiveEntity(r, dict(c), 1) for r, c in (entities or {}).items()},
    )


def errors(diags: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]


# --- unregistered brokers -------------------------------------------------------------------------------


def test_override_for_unregistered_broker_warns() -> None:
    diags = check_live(state({EntityRef("brokers", "7"): {"num.io.threads": "8"}, B1: {}}), live())
    assert [(d.severity, d.source) for d in diags] == [("warning", src(10))]
    assert "broker 7" in diags[0].message and "/brokers/ids" in diags[0].message


# --- thread pools ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key,current,new,message",
    [
        (
            "num.io.threads",
            8,
            32,
            "Dynamic thread count update validation failed for num.io.threads=32, "
            "value should not be greater than double the current value 8",
        ),
        (
            "num.io.threads",
            8,
            3,
            "Dynamic thread count update validation failed for num.io.threads=3, "
            "value should be at least half the current value 8",
        ),
        (
            "background.threads",
            10,
            0,
            "Dynamic thread count update validation failed for background.threads=0, "
            "value should be at least 1",
        ),
        (
            "log.cleaner.threads",
            1,
            3,
            "Log cleaner threads cannot be increased to more than double the current value 1",
        ),
        (
            "log.cleaner.threads",
            8,
            3,
            "Log cleaner threads cannot be reduced to less than half the current value 8",
        ),
        ("log.cleaner.threads", 2, 0, "Log cleaner threads should be at least 1"),
    ],
)
def test_kafka_messages(key: str, current: int, new: int, message: str) -> None:
    assert step_problem(key, current, new) == message


def test_half_uses_integer_division_like_kafka() -> None:
    assert (
        step_problem("num.io.threads", 5, 2) is None
    )  # 2 < 5 / 2 in reals, but Kafka compares with 5 / 2 = 2
    assert step_problem("num.io.threads", 8, 16) is None
    assert steps(8, 32) == [8, 16, 32]
    assert steps(32, 3) == [32, 16, 8, 4, 3]
    assert steps(3, 20) == [3, 6, 12, 20]


def test_thread_step_against_catalog_default() -> None:
    diags = check_live(state({DEFAULT: {"num.io.threads": "32"}}), live())
    (d,) = diags
    assert d.severity == "error" and d.key == "num.io.threads" and d.source == src(10)
    assert "value should not be greater than double the current value 8" in d.message
    assert "brokers 1, 2, 3" in d.message and "8 → 16 → 32" in d.message


@pytest.mark.parametrize(
    "desired_cfg,live_cfg,static,ok",
    [
        ({DEFAULT: {"num.io.threads": "16"}}, {}, {}, True),  # 8 -> 16
        (
            {DEFAULT: {"num.io.threads": "32"}},
            {DEFAULT: {"num.io.threads": "16"}},
            {},
            True,
        ),  # live default 16
        ({DEFAULT: {"num.io.threads": "32"}}, {B1: {"num.io.threads": "16"}}, {}, False),  # brokers 2, 3 at 8
        ({DEFAULT: {"num.io.threads": "32"}}, {}, {DEFAULT_ENTITY: {"num.io.threads": "16"}}, True),  # static
        ({DEFAULT: {"num.io.threads": "32"}}, {}, {"1": {"num.io.threads": "16"}}, False),
        ({DEFAULT: {}}, {DEFAULT: {"num.io.threads": "64"}}, {}, False),  # removal: back to 8 from 64
        (
            {B1: {"num.io.threads": "3"}},
            {DEFAULT: {"num.io.threads": "4"}},
            {},
            True,
        ),  # per-broker vs live default
    ],
)
def test_current_value_precedence(
    desired_cfg: Mapping[EntityRef, Mapping[str, str]],
    live_cfg: Mapping[EntityRef, Mapping[str, str]],
    static: Mapping[str, Mapping[str, str]],
    ok: bool,
) -> None:
    diags = errors(check_live(state(desired_cfg, static=static), live(live_cfg)))
    assert (diags == []) is ok, diags


def test_per_broker_override_groups_and_removal_source() -> None:
    diags = check_live(state({DEFAULT: {}}), live({DEFAULT: {"num.io.threads": "64"}}))
    (d,) = diags
    assert "num.io.threads=8" in d.message and "lower it in steps: 64 → 32 → 16 → 8" in d.message
    assert d.source == src(10)  # the entity that drops the value


def test_listener_network_threads_fall_back_to_base() -> None:
    key = "listener.name.internal.num.network.threads"
    diags = check_live(state({DEFAULT: {key: "12"}}), live())
    (d,) = diags
    assert d.key == key and "current value 3" in d.message
    assert check_live(state({DEFAULT: {key: "12"}}), live({DEFAULT: {"num.network.threads": "6"}})) == []


def test_cleaner_threads_from_zero_needs_restart() -> None:
    diags = check_live(
        state({DEFAULT: {"log.cleaner.threads": "2"}}, static={DEFAULT_ENTITY: {"log.cleaner.threads": "0"}}),
        live(brokers=(1,)),
    )
    (d,) = diags
    assert "more than double the current value 0" in d.message and "restart" in d.message


def test_undeclared_entities_keep_live_values_unless_pruned() -> None:
    have = live({B1: {"num.io.threads": "64"}}, brokers=(1,))
    assert check_live(state({}), have) == []
    assert len(errors(check_live(state({}, prune=True), have))) == 1


# --- listeners ------------------------------------------------------------------------------------------


def _listeners(inter: str = "REPLICATION") -> ListenersSpec:
    return ListenersSpec(
        {"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL"},
        inter,
        {1: BrokerListeners(1, ("INTERNAL://:9092", "REPLICATION://:9093"), ())},
    )


def test_security_protocol_change_of_existing_listener() -> None:
    desired = state(
        {
            B1: {
                "listeners": "INTERNAL://:9092,REPLICATION://:9093",
                "listener.security.protocol.map": "INTERNAL:SSL,REPLICATION:SSL",
            }
        },
        listeners=_listeners(),
    )
    diags = check_live(desired, live(endpoints={"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL"}, brokers=(1,)))
    (d,) = diags
    assert d.severity == "error" and d.key == "listener.security.protocol.map" and d.source == src(11)
    assert d.message.startswith("Security protocol cannot be updated for existing listener INTERNAL")


def test_new_listener_and_unchanged_protocols_are_fine() -> None:
    desired = state(
        {
            B1: {
                "listeners": "INTERNAL://:9092,REPLICATION://:9093,EXTERNAL://:9094",
                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,REPLICATION:SSL,EXTERNAL:SASL_SSL",
            }
        },
        listeners=_listeners(),
    )
    assert (
        check_live(desired, live(endpoints={"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL"}, brokers=(1,)))
        == []
    )


def test_removing_the_inter_broker_listener() -> None:
    desired = state(
        {B1: {"listeners": "INTERNAL://:9092", "listener.security.protocol.map": "INTERNAL:PLAINTEXT"}},
        listeners=_listeners(),
    )
    diags = check_live(desired, live(endpoints={"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL"}, brokers=(1,)))
    (d,) = diags
    assert d.message.startswith("Advertised listener must be specified for inter-broker listener REPLICATION")
    assert d.source == src(10) and d.key == "listeners"


def test_inter_broker_listener_from_static_or_default() -> None:
    desired = state({B1: {"listeners": "SSL://:9093"}}, static={"1": {"inter.broker.listener.name": "SSL"}})
    assert check_live(desired, live(endpoints={"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, brokers=(1,))) == []
    desired = state({B1: {"listeners": "SSL://:9093"}})  # Kafka's default inter-broker listener: PLAINTEXT
    (d,) = check_live(desired, live(endpoints={"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, brokers=(1,)))
    assert "inter-broker listener PLAINTEXT" in d.message


# --- min.insync.replicas --------------------------------------------------------------------------------


def test_topic_min_isr_above_rf() -> None:
    """The live replication factor of a topic that declares none; a declared one is validate's (rules/topics.py,
    the same words), so a plan says it once."""
    assert check_live(state(topics={"t": (2, {"min.insync.replicas": "3"})}), live()) == []
    diags = check_live(state(topics={"t": (None, {"min.insync.replicas": "3"})}), live(topics={"t": 2}))
    (d,) = diags
    assert d.severity == "warning" and d.key == "min.insync.replicas" and d.source == src(500)
    assert "at most 2" in d.message


def test_default_min_isr_above_rf_of_live_and_declared_topics() -> None:
    desired = state({DEFAULT: {"min.insync.replicas": "3"}}, topics={"a": (2, {}), "b": (3, {})})
    diags = check_live(
        desired,
        live(
            topics={"legacy": 1, "b": 3, "own": 2},
            entities={EntityRef("topics", "own"): {"min.insync.replicas": "1"}},
        ),
    )
    (d,) = diags
    assert d.source == src(10) and "2 topic(s): a (RF 2), legacy (RF 1)" in d.message


def test_min_isr_fine() -> None:
    desired = state({DEFAULT: {"min.insync.replicas": "2"}}, topics={"a": (3, {"min.insync.replicas": "3"})})
    assert check_live(desired, live(topics={"x": 3})) == []


# --- listener configs of existing listeners (DynamicListenerConfig / SslFactory / metric reporters) ---------

LISTENERS = "INTERNAL://:9092,REPLICATION://:9093"
ENDPOINTS = {"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL"}


def _with(config: Mapping[str, str]) -> DesiredState:
    return state({B1: {"listeners": LISTENERS, **config}}, listeners=_listeners())


def test_an_existing_listener_config_that_needs_a_restart_is_refused() -> None:
    """Kafka refuses: 'Configs cannot be updated dynamically for existing listener INTERNAL, restart broker or
    create a new listener for update'."""
    have = live({B1: {"listener.name.internal.connections.max.reauth.ms": "1000"}}, brokers=(1,),
                endpoints=ENDPOINTS)
    desired = _with({"listener.name.internal.connections.max.reauth.ms": "2000"})
    (d,) = errors(check_live(desired, have))
    assert d.message.startswith("Configs cannot be updated dynamically for existing listener INTERNAL")
    assert d.key == "listener.name.internal.connections.max.reauth.ms" and d.source == src(11)
    # adding one to an existing listener is a change too, unless server.properties already has that value (the
    # broker compares its whole config); without declared server.properties only the broker can tell
    key = "listener.name.internal.sasl.enabled.mechanisms"
    have = live(brokers=(1,), endpoints=ENDPOINTS)
    (warned,) = check_live(_with({key: "PLAIN"}), have)
    assert warned.severity == "warning" and "unless server.properties already has the same value" in warned.message
    partial = state({B1: {"listeners": LISTENERS, key: "PLAIN"}}, listeners=_listeners(),
                    static={"1": {"log.dirs": "/k"}})  # a partial server.properties proves nothing either way
    assert [d.severity for d in check_live(partial, have)] == ["warning"]
    other = state({B1: {"listeners": LISTENERS, key: "PLAIN"}}, listeners=_listeners(),
                  static={"1": {key: "SCRAM-SHA-512"}})
    assert len(errors(check_live(other, have))) == 1
    same = state({B1: {"listeners": LISTENERS, key: "PLAIN"}}, listeners=_listeners(), static={"1": {key: "PLAIN"}})
    assert check_live(same, have) == []
    new_listener = state({B1: {"listeners": LISTENERS + ",EXTERNAL://:9094",
                               "listener.name.external.sasl.enabled.mechanisms": "PLAIN"}}, listeners=_listeners())
    assert errors(check_live(new_listener, live(brokers=(1,), endpoints=ENDPOINTS))) == []


def test_reconfigurable_listener_configs_may_change() -> None:
    have = live({B1: {"listener.name.internal.max.connections": "100",
                      "listener.name.internal.num.network.threads": "3"}}, brokers=(1,), endpoints=ENDPOINTS)
    desired = _with({"listener.name.internal.max.connections": "200",
                     "listener.name.internal.num.network.threads": "4"})
    assert check_live(desired, have) == []


def test_a_new_keystore_is_a_warning_of_what_the_broker_checks() -> None:
    have = live({B1: {"listener.name.replication.ssl.keystore.location": "/old.jks"}}, brokers=(1,),
                endpoints=ENDPOINTS)
    desired = _with({"listener.name.replication.ssl.keystore.location": "/new.jks"})
    (d,) = check_live(desired, have)
    assert d.severity == "warning" and "SslFactory.validateReconfiguration" in d.message
    assert "distinguished name" in d.message and d.source == src(11)
    # a new store is several settings: one warning for the listener, naming them
    two = _with({"listener.name.replication.ssl.keystore.location": "/new.jks",
                 "listener.name.replication.ssl.keystore.type": "PKCS12"})
    (d,) = check_live(two, have)
    assert "ssl.keystore.location" in d.message and "ssl.keystore.type" in d.message


def test_passwords_of_existing_listeners_are_left_to_the_plan() -> None:
    """A stored (encoded) password against a secret reference: only the plan's comparison can tell."""
    have = live({B1: {"listener.name.internal.sasl.jaas.config": "encryptedPassword:x"}}, brokers=(1,),
                endpoints=ENDPOINTS)
    desired = state({B1: {"listeners": LISTENERS}}, listeners=_listeners())
    desired.entities[B1].config["listener.name.internal.sasl.jaas.config"] = DesiredValue(  # type: ignore[index]
        SecretRef(env="JAAS"), src(19))
    assert check_live(desired, have) == []


def test_metric_reporters_change_is_a_warning() -> None:
    desired = state({DEFAULT: {"metric.reporters": "com.example.Reporter"}})
    (d,) = check_live(desired, live(brokers=(1,)))
    assert d.severity == "warning" and "class path" in d.message and d.key == "metric.reporters"
