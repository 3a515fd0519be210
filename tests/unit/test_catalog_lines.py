"""One catalog per Kafka line (issue 41): a cluster's kafkaVersion picks the ConfigDefs of its own line (3.9.1, 4.0.1,
4.1.1, read from each release's jars by tools/configdefs/ConfigDefsDump.java), with its keys, defaults, minimums,
dynamic sets, group and client-metrics configs, features and removed configs; keys only a newer line has say which
release they need."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reconciler.catalog import Catalog, ConfigKey, load_catalog
from reconciler.errors import Diagnostic
from reconciler.model import DesiredValue, SourceRef
from reconciler.rules.configs import check_broker_key, check_topic_key
from reconciler.values import check

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def key(k: ConfigKey | None) -> ConfigKey:
    assert k is not None
    return k


@pytest.mark.parametrize(
    ("version", "line"),
    [("2.0", "3.9"), ("2.8.2", "3.9"), ("3.6", "3.9"), ("3.9", "3.9"), ("3.9.1", "3.9"), ("4.0", "4.0"),
     ("4.0.1", "4.0"), ("4.1", "4.1"), ("4.1.1", "4.1"), ("4.2", "4.1"), ("5.0", "4.1"), (None, "3.9")],
)
def test_a_version_picks_its_line(cat: Catalog, version: str | None, line: str) -> None:
    assert cat.line(version).line == line


def test_lines_are_read_from_their_own_release(cat: Catalog) -> None:
    assert [cat.line(v).source_version for v in ("3.9", "4.0", "4.1")] == ["3.9.1", "4.0.1", "4.1.1"]
    assert cat.line("3.9").zookeeper and not cat.line("4.0").zookeeper and not cat.line("4.1").zookeeper


def test_kip_1030_segment_bytes_minimum_is_the_lines_own(cat: Catalog) -> None:
    """Kafka 4.0 raised segment.bytes' minimum to 1 MiB (KIP-1030, LogConfig); 3.9 accepts 14 bytes."""
    for scope, name in (("topic", "segment.bytes"), ("broker", "log.segment.bytes")):
        old = key(cat.topic(name, "3.9") if scope == "topic" else cat.broker(name, "3.9"))
        new = key(cat.topic(name, "4.1") if scope == "topic" else cat.broker(name, "4.1"))
        assert old.validator is not None and new.validator is not None
        assert (old.validator.min, new.validator.min) == (14, 1048576)
        assert check(old, "524288") is None
        assert check(new, "524288") == "Value must be at least 1048576"


def test_kip_1030_changed_defaults(cat: Catalog) -> None:
    assert key(cat.topic("message.timestamp.after.max.ms", "3.9")).default == str(2**63 - 1)
    assert key(cat.topic("message.timestamp.after.max.ms", "4.1")).default == "3600000"
    assert key(cat.broker("num.recovery.threads.per.data.dir", "4.0")).default == "2"


def test_dynamic_sets_are_the_lines_own(cat: Catalog) -> None:
    """DynamicBrokerConfig.AllDynamicConfigs differs: 4.x made advertised.listeners static and the remote log
    thread pools dynamic."""
    assert key(cat.broker("advertised.listeners", "3.9")).scope == "per-broker"
    assert key(cat.broker("advertised.listeners", "4.1")).scope == "read-only"
    assert key(cat.broker("remote.log.reader.threads", "3.9")).scope == "read-only"
    assert key(cat.broker("remote.log.reader.threads", "4.1")).scope == "cluster-wide"


@pytest.mark.parametrize(
    ("scope", "name", "version", "needs"),
    [
        ("broker", "share.coordinator.threads", "3.9", "4.0.0"),
        ("broker", "group.streams.session.timeout.ms", "3.9", "4.1.0"),
        ("broker", "group.streams.session.timeout.ms", "4.0", "4.1.0"),
        ("broker", "group.streams.session.timeout.ms", "4.1", None),
        ("broker", "compression.gzip.level", "3.6", "3.8.0"),
        ("topic", "remote.log.copy.disable", "3.8", "3.9.0"),
        ("topic", "internal.segment.bytes", "4.0", "4.1.0"),
        ("group", "consumer.session.timeout.ms", "3.9", "4.0.0"),
        ("group", "streams.session.timeout.ms", "4.0", "4.1.0"),
        ("client-metrics", "interval.ms", "3.6", "3.7.0"),
        ("client-metrics", "interval.ms", "3.7", None),
        ("topic", "message.format.version", "4.1", None),  # removed, not newer
        ("broker", "no.such.key", "3.9", None),
    ],
)
def test_first_release(cat: Catalog, scope: str, name: str, version: str, needs: str | None) -> None:
    assert cat.first_release(scope, name, version) == needs


def test_removed_configs_by_release(cat: Catalog) -> None:
    assert cat.topic("message.format.version", "4.0") is None
    assert cat.removed("topic", "message.format.version", "4.0") is not None
    assert key(cat.broker("metadata.log.segment.min.bytes", "4.0")).scope == "read-only"  # still there in 4.0
    assert cat.removed("broker", "metadata.log.segment.min.bytes", "4.0") is None
    removed = cat.removed("broker", "metadata.log.segment.min.bytes", "4.1")
    assert removed is not None and removed[0] == "4.1"
    assert cat.removed("broker", "zookeeper.connect", "4.1") == (
        "4.0", "nothing: ZooKeeper mode was removed (KIP-833); the cluster is KRaft (spec.kraft)")


