"""Issue 28, findings 5, 7, 10 and 11 in the pure core: every number read from text goes through bounded,
total parsers; the operator's bounds; the one sensitivity predicate. Property tests where a table would miss
the class (any text, any length)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.catalog import load_catalog
from reconciler.errors import ReconcilerError
from reconciler.manifests.load import load_text
from reconciler.manifests.repo import Budget, OverBudget, entities_of
from reconciler.model import ClusterSpec, DesiredState, DesiredTopic, DesiredValue, SourceRef, ZooKeeperSpec
from reconciler.rules.limits import Limits, limits_from
from reconciler.rules.topics import PartitionCount, check_loaded_partitions, check_partitions
from reconciler.units import humanize, looks_like_seconds, parse_int, parse_number
from reconciler.values import problem

CATALOG = load_catalog()
NUMERIC = [k for k in ("retention.ms", "min.insync.replicas", "min.cleanable.dirty.ratio", "max.message.bytes")]
HOSTILE = ["Infinity", "-Infinity", "NaN", "1e400", "-1e400", "0x1p99999", "9" * 5_000, "-" + "9" * 5_000,
           "٣" * 5_000, "²", "1_000", "0" * 5_000 + "1", " 12 ", "", "+", "-"]


# --- finding 7: numbers --------------------------------------------------------------------------------------


@given(st.text(alphabet=st.sampled_from("0123456789+-.eE_ ٣²xXpPaf"), max_size=6_000) | st.sampled_from(HOSTILE))
@settings(max_examples=300, deadline=None)
def test_number_parsers_are_total_and_bounded(text: str) -> None:
    """Never raise, whatever the text; an integer is one Java would read and fits 64 bits; a number is finite."""
    number = parse_int(text)
    assert number is None or -(2**63) <= number < 2**63
    real = parse_number(text)
    assert real is None or math.isfinite(real)
    humanize("retention.ms", text)
    looks_like_seconds("retention.ms", text)
    for kind in ("topic", "broker"):
        for key in NUMERIC:
            entry = CATALOG.topic(key) if kind == "topic" else CATALOG.broker(key)
            if entry is not None:
                problem(entry, text)


@pytest.mark.parametrize(("text", "expected"), [
    ("9223372036854775807", 9223372036854775807), ("9223372036854775808", None), ("-9223372036854775808", -2**63),
    ("0" * 5_000 + "42", 42), ("٤٢", 42), ("²", None), ("1_0", None), ("𝟗", None), ("\t7\n", 7), ("9" * 5_000, None),
])
def test_parse_int_reads_like_long_parse_long(text: str, expected: int | None) -> None:
    assert parse_int(text) == expected


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e400", "0x1p99999", "-1e999d"])
def test_a_double_that_is_no_finite_number_is_refused(value: str) -> None:
    """Kafka's Double.parseDouble reads these (and a Range lets NaN through); no setting means one."""
    ratio = CATALOG.topic("min.cleanable.dirty.ratio")
    quota = CATALOG.quota("users", "request_percentage")
    assert ratio is not None and quota is not None
    assert problem(ratio, value) is not None and problem(quota, value) is not None
    assert problem(quota, "1e308") is None and problem(ratio, "0.5") is None


@pytest.mark.parametrize("scalar", ["0x" + "f" * 3_490, "!!float 0x" + "f" * 3_000, "!!float " + "9" * 3_400,
                                    "-" + "9" * 3_499, "0o" + "7" * 3_490])
def test_every_integer_the_loader_gives_can_be_printed(scalar: str) -> None:
    """Python's str() of an int refuses more than 4,300 digits: the loader never makes one."""
    docs, diags = load_text(f"v: {scalar}\n", "f.yaml")
    assert not diags
    value = docs[0].data["v"]
    assert isinstance(value, int | float)
    str(value)


def test_longer_integers_are_a_diagnostic_at_their_line() -> None:
    _, diags = load_text("a: 1\nv: " + "9" * 3_501 + "\n", "f.yaml")
    assert [(d.source.line if d.source else 0, d.key) for d in diags] == [(2, "v")]


# --- finding 5: partitions -----------------------------------------------------------------------------------


def state(topics: dict[str, tuple[int | None, int | None]], static: dict[str, str] | None = None) -> DesiredState:
    spec = ClusterSpec("c1", "3.6", ZooKeeperSpec("127.0.0.1:1"), brokers=(1, 2, 3))
    made = {n: DesiredTopic(n, p, rf, {}, SourceRef("t.yaml", i + 1, 1), SourceRef("t.yaml", i + 1, 9))
            for i, (n, (p, rf)) in enumerate(topics.items())}
    props = {"<default>": {k: DesiredValue(v, SourceRef("server.properties", 2, 1)) for k, v in (static or {}).items()}}
    return DesiredState(spec, entities={}, topics=made, static=props)


def lines(diags: list[object]) -> list[tuple[int, str | None]]:
    return [(d.source.line if d.source else 0, d.key) for d in diags]  # type: ignore[attr-defined]


