"""The packaged config catalog: counts and facts from the ground truth, scopes, listener-prefix resolution,
version filtering, quota key sets, password names and did-you-mean suggestions."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from reconciler.catalog import BrokerKeyInfo, Catalog, ConfigKey, load_catalog, version_tuple


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def key(k: ConfigKey | None) -> ConfigKey:
    assert k is not None
    return k


# --- packaged data ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["3.9", "4.0", "4.1"])
def test_data_file_header_says_how_it_was_generated(line: str) -> None:
    raw = json.loads(resources.files("reconciler").joinpath(f"data/catalog-{line}.json").read_text(encoding="utf-8"))
    assert raw["_generated"]["by"].startswith("tools/gen_catalog.py")
    assert raw["_generated"]["from"] == f"kafka/configdefs/{raw['kafka_version']}.json"
    assert len(raw["_generated"]["sha256"]) == 64
    assert (raw["format"], raw["line"]) == (2, line)
    for section in ("topic", "broker", "quota", "group", "client_metrics"):
        assert list(raw[section]) == sorted(raw[section]), section  # stable, sorted output


def test_load_is_cached(cat: Catalog) -> None:
    """One catalog per process, each line parsed once (its cost is measured by the benches, not asserted here)."""
    assert load_catalog() is cat
    assert cat.line("4.1") is cat.line("4.1.0") is cat.line_named("4.1")
    index = json.loads(resources.files("reconciler").joinpath("data/catalog-index.json").read_text("utf-8"))
    fresh = Catalog(index, lambda name: json.loads(
        resources.files("reconciler").joinpath(f"data/catalog-{name}.json").read_text("utf-8")))
    assert fresh.source_version == cat.source_version


def test_source_version(cat: Catalog) -> None:
    assert cat.source_version == "3.9.1"
    assert cat.releases == {"3.9": "3.9.1", "4.0": "4.0.1", "4.1": "4.1.1"}


@pytest.mark.parametrize(
    ("scope", "count"),
    [
        ("topic", 36),  # LogConfig, 3.9
        ("broker", 331),  # 328 KafkaConfig keys + 3 dynamic-only broker quota rates
        ("broker-dynamic", 92),  # AllDynamicConfigs (89) + 3 broker quota rates
        ("clients", 4),
        ("users", 6),
        ("user-clients", 4),
        ("ips", 1),
        ("brokers", 3),
    ],
)
def test_counts(cat: Catalog, scope: str, count: int) -> None:
    assert len(cat.names(scope)) == count


def test_scope_counts_match_ground_truth(cat: Catalog) -> None:
    scopes = [key(cat.broker(n)).scope for n in cat.names("broker")]
    assert scopes.count("per-broker") == 37
    assert scopes.count("cluster-wide") == 55  # 52 + 3 quota rates
    assert scopes.count("read-only") == 239


def test_names_are_sorted_and_cached(cat: Catalog) -> None:
    names = cat.names("topic")
    assert list(names) == sorted(names)
    assert cat.names("topic") is names


def test_names_unknown_scope(cat: Catalog) -> None:
    with pytest.raises(ValueError, match="unknown catalog scope"):
        cat.names("nope")
    with pytest.raises(ValueError, match="unknown catalog scope"):
        cat.suggest("x", "nope")


# --- topic keys ------------------------------------------------------------------------------------------


def test_topic_key_fields(cat: Catalog) -> None:
    k = key(cat.topic("retention.ms"))
    assert (k.type, k.default, k.scope, k.since) == ("LONG", "604800000", "topic", "2.0.0")
    assert k.synonyms == ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert k.validator is not None
    assert (k.validator.kind, k.validator.min, k.validator.max) == ("range", -1, None)
    assert not k.password and k.topic_key is None


@pytest.mark.parametrize(
    ("name", "type_", "default", "kind"),
    [
        ("cleanup.policy", "LIST", "delete", "each_of"),
        ("compression.type", "STRING", "producer", "one_of"),
        ("compression.gzip.level", "INT", "-1", "gzip_level"),
        ("compression.zstd.level", "INT", "3", "range"),
        ("min.cleanable.dirty.ratio", "DOUBLE", "0.5", "range"),
        ("message.timestamp.type", "STRING", "CreateTime", "one_of"),
        ("message.format.version", "STRING", "3.0-IV1", "message_format_version"),
        ("leader.replication.throttled.replicas", "LIST", "", "throttled_replicas"),
        ("retention.bytes", "LONG", "-1", None),
        ("preallocate", "BOOLEAN", "false", None),
        ("max.message.bytes", "INT", "1048588", "range"),
    ],
)
def test_topic_types(cat: Catalog, name: str, type_: str, default: str, kind: str | None) -> None:
    k = key(cat.topic(name))
    assert (k.type, k.default) == (type_, default)
    assert (k.validator.kind if k.validator else None) == kind


def test_topic_configs_without_server_default(cat: Catalog) -> None:
    expected = {
        "remote.storage.enable",
        "remote.log.delete.on.disable",
        "remote.log.copy.disable",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
    assert cat.line().topic_no_server_default == expected
    assert {n for n in cat.names("topic") if not key(cat.topic(n)).synonyms} == expected


def test_zk_mode_rejected_when_true(cat: Catalog) -> None:
    assert cat.line("3.9").topic_zk_rejected_when_true == {"remote.log.copy.disable", "remote.log.delete.on.disable"}
    assert cat.line("4.1").topic_zk_rejected_when_true == set()  # KRaft only
    for name in cat.line("3.9").topic_zk_rejected_when_true:
        assert key(cat.topic(name)).type == "BOOLEAN"


def test_message_format_version_validator(cat: Catalog) -> None:
    v = key(cat.topic("message.format.version")).validator
    assert v is not None
    assert {"0.8.0", "0.10.2-IV0", "0.10.2", "2.8-IV1", "2.8", "3.9-IV0", "3.9", "4.0-IV1"} <= set(v.allowed)
    assert "4.0" not in v.allowed  # release names only of released versions
    assert v.text.startswith("[0.8.0, 0.8.1") and v.text.endswith("4.0-IV1]")


# --- versions --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("v", "expected"),
    [("3.6", (3, 6)), ("3.6.1", (3, 6, 1)), ("2.8.2", (2, 8, 2)), ("3.9.0-rc3", (3, 9, 0)), (" 3.7", (3, 7))],
)
def test_version_tuple(v: str, expected: tuple[int, ...]) -> None:
    assert version_tuple(v) == expected


@pytest.mark.parametrize("v", ["", "x", "v3.6", "."])
def test_version_tuple_rejects(v: str) -> None:
    with pytest.raises(ValueError, match="not a Kafka version"):
        version_tuple(v)


@pytest.mark.parametrize(
    ("name", "version", "known"),
    [
        ("compression.gzip.level", "3.6", False),
        ("compression.gzip.level", "3.7.1", False),
        ("compression.gzip.level", "3.8", True),
        ("compression.gzip.level", "3.8.0", True),
        ("compression.gzip.level", None, True),
        ("max.compaction.lag.ms", "2.2", False),
        ("max.compaction.lag.ms", "2.3", True),
        ("message.timestamp.before.max.ms", "3.5", False),
        ("message.timestamp.before.max.ms", "3.6", True),
        ("local.retention.ms", "2.8", False),
        ("local.retention.ms", "3.0", True),
        ("remote.log.copy.disable", "3.8", False),
        ("remote.log.copy.disable", "3.9", True),  # the dump says "3.9.0-rc3": normalised to the release
        ("retention.ms", "2.0", True),
    ],
)
def test_topic_by_version(cat: Catalog, name: str, version: str | None, known: bool) -> None:
    assert (cat.topic(name, version) is not None) is known


@pytest.mark.parametrize(
    ("name", "version", "known"),
    [
        ("compression.gzip.level", "3.6", False),
        ("compression.gzip.level", "3.8", True),
        ("max.connections", "2.2", False),
        ("max.connections", "2.3", True),
        ("max.connection.creation.rate", "2.6", False),
        ("ssl.engine.factory.class", "2.5", False),
        ("ssl.engine.factory.class", "2.6", True),
        ("ssl.keystore.key", "2.6", False),
        ("ssl.keystore.key", "2.7", True),
        ("transaction.partition.verification.enable", "3.5", False),
        ("transaction.partition.verification.enable", "3.6", True),
        ("remote.log.manager.copy.max.bytes.per.second", "3.7", False),
        ("log.retention.hours", "2.0", True),  # read-only keys are not version-filtered
    ],
)
def test_broker_by_version(cat: Catalog, name: str, version: str, known: bool) -> None:
    assert (cat.broker(name, version) is not None) is known


def test_producer_id_expiration_dynamic_from_3_5(cat: Catalog) -> None:
    assert cat.broker("producer.id.expiration.ms", "3.3") is None
    assert key(cat.broker("producer.id.expiration.ms", "3.4")).scope == "read-only"
    assert key(cat.broker("producer.id.expiration.ms", "3.5")).scope == "cluster-wide"
    assert key(cat.broker("producer.id.expiration.ms")).scope == "cluster-wide"
    assert "producer.id.expiration.ms" not in cat.names("broker-dynamic", "3.4")
    assert "producer.id.expiration.ms" in cat.names("broker-dynamic", "3.5")


def test_names_by_version(cat: Catalog) -> None:
    assert len(cat.names("topic", "3.6")) == 36 - 3 - 2  # no compression levels, no remote.log.*.disable
    assert len(cat.names("topic", "3.8")) == 36 - 2
    assert len(cat.names("topic", "3.9")) == 36
    assert "compression.gzip.level" not in cat.names("broker-dynamic", "3.6")


# --- broker keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "scope"),
    [
        ("log.retention.ms", "cluster-wide"),
        ("num.io.threads", "cluster-wide"),
        ("message.max.bytes", "cluster-wide"),
        ("metric.reporters", "cluster-wide"),
        ("max.connections.per.ip.overrides", "cluster-wide"),
        ("listeners", "per-broker"),
        ("advertised.listeners", "per-broker"),
        ("listener.security.protocol.map", "per-broker"),
        ("principal.builder.class", "per-broker"),
        ("sasl.jaas.config", "per-broker"),
        ("ssl.client.auth", "per-broker"),
        ("ssl.keystore.location", "per-broker"),
        ("log.retention.hours", "read-only"),
        ("log.retention.minutes", "read-only"),
        ("log.roll.hours", "read-only"),
        ("log.roll.jitter.hours", "read-only"),
        ("log.flush.scheduler.interval.ms", "read-only"),
        ("log.message.format.version", "read-only"),
        ("log.dirs", "read-only"),
        ("password.encoder.secret", "read-only"),
        ("leader.replication.throttled.rate", "cluster-wide"),
    ],
)
def test_broker_scopes(cat: Catalog, name: str, scope: str) -> None:
    assert key(cat.broker(name)).scope == scope


def test_broker_synonym_groups(cat: Catalog) -> None:
    group = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    for name, factor in zip(group, (1, 60_000, 3_600_000), strict=True):
        k = key(cat.broker(name))
        assert (k.synonyms, k.topic_key, k.synonym_factor) == (group, "retention.ms", factor)
    assert key(cat.broker("log.roll.hours")).synonyms == ("log.roll.ms", "log.roll.hours")
    assert key(cat.broker("log.roll.jitter.hours")).synonym_factor == 3_600_000
    assert key(cat.broker("log.flush.scheduler.interval.ms")).synonyms == (
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    )
    assert key(cat.broker("num.io.threads")).synonyms == ("num.io.threads",)
    assert key(cat.broker("num.io.threads")).topic_key is None


def test_every_topic_synonym_points_back(cat: Catalog) -> None:
    for name in cat.names("topic"):
        for syn in key(cat.topic(name)).synonyms:
            assert key(cat.broker(syn)).topic_key == name
    assert key(cat.broker("message.max.bytes")).topic_key == "max.message.bytes"
    assert key(cat.broker("log.message.format.version")).topic_key == "message.format.version"


def test_only_the_first_synonym_is_dynamic(cat: Catalog) -> None:
    for name in cat.names("topic"):
        synonyms = key(cat.topic(name)).synonyms
        for i, syn in enumerate(synonyms):
            dynamic = key(cat.broker(syn)).scope != "read-only"
            assert dynamic is (i == 0 and name != "message.format.version"), syn


def test_listener_prefix_only_and_passwords(cat: Catalog) -> None:
    prefix_only = {n for n in cat.names("broker") if key(cat.broker(n)).listener_prefix_only}
    assert prefix_only == {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
    passwords = {n for n in cat.names("broker") if key(cat.broker(n)).password}
    assert len(passwords) == 13
    assert {"password.encoder.secret", "sasl.jaas.config", "zookeeper.ssl.keystore.password"} <= passwords
    dynamic_passwords = {n for n in cat.names("broker-dynamic") if key(cat.broker(n)).password}
    assert dynamic_passwords == set(cat.line().password_suffixes)


def test_broker_quota_rates_are_dynamic_only(cat: Catalog) -> None:
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        k = key(cat.broker(name))
        assert (k.type, k.scope, k.dynamic_only, k.default) == ("LONG", "cluster-wide", True, str(2**63 - 1))
        assert k.validator is not None and k.validator.min == 0
        assert cat.quota("brokers", name) is k
    assert not key(cat.broker("num.io.threads")).dynamic_only


def test_unknown_keys(cat: Catalog) -> None:
    assert cat.topic("nope") is None
    assert cat.broker("nope") is None
    assert cat.broker("retention.ms") is None  # topic key, not a broker key
    assert cat.topic("log.retention.ms") is None


# --- listener-prefixed resolution ------------------------------------------------------------------------


L, PB, CW, RO = "listener.name.", "per-broker", "cluster-wide", "read-only"


@pytest.mark.parametrize(
    ("name", "base", "where", "scope", "password"),  # where: "<listener>" or "<listener>/<mechanism>"
    [
        (
            L + "external.scram-sha-512.sasl.jaas.config",
            "sasl.jaas.config",
            "external/scram-sha-512",
            PB,
            True,
        ),
        (
            L + "e.plain.sasl.server.callback.handler.class",
            "sasl.server.callback.handler.class",
            "e/plain",
            PB,
            False,
        ),
        (L + "external.sasl.jaas.config", "sasl.jaas.config", "external", PB, True),
        (L + "internal.max.connections", "max.connections", "internal", CW, False),
        (L + "internal.max.connection.creation.rate", "max.connection.creation.rate", "internal", CW, False),
        (L + "internal.num.network.threads", "num.network.threads", "internal", CW, False),
        (L + "ssl.ssl.keystore.location", "ssl.keystore.location", "ssl", PB, False),
        (L + "ssl.ssl.keystore.password", "ssl.keystore.password", "ssl", PB, True),
        (L + "ssl.ssl.key.password", "ssl.key.password", "ssl", PB, True),
        (L + "ssl.ssl.truststore.certificates", "ssl.truststore.certificates", "ssl", PB, True),
        (L + "x.ssl.client.auth", "ssl.client.auth", "x", PB, False),
        (L + "x.connections.max.reauth.ms", "connections.max.reauth.ms", "x", PB, False),
        (
            L + "x.oauthbearer.connections.max.reauth.ms",
            "connections.max.reauth.ms",
            "x/oauthbearer",
            PB,
            False,
        ),
        (L + "x.custom.thing", None, "x", PB, False),
        (L + "x.scram-sha-256.max.connections", None, "x", PB, False),  # not a mechanism config
        # kept as written: Kafka reads only lower-case listener prefixes, so rules can flag this one
        (L + "EXTERNAL.ssl.keystore.location", "ssl.keystore.location", "EXTERNAL", PB, False),
        ("ssl.keystore.password", "ssl.keystore.password", None, PB, True),
        ("log.retention.ms", "log.retention.ms", None, CW, False),
        ("log.retention.hours", "log.retention.hours", None, RO, False),
        ("listeners", "listeners", None, PB, False),
        (
            "password.encoder.secret",
            "password.encoder.secret",
            None,
            RO,
            False,
        ),  # PASSWORD, not encoded in ZK
        ("my.custom.key", None, None, CW, False),
        ("my.custom.ssl.key.password", None, None, CW, True),  # the suffix rule
        ("listener.name", None, None, CW, False),
    ],
)
def test_resolve_broker(
    cat: Catalog, name: str, base: str | None, where: str | None, scope: str, password: bool
) -> None:
    info = cat.resolve_broker(name, "3.6")
    assert isinstance(info, BrokerKeyInfo)
    assert info.name == name
    assert (info.base.name if info.base else None) == base
    listener, _, mechanism = (where or "").partition("/")
    assert (info.listener, info.mechanism) == (listener or None, mechanism or None)
    assert (info.scope, info.password) == (scope, password)


def test_num_network_threads_prefix_is_per_broker_in_2x(cat: Catalog) -> None:
    assert cat.resolve_broker("listener.name.internal.num.network.threads", "2.8").scope == "per-broker"
    assert cat.resolve_broker("listener.name.internal.num.network.threads", "3.0").scope == "cluster-wide"
    assert cat.resolve_broker("listener.name.internal.max.connections", "2.8").scope == "cluster-wide"
    assert cat.resolve_broker("listener.name.internal.max.connections", "2.2").scope == "per-broker"
    assert cat.cluster_level_listener_configs() == {
        "max.connections",
        "max.connection.creation.rate",
        "num.network.threads",
    }


def test_resolve_broker_respects_version(cat: Catalog) -> None:
    assert cat.resolve_broker("compression.gzip.level", "3.6").base is None
    assert cat.resolve_broker("compression.gzip.level", "3.8").base is not None
    assert cat.resolve_broker("listener.name.x.ssl.keystore.key", "2.6").base is None
    assert cat.resolve_broker("listener.name.x.ssl.keystore.key", "2.6").password  # suffix rule still holds


# --- passwords -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sasl.jaas.config", True),
        ("ssl.keystore.password", True),
        ("ssl.key.password", True),
        ("ssl.truststore.password", True),
        ("ssl.keystore.key", True),
        ("ssl.keystore.certificate.chain", True),
        ("ssl.truststore.certificates", True),
        ("listener.name.external.scram-sha-512.sasl.jaas.config", True),
        ("listener.name.a.ssl.keystore.password", True),
        ("foossl.key.password", True),  # endsWith, no dot boundary: exactly Kafka's rule
        ("password.encoder.secret", False),
        ("delegation.token.secret.key", False),
        ("ssl.keystore.location", False),
        ("ssl.key.password.file", False),
        ("", False),
    ],
)
def test_is_password(cat: Catalog, name: str, expected: bool) -> None:
    assert cat.is_password(name) is expected


# --- quotas ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "type_"),
    [
        ("clients", "producer_byte_rate", "LONG"),
        ("clients", "consumer_byte_rate", "LONG"),
        ("clients", "request_percentage", "DOUBLE"),
        ("clients", "controller_mutation_rate", "DOUBLE"),
        ("users", "producer_byte_rate", "LONG"),
        ("users", "SCRAM-SHA-256", "STRING"),
        ("users", "SCRAM-SHA-512", "STRING"),
        ("user-clients", "request_percentage", "DOUBLE"),
        ("ips", "connection_creation_rate", "INT"),
        ("brokers", "leader.replication.throttled.rate", "LONG"),
        ("brokers", "follower.replication.throttled.rate", "LONG"),
        ("brokers", "replica.alter.log.dirs.io.max.bytes.per.second", "LONG"),
    ],
)
def test_quota_keys(cat: Catalog, kind: str, name: str, type_: str) -> None:
    assert key(cat.quota(kind, name)).type == type_


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("user-clients", "SCRAM-SHA-256"),  # only users/<user>
        ("clients", "SCRAM-SHA-512"),
        ("ips", "producer_byte_rate"),
        ("clients", "connection_creation_rate"),
        ("brokers", "num.io.threads"),  # a broker config, not a broker quota
        ("topics", "retention.ms"),
        ("clients", "producer.byte.rate"),
    ],
)
def test_quota_keys_rejected(cat: Catalog, kind: str, name: str) -> None:
    assert cat.quota(kind, name) is None


def test_quota_key_details(cat: Catalog) -> None:
    k = key(cat.quota("clients", "producer_byte_rate"))
    assert (k.scope, k.default, k.validator) == ("quota", str(2**63 - 1), None)
    ip = key(cat.quota("ips", "connection_creation_rate"))
    assert ip.validator is not None and (ip.validator.kind, ip.validator.min) == ("range", 0)
    assert key(cat.quota("clients", "request_percentage")).default == "2.147483647E9"


# --- suggestions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "scope", "version", "expected"),
    [
        # cross-scope: the same config where it belongs
        ("retention.ms", "broker", "3.6", "log.retention.ms"),
        ("cleanup.policy", "broker", "3.6", "log.cleanup.policy"),
        ("max.message.bytes", "broker", "3.6", "message.max.bytes"),
        ("segment.ms", "broker-dynamic", "3.6", "log.roll.ms"),
        ("log.retention.ms", "topic", "3.6", "retention.ms"),
        ("log.cleaner.min.cleanable.ratio", "topic", "3.6", "min.cleanable.dirty.ratio"),
        ("message.max.bytes", "topic", "3.6", "max.message.bytes"),
        ("log.retention.hours", "topic", "3.6", "retention.ms"),
        # read-only synonym -> its dynamic first synonym
        ("log.retention.hours", "broker", "3.6", "log.retention.ms"),
        ("log.retention.minutes", "broker", "3.6", "log.retention.ms"),
        ("log.roll.hours", "broker", "3.6", "log.roll.ms"),
        ("log.roll.jitter.hours", "broker", "3.6", "log.roll.jitter.ms"),
        ("log.flush.scheduler.interval.ms", "broker", "3.6", "log.flush.interval.ms"),
        # spelling
        ("num.io.thread", "broker", "3.6", "num.io.threads"),
        ("unclean.leader.election.enabled", "broker", "3.6", "unclean.leader.election.enable"),
        ("retention.msec", "topic", "3.6", "retention.ms"),
        ("cleanup.polcy", "topic", "3.6", "cleanup.policy"),
        ("min.insync.replica", "topic", "3.6", "min.insync.replicas"),
        ("producer.byte.rate", "clients", None, "producer_byte_rate"),
        ("request_percent", "user-clients", None, "request_percentage"),
        ("connection_creation_rates", "ips", None, "connection_creation_rate"),
        (L + "ext.ssl.keystore.pasword", "broker", "3.6", L + "ext.ssl.keystore.password"),
        # valid already, or nothing close
        ("min.insync.replicas", "broker", "3.6", None),
        ("min.insync.replicas", "topic", "3.6", None),
        ("log.retention.ms", "broker", "3.6", None),
        ("log.message.format.version", "broker", "3.6", None),  # read-only with no dynamic synonym
        ("message.format.version", "broker", "3.6", None),  # its only broker synonym is read-only
        ("zzz", "topic", "3.6", None),
        ("zzz", "broker", "3.6", None),
        ("listener.name.x.zzz", "broker", "3.6", None),
        ("SCRAM-SHA-256", "users", None, None),
    ],
)
def test_suggest(cat: Catalog, name: str, scope: str, version: str | None, expected: str | None) -> None:
    assert cat.suggest(name, scope, version) == expected


def test_suggest_respects_version(cat: Catalog) -> None:
    assert cat.suggest("compression.gzip.level", "broker", "3.8") is None  # valid there
    assert cat.suggest("compression.gzip.levl", "topic", "3.8") == "compression.gzip.level"
    assert cat.suggest("compression.gzip.levl", "topic", "3.6") != "compression.gzip.level"