def test_group_configs(cat: Catalog) -> None:
    """GroupConfig (KIP-848, ConfigResource.Type.GROUP): none before 4.0; share.* in 4.0; streams.* from 4.1."""
    assert cat.names("group", "3.9") == ()
    assert cat.names("group", "4.0") == (
        "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "share.auto.offset.reset",
        "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.session.timeout.ms")
    assert {"streams.session.timeout.ms", "streams.num.standby.replicas", "share.isolation.level"} <= set(
        cat.names("group", "4.1"))
    k = key(cat.entity_key("group", "consumer.session.timeout.ms", "4.1"))
    assert (k.type, k.default, k.scope) == ("INT", "45000", "group")
    assert cat.suggest("consumer.session.timeout", "group", "4.1") == "consumer.session.timeout.ms"
    assert "GROUP" in cat.line("4.1").config_resource_types and "GROUP" not in cat.line("3.9").config_resource_types


@pytest.mark.parametrize(
    ("value", "ok"),
    [("latest", True), ("earliest", True), ("by_duration:PT1H", True), ("by_duration:P1DT2H", True),
     ("by_duration:pt30m", True), ("EARLIEST", False), ("by_duration:-PT1H", False), ("by_duration:PT", False),
     ("by_duration:", False), ("by_duration:P", False), ("none", False)],
)
def test_share_auto_offset_reset(cat: Catalog, value: str, ok: bool) -> None:
    """ShareGroupAutoOffsetResetStrategy.Validator: these are the answers of the 4.1.1 jar's own validator
    (ensureValid called on each value by a small Java program on the jar's classpath)."""
    assert (check(key(cat.entity_key("group", "share.auto.offset.reset", "4.1")), value) is None) is ok


def test_client_metrics_configs(cat: Catalog) -> None:
    assert cat.names("client-metrics", "3.7") == ("interval.ms", "match", "metrics")
    assert key(cat.entity_key("client-metrics", "interval.ms", "4.1")).default == "300000"
    assert cat.entity_key("client-metrics", "interval.ms", "3.6") is None


def test_features(cat: Catalog) -> None:
    features = cat.features("4.1")
    assert set(features) == {"metadata.version", "kraft.version", "group.version", "transaction.version",
                             "share.version", "streams.version", "eligible.leader.replicas.version"}
    mv = features["metadata.version"]
    assert (mv.level("4.1-IV1"), mv.level("4.1"), mv.level("3.9-IV0"), mv.level("27")) == (27, 27, 21, 27)
    assert mv.level("9.9") is None and mv.display(27) == "4.1-IV1 (27)" and mv.release_of(27) == "4.1"
    assert (mv.minimum, mv.latest_production) == (7, 27)
    elr = features["eligible.leader.replicas.version"]
    assert elr.requires[1] == {"metadata.version": 23} and elr.latest_production == 1
    assert features["streams.version"].latest_production == 0  # 4.1.1: streams groups are not production-ready
    # 4.0.1 has no share.version / streams.version; 3.9.1 knows only kraft.version and transaction.version
    assert set(features) - set(cat.features("4.0")) == {"share.version", "streams.version"}
    assert set(cat.features("3.9")) == {"metadata.version", "kraft.version", "transaction.version"}
    assert cat.features("4.0")["metadata.version"].latest_production == 25  # 4.0-IV3


def test_version_less_lookups_see_every_line(cat: Catalog) -> None:
    """Without a version (sensitivity, describe of any cluster), a 4.x-only key is still known and typed."""
    assert cat.broker("group.streams.session.timeout.ms") is not None
    assert cat.config_key("groups", "consumer.session.timeout.ms") is not None
    assert not cat.is_sensitive("consumer.session.timeout.ms", "groups")
    assert cat.is_sensitive("some.plugin.secret", "groups")  # unknown type: hidden, as Kafka does


def _diags(gen: object) -> list[Diagnostic]:
    return list(gen)  # type: ignore[call-overload]


def test_rules_say_which_release_a_key_needs(cat: Catalog) -> None:
    at = DesiredValue("1", SourceRef("clusters/a/topics.yaml", 7))
    (d,) = _diags(check_topic_key(cat, "internal.segment.bytes", replace(at, value="1048576"), "3.9"))
    assert d.message == "topic config 'internal.segment.bytes' needs Kafka 4.1.0 or later; this cluster runs 3.9"
    assert d.source == at.source
    (d,) = _diags(check_broker_key(cat, "default", "group.streams.max.size", replace(at, value="10"), "4.0"))
    assert "needs Kafka 4.1.0 or later" in d.message
    (d,) = _diags(check_topic_key(cat, "segment.bytes", replace(at, value="1000"), "4.1"))
    assert d.message == "invalid value '1000' for 'segment.bytes': Value must be at least 1048576"
    assert _diags(check_topic_key(cat, "segment.bytes", replace(at, value="1000"), "3.9")) == []
    # removed keys are left to rules.cluster.removed_configs (one message, with the replacement)
    assert _diags(check_topic_key(cat, "message.format.version", replace(at, value="3.0"), "4.1")) == []


def test_generated_files_match_the_dumps() -> None:
    """reconciler/data/catalog-*.json are exactly what tools/gen_catalog.py makes of kafka/configdefs/*.json."""
    spec = importlib.util.spec_from_file_location("gen_catalog", ROOT / "tools" / "gen_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_catalog"] = module
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