def test_partition_bounds_per_topic_cluster_and_replicas() -> None:
    limits = Limits(topic_partitions=100, cluster_partitions=150, cluster_replicas=400)
    diags, count = check_partitions(state({"a": (2**31 - 1, 1), "b": (100, 3), "c": (60, 1), "d": (40, 3)}),
                                    CATALOG, limits)
    assert lines(diags) == [(1, "partitions"), (3, "partitions"), (4, "replicationFactor")]
    assert all("RECONCILER_MAX_" in d.message for d in diags)
    assert count == PartitionCount(200, 480, SourceRef("t.yaml", 2, 9))


def test_topics_without_a_count_are_bounded_by_num_partitions() -> None:
    diags, _ = check_partitions(state({"a": (None, 1)}, {"num.partitions": "2147483647"}), CATALOG, Limits())
    assert [(d.source.file if d.source else "", d.key) for d in diags] == [("server.properties", "num.partitions")]
    diags, count = check_partitions(state({"a": (None, None)}, {"num.partitions": "8"}), CATALOG, Limits())
    assert diags == [] and count.partitions == 8


def test_the_bound_over_every_loaded_cluster_names_the_crossing_cluster() -> None:
    counts = {"b": PartitionCount(60, 60, SourceRef("b.yaml", 3, 1)), "a": PartitionCount(60, 60, None),
              "c": PartitionCount(10, 10, None)}
    diags = check_loaded_partitions(counts, Limits(partitions=100, tier="RECONCILER_PR_MAX_"))
    assert lines(diags) == [(3, "partitions")] and "RECONCILER_PR_MAX_PARTITIONS" in diags[0].message
    assert check_loaded_partitions(counts, Limits(partitions=130)) == []


# --- finding 10: the operator's settings and the load budget -----------------------------------------------


def test_settings_come_from_the_environment_with_a_pull_request_tier() -> None:
    assert limits_from({}) == Limits()
    pr = limits_from({"RECONCILER_MAX_ENTITIES": "5", "RECONCILER_PR_MAX_DOCUMENTS": "7"}, pull_request=True)
    assert pr.documents == 7 and pr.entities < Limits().entities and pr.setting("entities") == \
        "RECONCILER_PR_MAX_ENTITIES"
    assert pr.setting("topic_partitions") == "RECONCILER_MAX_TOPIC_PARTITIONS"  # no PR tier for one topic
    assert limits_from({"RECONCILER_MAX_TOPIC_PARTITIONS": "20_000"}).topic_partitions == 20_000
    for bad in ("0", "-1", "lots", "9" * 5_000):
        with pytest.raises(ReconcilerError) as caught:
            limits_from({"RECONCILER_MAX_DOCUMENTS": bad})
        assert "RECONCILER_MAX_DOCUMENTS" in caught.value.message


def test_the_budget_stops_at_the_document_that_crosses_it(tmp_path: Path) -> None:
    docs, _ = load_text("kind: Topics\nspec: {topics: {a: {}, b: {}, c: {}}}\n---\nkind: Quotas\n"
                        "spec: {users: {u: {}}, userClients: {u: {x: {}, y: {}}}, ips: {1.2.3.4: {}}}\n", "q.yaml")
    assert [entities_of(d) for d in docs] == [3, 4]
    budget = Budget(Limits(entities=5))
    with pytest.raises(OverBudget) as caught:
        budget.after(docs)
    first, shared = caught.value.args
    assert first.source == SourceRef("q.yaml", 4, 1) and "RECONCILER_MAX_ENTITIES" in first.message
    assert shared.source is None  # concerns every cluster: none is planned or applied
    with pytest.raises(OverBudget):
        Budget(Limits(manifest_bytes=10)).before(11, "big.yaml")


# --- finding 11: one sensitivity predicate ------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "key", "hidden"), [
    ("brokers", "ldap.bind.pw", True), ("brokers", "rsm.config.s3.secret.access.key", True),
    ("brokers", "ssl.keystore.password", True), ("brokers", "listener.name.x.ssl.key.password", True),
    ("brokers", "password.encoder.secret", True), ("brokers", "listener.name.x.ssl.keystore.location", False),
    ("brokers", "log.retention.ms", False), ("brokers", "leader.replication.throttled.rate", False),
    ("topics", "retention.ms", False), ("topics", "x.custom", True), ("topics", "log.retention.ms", True),
    ("users", "producer_byte_rate", False), ("users", "SCRAM-SHA-256", True), ("users", "custom_quota", True),
    ("ips", "connection_creation_rate", False), ("clients", "connection_creation_rate", True),
])
def test_unknown_and_password_keys_are_sensitive_at_their_scope(scope: str, key: str, hidden: bool) -> None:
    """Kafka's KafkaConfig.maybeSensitive: a PASSWORD type or a type it cannot determine."""
    assert CATALOG.is_sensitive(key, scope) is hidden


@pytest.mark.parametrize("name", [".", ".."])
def test_topic_names_zookeeper_cannot_hold_are_refused(name: str) -> None:
    """Kafka's Topic.validate refuses '.' and '..' (no znode can carry them); so does validation."""
    from reconciler.rules.topics import check_topics

    diags = check_topics(state({name: (1, 1)}))
    assert [(d.severity, d.key) for d in diags] == [("error", name)]
