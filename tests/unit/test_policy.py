"""kind Policy: each rule form, selectors, exceptions and positions, over real manifests on disk (validate's
path: load_and_validate with policies) and, for the views that need ZooKeeper's state, in-memory live states."""

from __future__ import annotations

import textwrap
from datetime import date
from pathlib import Path

import pytest

from reconciler.catalog import load_catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.policy import load_policies
from reconciler.manifests.validate import load_and_validate
from reconciler.model import EntityRef, LiveEntity, LiveState, LiveTopic, frozen_map
from reconciler.policy.compare import changed_policies, newly_flagged, summary_lines
from reconciler.policy.evaluate import violations
from reconciler.policy.model import parse_bound
from reconciler.policy.views import desired_view, live_view, planned_view
from reconciler.workflow import plan_against

D = "<default>"


def cluster(name: str, labels: str = "{env: prod}") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}, labels: {labels}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "127.0.0.1:2181/{name}"}}
          brokers: [1, 2, 3]
        """)


TOPICS = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Topics
    meta: {}
    spec:
      topics:
        orders:
          partitions: 6
          replicationFactor: 3
          config:
            retention.ms: 3600000
        payments.events:
          partitions: 128
          replicationFactor: 2
          config: {retention.ms: 604800000, min.insync.replicas: 2}
        Bad_Topic: {partitions: 1, replicationFactor: 3}
    """)


def policy(name: str, body: str) -> str:
    return (f"apiVersion: reconciler/v1\nkind: Policy\nmeta: {{name: {name}}}\nspec:\n"
            + textwrap.indent(textwrap.dedent(body), "  "))


def repo(root: Path, policies: str, extra: dict[str, str] | None = None) -> Path:
    files = {"clusters/a/cluster.yaml": cluster("a"), "clusters/a/topics.yaml": TOPICS,
             "clusters/b/cluster.yaml": cluster("b", "{env: staging}"), "clusters/b/topics.yaml": TOPICS,
             "clusters/policies.yaml": policies, **(extra or {})}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def judged(root: Path) -> list[Diagnostic]:
    _, _, diags = load_and_validate(root, policies=True)
    return diags


def policy_diags(root: Path) -> list[Diagnostic]:
    return [d for d in judged(root) if d.key and d.key.startswith("policy:")]


