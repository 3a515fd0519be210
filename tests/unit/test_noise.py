"""Issue 30, item 5: noise that hides signal. Factors a reviewer can read, numbers as the operator wrote them
(the plan keeps Kafka's stored form), and a wrong type that no longer hides a topic's other errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.manifests.validate import load_and_validate
from reconciler.model import EntityRef
from reconciler.plan import Change, EntityPlan, Plan, plan_to_dict
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from reconciler.risk import assess
from reconciler.units import as_written, describe, factor, short

CLIENT = EntityRef("clients", "app")
TOPIC = EntityRef("topics", "orders")


@pytest.mark.parametrize(("before", "expected"), [
    ("9223372036854775807", "from unlimited to 1 MiB/s: clients"),  # Long.MAX_VALUE
    ("9.223372036854776E18", "from unlimited to 1 MiB/s: clients"),  # the same, as a stored double
    ("1.7976931348623157E308", "from unlimited to 1 MiB/s: clients"),  # Double.MAX_VALUE
    ("2147483647", "from unlimited to 1 MiB/s: clients"),  # Integer.MAX_VALUE
])
def test_a_quota_lowered_from_unlimited_has_no_factor(before: str, expected: str) -> None:
    _, reasons = assess("producer_byte_rate", "~", before, "1048576", entity=CLIENT)
    assert expected in reasons[0] and "×" not in reasons[0], reasons


def test_huge_factors_are_capped_and_long_durations_read_in_years() -> None:
    _, reasons = assess("retention.ms", "~", "4398046511104", "1", entity=TOPIC)
    assert "from ≈139 years to 1 ms (over 10,000× lower)" in reasons[0], reasons
    _, reasons = assess("producer_byte_rate", "~", "4398046511104", "1", entity=CLIENT)
    assert "from 4 TiB/s to 1 B/s (over 10,000× lower)" in reasons[0], reasons
    assert factor(10_000, 1) == "10,000× lower" and factor(10_001, 1) == "over 10,000× lower"
    assert factor(1, 50_000) == "over 10,000× higher"


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("log.cleaner.io.max.bytes.per.second", "5.24288E7", "52428800 (50 MiB/s)"),
    ("log.cleaner.io.max.bytes.per.second", "5.0E7", "50000000 (≈47.7 MiB/s)"),
    ("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", "1.7976931348623157E308 (unlimited)"),
    ("controller_mutation_rate", "2.5", "2.5"),
    ("min.cleanable.dirty.ratio", "1.0E-5", "1.0E-5"),
    ("retention.ms", "604800000", "604800000 (7d)"),
    ("retention.ms", "4398046511104", "4398046511104 (≈139 years)"),
])
def test_values_are_shown_as_written(key: str, value: str, shown: str) -> None:
    assert describe(key, value) == shown


def test_as_written_leaves_anything_but_whole_doubles_alone() -> None:
    assert as_written("1.0E19") == "1.0E19"  # beyond a long: Java's form is the readable one
    assert as_written("-3.0E2") == "-300" and as_written("abcE") == "abcE" and as_written("E" * 5000) == "E" * 5000
    assert short("retention.ms", "999") == "999 ms" and short("num.io.threads", "8") == "8"


def test_the_plan_keeps_the_stored_form_while_its_renderings_show_the_written_one() -> None:
    change = Change("log.cleaner.io.max.bytes.per.second", "+", None, "5.24288E7")
    plan = Plan("c", entities=(EntityPlan(EntityRef("brokers", "<default>"), 1, (change,)),)).with_id()
    assert plan_to_dict(plan)["entities"][0]["changes"][0]["after"] == "5.24288E7"
    for out in (render_text([plan]), render_markdown([plan])):
        assert "52428800 (50 MiB/s)" in out and "5.24288E7" not in out


CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:2181"}
  brokers: [1, 2, 3]
"""
TOPICS = """apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
    orders:
      partitions: "three"
      replicationFactor: 5
      config: {retention.ms: abc, cleanup.policy: foo, min.insync.replicas: {nested: 1}}
"""


def test_a_wrong_type_does_not_hide_the_other_errors_of_the_same_topic(tmp_path: Path) -> None:
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "clusters" / "c1" / "topics.yaml").write_text(TOPICS)
    _, _, diags = load_and_validate(tmp_path, ["c1"])
    found = {(d.key, d.source.line if d.source else 0) for d in diags if d.severity == "error"}
    assert ("partitions", 7) in found  # the wrong type
    assert ("min.insync.replicas", 9) in found  # a second wrong type, inside the config
    assert ("replicationFactor", 8) in found  # and the topic's other errors, found by Kafka's rules
    assert ("retention.ms", 9) in found and ("cleanup.policy", 9) in found
