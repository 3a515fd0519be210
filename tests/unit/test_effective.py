"""effective.resolve: Kafka's precedence and synonyms list (ConfigHelper.configSynonyms, DynamicBrokerConfig),
for the manifests, for ZooKeeper, and for ZooKeeper with a plan applied. Each case says what Kafka 3.9's
DescribeConfigs would answer, and where we deliberately differ (the documented dropWhile case)."""

from __future__ import annotations

from reconciler.catalog import load_catalog
from reconciler.effective import (
    DesiredLayers,
    LiveLayers,
    PlannedLayers,
    Synonym,
    broker_synonyms,
    resolve,
)
from reconciler.model import (
    DEFAULT_ENTITY,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    SecretRef,
    SourceRef,
    ZooKeeperSpec,
)
from reconciler.plan import Change, EntityPlan, Plan, TopicCreate
from tests.leakcheck import plant

CATALOG = load_catalog()
DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
B1 = EntityRef("brokers", "1")
ORDERS = EntityRef("topics", "orders")
PLANTED = plant("lk-effective-secret-4711")  # tests/leakcheck.py scans the whole run's output for it


def src(line: int, file: str = "clusters/c1/brokers.yaml") -> SourceRef:
    return SourceRef(file, line)


def desired(
    default: dict[str, str] | None = None, b1: dict[str, str] | None = None, topic: dict[str, str] | None = None,
    static_default: dict[str, str] | None = None, static_b1: dict[str, str] | None = None,
) -> DesiredState:
    def values(config: dict[str, str] | None, first_line: int) -> dict[str, DesiredValue]:
        return {k: DesiredValue(v, src(first_line + i)) for i, (k, v) in enumerate(sorted((config or {}).items()))}

    entities = {}
    if default is not None:
        entities[DEFAULT] = DesiredEntity(DEFAULT, values(default, 10))
    if b1 is not None:
        entities[B1] = DesiredEntity(B1, values(b1, 30))
    static = {}
    if static_default is not None:
        static[DEFAULT_ENTITY] = values(static_default, 1)
    if static_b1 is not None:
        static["1"] = values(static_b1, 1)
    topics = {"orders": DesiredTopic("orders", 3, 2, values(topic, 50))} if topic is not None else {}
    return DesiredState(ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1, 2)), entities, topics, static=static)


def chain(synonyms: tuple[Synonym, ...]) -> list[tuple[str, str, str | None]]:
    return [(s.source, s.name, s.value) for s in synonyms]