def line_of(root: Path, rel: str, text: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def test_bounds_with_units_at_the_value_line_and_the_policy_line(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("retention", """\
        selector: {labels: {env: prod}}
        rules:
          - id: retention-bounds
            key: retention.ms
            min: 2h
            max: 7d
            message: retention between two hours and a week
            docs: https://wiki.example/retention
        """))
    found = policy_diags(root)
    assert [(d.severity, d.source.file if d.source else None) for d in found] == [("error", "clusters/a/topics.yaml")]
    d = found[0]
    assert d.source is not None and d.source.line == line_of(root, "clusters/a/topics.yaml", "retention.ms: 3600000")
    assert f"clusters/policies.yaml:{line_of(root, 'clusters/policies.yaml', 'id: retention-bounds')}" in d.message
    assert "topics/orders" in d.message and "3600000 (1h)" in d.message and "at least 2h" in d.message
    assert "see https://wiki.example/retention" in d.message and d.key == "policy:retention/retention-bounds"
    # 7d exactly is within `max: 7d`; cluster b (staging) is not selected


def test_inherited_value_is_judged_where_it_is_written(tmp_path: Path) -> None:
    """min.insync.replicas is not set on orders: Kafka's default 1 applies (no manifest line: the topic's);
    a brokers/<default> value is found at its own line."""
    root = repo(tmp_path, policy("durability", """\
        selector: {labels: {env: prod}}
        rules:
          - {id: min-isr, key: min.insync.replicas, min: 2, message: two in-sync replicas}
          - {id: rf, key: replicationFactor, min: 3, message: three replicas, severity: warn}
        """))
    found = {(d.key, d.source.line if d.source else 0, d.severity) for d in policy_diags(root)}
    topics = "clusters/a/topics.yaml"
    assert found == {("policy:durability/min-isr", line_of(root, topics, "orders:"), "error"),
                     ("policy:durability/min-isr", line_of(root, topics, "Bad_Topic"), "error"),
                     ("policy:durability/rf", line_of(root, topics, "replicationFactor: 2"), "warning")}
    brokers = ("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n"
               "  config:\n    min.insync.replicas: 2\n")
    repo(root, (root / "clusters/policies.yaml").read_text(), {"clusters/a/brokers.yaml": brokers})
    assert {d.key for d in policy_diags(root)} == {"policy:durability/rf"}  # inherited from <default> now


def test_allowed_forbidden_on_topics_and_brokers(tmp_path: Path) -> None:
    brokers = ("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 2}\nspec:\n"
               "  config:\n    unclean.leader.election.enable: true\n    compression.type: gzip\n")
    root = repo(tmp_path, policy("safety", """\
        selector: {kinds: [topics, brokers], clusters: [a]}
        rules:
          - {id: unclean, key: unclean.leader.election.enable, allowed: [false], message: no data loss}
          - {id: no-gzip, key: compression.type, forbidden: [gzip], message: gzip costs CPU}
        """), {"clusters/a/brokers.yaml": brokers})
    found = {(d.key, d.source.line if d.source else 0) for d in policy_diags(root)}
    assert found == {("policy:safety/unclean", line_of(root, "clusters/a/brokers.yaml", "unclean")),
                     ("policy:safety/no-gzip", line_of(root, "clusters/a/brokers.yaml", "gzip"))}


def test_name_pattern_is_anchored_and_selector_names_filter(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("names", """\
        selector: {labels: {env: prod}, names: ['[^B].*']}
        rules:
          - {id: dotted, namePattern: '[a-z]+\\.[a-z]+', message: domain.entity}
        """))
    # orders does not match (anchored: no partial match); payments.events does; Bad_Topic is not selected
    assert [d.message.split(": ")[2] for d in policy_diags(root)] == ["topics/orders"]


def test_required_quota_on_every_user(tmp_path: Path) -> None:
    quotas = textwrap.dedent("""\
        apiVersion: reconciler/v1
        kind: Quotas
        meta: {}
        spec:
          users:
            alice: {producer_byte_rate: 1048576}
            bob: {consumer_byte_rate: 1048576}
        """)
    root = repo(tmp_path, policy("quotas", """\
        selector: {labels: {env: prod}, kinds: [users]}
        rules:
          - {id: produce-quota, required: [producer_byte_rate], message: every user has a produce quota}
        """), {"clusters/a/quotas.yaml": quotas})
    found = policy_diags(root)
    assert [(d.source.line if d.source else 0) for d in found] == [line_of(root, "clusters/a/quotas.yaml", "bob")]
    assert "users/bob: producer_byte_rate not set" in found[0].message


def test_count_limit_per_cluster(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("size", """\
        selector: {clusters: ['*']}
        rules:
          - {id: max-topics, maxCount: 2, message: split the cluster}
        """))
    found = policy_diags(root)
    assert sorted((d.source.file if d.source else "") for d in found) == ["clusters/a/cluster.yaml",
                                                                         "clusters/b/cluster.yaml"]
    assert "3 topics, over the limit of 2" in found[0].message


def test_exceptions_valid_and_expired(tmp_path: Path) -> None:
    body = """\
        selector: {labels: {env: prod}}
        rules:
          - {id: rf, key: replicationFactor, min: 3, message: three replicas}
        exceptions:
          - {entity: topics/payments.events, rules: [rf], reason: migrating, expires: "EXPIRES"}
        """
    root = repo(tmp_path, policy("durability", body.replace("EXPIRES", "2999-12-31")))
    assert policy_diags(root) == []
    repo(root, policy("durability", body.replace("EXPIRES", "2020-01-31")))
    found = policy_diags(root)
    # the violation it waived is an error again, and names the exception, its line and its expiry
    assert [(d.key, d.severity) for d in found] == [("policy:durability/rf", "error")]
    at = line_of(root, "clusters/policies.yaml", "entity: topics/payments.events")
    assert (f"the exception for topics/payments.events (clusters/policies.yaml:{at}, reason given: migrating) "
            "expired on 2020-01-31") in found[0].message
    # an expired exception that governs no violation blocks nothing: a warning at its line, to remove it
    repo(root, policy("durability", body.replace("EXPIRES", "2020-01-31").replace("payments.events", "gone")))
    stale = [d for d in policy_diags(root) if d.key == "policy:durability/exception"]
    assert [(d.severity, d.source.line if d.source else 0) for d in stale] == [("warning", at)]
    assert "waives nothing now: remove it" in stale[0].message


def test_a_cluster_directory_policy_judges_that_cluster_only(tmp_path: Path) -> None:
    own = policy("a-only", """\
        selector: {labels: {}}
        rules:
          - {id: few-partitions, key: partitions, max: 100, message: keep it small}
        """)
    fleet = policy("empty", "selector: {clusters: [none]}\nrules:\n  - {id: x, maxCount: 1, message: m}\n")
    root = repo(tmp_path, fleet, {"clusters/a/policies.yaml": own, "clusters/b/policies.yaml": "# none here\n"})
    found = policy_diags(root)
    assert [(d.source.file if d.source else "") for d in found] == ["clusters/a/topics.yaml"]


def test_a_policy_outside_the_policy_files_is_an_error(tmp_path: Path) -> None:
    stray = policy("stray", "rules:\n  - {id: x, maxCount: 1, message: m}\n")
    root = repo(tmp_path, policy("ok", "rules:\n  - {id: x, maxCount: 100, message: m}\n"),
                {"clusters/a/rules.yaml": stray})
    errors = [d for d in judged(root) if d.severity == "error"]
    assert [(d.source.file if d.source else "", d.key) for d in errors] == [("clusters/a/rules.yaml", "kind")]
    assert "belongs in clusters/policies.yaml" in errors[0].message


@pytest.mark.parametrize(("rule", "expected"), [
    ("{id: r, key: retention.ms, min: 1h, allowed: [1], message: m}", "several checks (min, allowed)"),
    ("{id: r, message: m}", "has no check"),
    ("{id: r, min: 3, message: m}", "needs the config key"),
    ("{id: r, key: retention.ms, min: 7 parsecs, message: m}", "unknown unit 'parsecs'"),
    ("{id: r, key: retention.ms, min: 7d, max: 1d, message: m}", "min is above max"),
    ("{id: r, namePattern: '[a-', message: m}", "regular expression [a-: not supported: missing ]"),
    ("{id: r, key: retention.ms, min: 1, message: m, colour: red}", "unknown field 'colour'"),
])
def test_bad_rules_are_errors_at_their_line(tmp_path: Path, rule: str, expected: str) -> None:
    root = repo(tmp_path, policy("bad", f"rules:\n  - {rule}\n"))
    errors = [d for d in judged(root) if d.severity == "error"]
    assert len(errors) == 1 and expected in errors[0].message, errors
    assert errors[0].source is not None and errors[0].source.file == "clusters/policies.yaml"
    assert errors[0].source.line == 6  # the rule's own line


def test_exception_naming_an_unknown_rule(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("p", """\
        rules:
          - {id: r, key: partitions, max: 10, message: m}
        exceptions:
          - {entity: topics/orders, rules: [nope], reason: r, expires: "2030-01-01"}
        """))
    assert ["unknown rule(s) nope" in d.message for d in judged(root) if d.severity == "error"] == [True]


def test_parse_bound() -> None:
    assert parse_bound("7d") == 604_800_000 and parse_bound("1 GiB") == 1 << 30 and parse_bound("512MiB") == 1 << 29
    assert parse_bound("500ms") == 500 and parse_bound(3) == 3 and parse_bound("0.5") == 0.5
    for bad in ("7 dd", "seven", True, "1e9"):
        with pytest.raises(ValueError):
            parse_bound(bad)


def _live(retention: str | None, topics: dict[str, int] | None = None) -> LiveState:
    names = topics or {"orders": 6, "payments.events": 128, "Bad_Topic": 1}
    config = {"retention.ms": retention} if retention is not None else {}
    return LiveState(
        "a", brokers=frozen_map(), entities=frozen_map({
            EntityRef("topics", "orders"): LiveEntity(EntityRef("topics", "orders"), frozen_map(config), 3)}),
        topics=frozen_map({n: LiveTopic(n, frozen_map({p: (1, 2) if n == "payments.events" else (1, 2, 3)
                                                       for p in range(k)}), 1) for n, k in names.items()}))


def test_change_size_rule_reads_the_value_before_the_plan(tmp_path: Path) -> None:
    """retention.ms lowered more than 10x at once: 7d -> 1h is (168x); 2h -> 1h is not."""
    root = repo(tmp_path, policy("steps", """\
        selector: {clusters: [a]}
        rules:
          - {id: retention-cut, key: retention.ms, maxDecrease: 10, message: lower retention in steps}
        """))
    _, states, _ = load_and_validate(root)
    policies, problems = load_policies(root, ["a"])
    assert problems == []
    catalog = load_catalog()
    for before, flagged in (("604800000", True), ("7200000", False), ("-1", True), (None, True)):
        live = _live(before)
        plan = plan_against(states["a"], live, root, None).plan
        found = violations(policies, planned_view(states["a"], live, plan, catalog), date(2026, 1, 1))
        assert bool(found) == flagged, (before, found)
    # validate has no "before": never flags a change's size
    assert violations(policies, desired_view(states["a"], catalog), date(2026, 1, 1)) == []


def test_plan_diagnostics_carry_policy_errors(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("d", """\
        selector: {clusters: [a]}
        rules:
          - {id: rf, key: replicationFactor, min: 3, message: three replicas}
        """))
    _, states, _ = load_and_validate(root)
    result = plan_against(states["a"], _live("3600000"), root, None)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert [d.key for d in errors] == ["policy:d/rf"] and "payments.events" in errors[0].message
    assert "replicationFactor is 2" in errors[0].message  # the live replica count: what apply leaves


def test_live_view_judges_every_live_topic(tmp_path: Path) -> None:
    root = repo(tmp_path, policy("live", """\
        selector: {clusters: [a]}
        rules:
          - {id: parts, key: partitions, max: 10, message: m}
          - {id: retention, key: retention.ms, max: 1d, message: m}
        """))
    _, states, _ = load_and_validate(root)
    policies, _ = load_policies(root, ["a"])
    live = _live("-1", {"orders": 6, "undeclared": 40})
    found = violations(policies, live_view(live, load_catalog(), states["a"]), date(2026, 1, 1))
    assert sorted((v.entity, v.rule.id) for v in found) == [("topics/orders", "retention"),
                                                            ("topics/undeclared", "parts"),
                                                            ("topics/undeclared", "retention")]
    assert all(v.live and v.source == states["a"].cluster.source for v in found)  # no manifest line: the cluster's


def test_a_policy_change_lists_what_it_would_newly_flag(tmp_path: Path) -> None:
    old = policy("parts", "selector: {clusters: ['*']}\nrules:\n  - {id: p, key: partitions, max: 200, message: m}\n")
    new = old.replace("max: 200", "max: 5")
    root = repo(tmp_path / "head", new)
    base = repo(tmp_path / "base", old)
    head_set, _ = load_policies(root)
    base_set, _ = load_policies(base)
    assert [(c.name, c.what) for c in changed_policies(base_set, head_set)] == [("parts", "changed")]
    assert changed_policies(base_set, base_set) == []
    _, states, _ = load_and_validate(root)
    views = [desired_view(s, load_catalog()) for s in states.values()]
    flagged = newly_flagged(base_set, head_set, views, date(2026, 1, 1))
    assert sorted((v.cluster, v.entity) for v in flagged) == [("a", "topics/orders"), ("a", "topics/payments.events"),
                                                              ("b", "topics/orders"), ("b", "topics/payments.events")]
    lines = summary_lines(changed_policies(base_set, head_set), flagged)
    assert lines[0] == "policy parts changed (clusters/policies.yaml:1)"
    assert lines[1].startswith("the head's versions would newly flag 4 violation(s) in 2 cluster(s)")