def test_topic_override_beats_every_broker_layer_and_the_chain_is_source_major() -> None:
    state = desired(default={"log.retention.ms": "86400000"}, b1={"log.retention.ms": "3600000"},
                    topic={"retention.ms": "1000"}, static_default={"log.retention.hours": "24"})
    e = resolve(DesiredLayers(state), CATALOG, ORDERS, "retention.ms", version="3.6", broker="1")
    assert (e.value, e.source) == ("1000", "TOPIC_CONFIG")
    # ConfigHelper.createTopicConfigEntry: TOPIC_CONFIG, then configSynonyms(log.retention.ms, [ms, minutes, hours])
    assert chain(e.synonyms) == [
        ("TOPIC_CONFIG", "retention.ms", "1000"),
        ("DYNAMIC_BROKER_CONFIG", "log.retention.ms", "3600000"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.ms", "86400000"),
        ("STATIC_BROKER_CONFIG", "log.retention.hours", "24"),
        ("DEFAULT_CONFIG", "log.retention.hours", "168"),
    ]
    assert e.synonyms[0].origin == "clusters/c1/brokers.yaml:50" and e.synonyms[0].layer == "topics/orders"


def test_without_a_broker_a_topic_skips_per_broker_overrides() -> None:
    state = desired(default={"log.retention.ms": "86400000"}, b1={"log.retention.ms": "3600000"}, topic={})
    e = resolve(DesiredLayers(state), CATALOG, ORDERS, "retention.ms", version="3.6")
    assert (e.value, e.source) == ("86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert all(s.source != "DYNAMIC_BROKER_CONFIG" for s in e.synonyms)


def test_static_hours_give_a_topic_its_value_in_ms_and_we_keep_the_source_kafka_drops() -> None:
    # Kafka's dropWhile(_.name != "log.retention.ms") would report DEFAULT_CONFIG with no synonyms here,
    # although KafkaConfig.logRetentionTimeMillis takes 24 h from log.retention.hours: we show where it is from.
    state = desired(topic={}, static_default={"log.retention.hours": "24"})
    e = resolve(DesiredLayers(state), CATALOG, ORDERS, "retention.ms", version="3.6")
    assert (e.value, e.source) == ("86400000", "STATIC_BROKER_CONFIG")
    assert e.synonyms[0].name == "log.retention.hours"
    broker = resolve(DesiredLayers(state), CATALOG, B1, "log.retention.ms", version="3.6")
    assert (broker.value, broker.source) == ("86400000", "STATIC_BROKER_CONFIG")


def test_kafka_default_of_a_topic_is_its_broker_synonyms_default() -> None:
    e = resolve(DesiredLayers(desired(topic={})), CATALOG, ORDERS, "retention.ms", version="3.6")
    assert (e.value, e.source) == ("604800000", "DEFAULT_CONFIG")  # log.retention.hours=168 in ms
    assert chain(e.synonyms) == [("DEFAULT_CONFIG", "log.retention.hours", "168")]
    assert e.is_default
    no_server_default = resolve(DesiredLayers(desired(topic={})), CATALOG, ORDERS, "remote.storage.enable",
                                version="3.6")
    assert (no_server_default.value, no_server_default.source) == ("false", "DEFAULT_CONFIG")


def test_secondary_synonym_starts_its_own_chain_like_kafkas_drop_while() -> None:
    state = desired(default={"log.retention.ms": "1000"}, static_b1={"log.retention.hours": "5"})
    assert broker_synonyms(CATALOG, "log.retention.hours", "3.6") == ("log.retention.hours",)
    assert broker_synonyms(CATALOG, "log.retention.ms", "3.6") == (
        "log.retention.ms", "log.retention.minutes", "log.retention.hours")
    e = resolve(DesiredLayers(state), CATALOG, B1, "log.retention.hours", version="3.6")
    assert (e.value, e.source) == ("5", "STATIC_BROKER_CONFIG")
    assert e.synonyms[0].layer == "server.properties of broker 1"
    minutes = resolve(DesiredLayers(state), CATALOG, B1, "log.retention.minutes", version="3.6")
    assert (minutes.value, minutes.source) == ("300", "STATIC_BROKER_CONFIG")  # 5 h in minutes


def test_broker_chain_per_broker_default_static_default() -> None:
    state = desired(default={"num.io.threads": "16"}, b1={"num.io.threads": "32"},
                    static_b1={"num.io.threads": "4"}, static_default={"num.io.threads": "6"})
    e = resolve(DesiredLayers(state), CATALOG, B1, "num.io.threads", version="3.6")
    assert chain(e.synonyms) == [
        ("DYNAMIC_BROKER_CONFIG", "num.io.threads", "32"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "num.io.threads", "16"),
        ("STATIC_BROKER_CONFIG", "num.io.threads", "4"),
        ("STATIC_BROKER_CONFIG", "num.io.threads", "6"),
        ("DEFAULT_CONFIG", "num.io.threads", "8"),
    ]
    inherited = resolve(DesiredLayers(state), CATALOG, B1, "num.io.threads", version="3.6", inherited=True)
    assert (inherited.value, inherited.source) == ("16", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    at_default = resolve(DesiredLayers(state), CATALOG, DEFAULT, "num.io.threads", version="3.6")
    assert [s.source for s in at_default.synonyms] == [
        "DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"]  # no per-broker layer


def test_listener_override_is_followed_by_its_base_config() -> None:
    key = "listener.name.internal.ssl.endpoint.identification.algorithm"
    state = desired(b1={key: ""}, static_default={"ssl.endpoint.identification.algorithm": "https"})
    assert broker_synonyms(CATALOG, key, "3.6") == (key, "ssl.endpoint.identification.algorithm")
    e = resolve(DesiredLayers(state), CATALOG, B1, key, version="3.6")
    assert chain(e.synonyms)[:2] == [("DYNAMIC_BROKER_CONFIG", key, ""),
                                     ("STATIC_BROKER_CONFIG", "ssl.endpoint.identification.algorithm", "https")]
    mechanism = "listener.name.ext.scram-sha-512.sasl.jaas.config"
    assert broker_synonyms(CATALOG, mechanism, "3.6") == (mechanism, "sasl.jaas.config")


def test_quota_chain_follows_client_quota_manager_precedence() -> None:
    user_client = EntityRef("users", "alice", "app")
    state = DesiredState(
        ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1,)),
        {EntityRef("users", DEFAULT_ENTITY): DesiredEntity(EntityRef("users", DEFAULT_ENTITY),
                                                           {"producer_byte_rate": DesiredValue("1024", src(3))}),
         EntityRef("users", "alice"): DesiredEntity(EntityRef("users", "alice"),
                                                    {"producer_byte_rate": DesiredValue("2048", src(5))})},
        {},
    )
    e = resolve(DesiredLayers(state), CATALOG, user_client, "producer_byte_rate")
    assert (e.value, e.source, e.synonyms[0].layer) == ("2048", "QUOTA_CONFIG", "users/alice")
    assert [s.layer for s in e.synonyms] == ["users/alice", "users/<default>", "Kafka default"]
    nothing = resolve(DesiredLayers(state), CATALOG, EntityRef("clients", "x"), "consumer_byte_rate")
    assert (nothing.value, nothing.source) == ("9223372036854775807", "DEFAULT_CONFIG")


def test_sensitive_values_are_never_carried() -> None:
    key = "listener.name.ext.ssl.keystore.password"
    state = DesiredState(
        ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1,)),
        {B1: DesiredEntity(B1, {key: DesiredValue(SecretRef(env="KS_PASSWORD"), src(7))})}, {},
    )
    live = LiveState("c1", {}, {}, {B1: LiveEntity(B1, {key: PLANTED, "SCRAM-SHA-256": PLANTED}, 3)})
    for layers in (DesiredLayers(state), LiveLayers(live, CATALOG, state)):
        e = resolve(layers, CATALOG, B1, key, version="3.6")
        assert e.sensitive and e.value is None and e.source == "DYNAMIC_BROKER_CONFIG"
        assert all(s.value is None for s in e.synonyms)
        assert PLANTED not in repr(e)


def test_live_layers_and_the_plan_applied() -> None:
    state = desired(topic={"retention.ms": "1000"}, default={"num.io.threads": "16"})
    live = LiveState(
        "c1", {}, {"orders": LiveTopic("orders", {0: (1, 2)})},
        {ORDERS: LiveEntity(ORDERS, {"retention.ms": "5000", "segment.bytes": "1048576"}, 4),
         DEFAULT: LiveEntity(DEFAULT, {"num.io.threads": "16", "custom.key": "x"}, 2)},
    )
    plan = Plan("c1", entities=(
        EntityPlan(ORDERS, 4, (Change("retention.ms", "~", "5000", "1000", source=src(50)),
                               Change("segment.bytes", "-", "1048576", None))),
    ), topics_to_create=(TopicCreate("new", 1, 1, {"cleanup.policy": "compact"}, {0: (1,)}, src(60)),))
    live_view = resolve(LiveLayers(live, CATALOG, state), CATALOG, ORDERS, "retention.ms", version="3.6")
    assert (live_view.value, live_view.synonyms[0].origin) == ("5000", "/config/topics/orders")
    planned = PlannedLayers(live, plan, state, CATALOG)
    after = resolve(planned, CATALOG, ORDERS, "retention.ms", version="3.6")
    assert (after.value, after.source, after.synonyms[0].origin) == ("1000", "TOPIC_CONFIG",
                                                                     "clusters/c1/brokers.yaml:50")
    assert resolve(planned, CATALOG, ORDERS, "segment.bytes", version="3.6").source == "DEFAULT_CONFIG"
    kept = resolve(planned, CATALOG, DEFAULT, "custom.key", version="3.6")  # the plan leaves it alone
    # a key of unknown type is hidden, as Kafka's KafkaConfig.maybeSensitive hides it (issue 28, finding 11)
    assert (kept.value, kept.sensitive, kept.synonyms[0].origin) == (None, True, "/config/brokers/<default>")
    declared = resolve(planned, CATALOG, DEFAULT, "num.io.threads", version="3.6")  # unchanged, declared
    assert declared.synonyms[0].origin == "clusters/c1/brokers.yaml:10"
    created = resolve(planned, CATALOG, EntityRef("topics", "new"), "cleanup.policy", version="3.6")
    assert (created.value, created.source) == ("compact", "TOPIC_CONFIG")
