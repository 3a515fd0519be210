"""Issue 30, item 1: every warning and every unmanaged entity is in the PR comment, in one section near its top,
ordered by severity, merged (one warning per message, naming every broker and manifest line), escaped.

Regenerate the golden files after an intended change with `UPDATE_GOLDEN=1 pytest tests/unit/test_render_attention.py`
and review the diff.
"""

from __future__ import annotations

import json
from dataclasses import replace

from reconciler.errors import Diagnostic
from reconciler.manifests.planfile import read_plans, schema_problem
from reconciler.model import DEFAULT_ENTITY, EntityRef, SourceRef
from reconciler.plan import (
    Change,
    EntityPlan,
    Plan,
    TopicDelete,
    plan_from_dict,
    plan_to_dict,
    plans_from_json,
    with_diagnostics,
)
from reconciler.render.attention import RANK_DELETIONS, RANK_UNMANAGED, RANK_WARNINGS, attention, merged_warnings
from reconciler.render.json import render_plan_file
from reconciler.render.markdown import render_markdown
from reconciler.render.pr_comment import render_comment
from tests.unit.test_render import _golden

HINT = "'retention.ms' is in milliseconds: 604800 is ≈10m4s; if you meant 7d, write 604800000"
LISTENER = ("listener.name.external.ssl.keystore.type changes on the existing listener EXTERNAL on broker(s) {}: "
            "Kafka refuses it (\"Configs cannot be updated dynamically for existing listener\", "
            "DynamicListenerConfig.validateReconfiguration) unless server.properties already has the same value")
UNREGISTERED = ("broker {0} has per-broker overrides but is not registered in /brokers/ids (stopped, or not in this "
                "cluster?): the config is written but only takes effect when broker {0} starts")
ROTATION = "passwordEncoder.oldSecret is set: 2 password(s) are re-encoded with the new secret (apply needs --rotate)"
NOTICE = "spec.zookeeper is taken from the base revision (main), not from this branch"


def _src(cluster: str, file: str, line: int) -> SourceRef:
    return SourceRef(f"clusters/{cluster}/{file}", line, 5)


def attention_plans() -> list[Plan]:
    """Two clusters whose plans carry what used to reach only stderr: a hint, a refusal found once per broker
    (at two manifest lines), the same unregistered-broker warning for two brokers, a rotation warning, a PR
    notice, hostile text, and unmanaged entities (a topic removed from the manifests among them)."""
    prod = Plan(
        cluster="prod-eu-1", kafka_version="3.6", revision="3f9c2ab",
        entities=(EntityPlan(EntityRef("topics", "orders"), 2, (
            Change("retention.ms", "~", "604800000", "604800", risk="destructive",
                   reasons=("retention lowered from 7d to ≈10m4s (1,000× lower): data older than ≈10m4s is deleted",),
                   source=_src("prod-eu-1", "topics.yaml", 6)),)),),
        topics_to_delete=(TopicDelete("tmp-load-test", 12, 3, 4, "tmp-*"),),
        unmanaged=("topics/orders-old", "users/bob"),
        warnings=(NOTICE, ROTATION),
    )
    prod = with_diagnostics(prod, [
        Diagnostic("warning", HINT, _src("prod-eu-1", "topics.yaml", 6), "retention.ms"),
        Diagnostic("warning", LISTENER.format("1, 2"), _src("prod-eu-1", "brokers-1.yaml", 8),
                   "listener.name.external.ssl.keystore.type"),
        Diagnostic("warning", LISTENER.format("3"), _src("prod-eu-1", "brokers-3.yaml", 8),
                   "listener.name.external.ssl.keystore.type"),
        Diagnostic("warning", UNREGISTERED.format(7), _src("prod-eu-1", "brokers-7.yaml", 1)),
        Diagnostic("warning", UNREGISTERED.format(9), _src("prod-eu-1", "brokers-9.yaml", 1)),
        Diagnostic("warning", "@platform-team <img src=x> [link](http://x) `tick`", None, "k`ey|"),
        Diagnostic("error", "never kept: a plan is not made with errors"),
    ]).with_id()
    staging = Plan(
        cluster="staging", kafka_version="3.6", revision="3f9c2ab",
        entities=(EntityPlan(EntityRef("brokers", DEFAULT_ENTITY), 1, (Change("num.io.threads", "~", "8", "16"),)),),
        diagnostics=(Diagnostic("warning", HINT, _src("prod-eu-1", "topics.yaml", 6), "retention.ms"),),
        unmanaged=tuple(f"topics/legacy-{i:02d}" for i in range(25)),
    ).with_id()
    return [prod, staging]


def test_golden_plan_comment_with_warnings_and_unmanaged() -> None:
    _golden("plan-attention.md", render_markdown(attention_plans()))


def test_golden_pull_request_comment() -> None:
    comment = render_comment(
        attention_plans(), base="main", merge_base="0123456789abcdef", revision="3f9c2ab",
        reasons={"prod-eu-1": ["clusters/prod-eu-1/topics.yaml changed"], "staging": ["fleet.yaml changed"]},
        notices={"prod-eu-1": [NOTICE]},
    )
    _golden("pr-comment.md", comment)
    assert comment.count(NOTICE) == 1  # under "Not checked by this plan" only


def test_the_section_comes_before_every_diff_and_says_everything() -> None:
    md = render_markdown(attention_plans())
    section = md.index("Before you approve")
    assert section < md.index("```diff") and section < md.index("### 🛑 `prod-eu-1`")
    # ordered by severity: what loses data first
    assert md.index("**🛑 Topics to DELETE") < md.index("**⚠️ Warnings") < md.index("**ℹ️ Unmanaged")
    assert "`tmp-load-test`: 12 partitions × 3 replicas, named by policy.deleteTopics `tmp-*`" in md
    for text in ("if you meant 7d, write 604800000", "Kafka refuses it", "apply needs --rotate", "`topics/orders-old`",
                 "`users/bob`", "`topics/legacy-19`", "… and 5 more"):
        assert text in md, text


def test_the_same_warning_for_several_brokers_is_one_line_naming_them_all() -> None:
    merged = {w.message: w for w in merged_warnings(attention_plans())}
    refusal = merged[LISTENER.format("1, 2").replace("broker(s) 1, 2", "brokers 1, 2, 3")]
    assert refusal.sources == ("clusters/prod-eu-1/brokers-1.yaml:8", "clusters/prod-eu-1/brokers-3.yaml:8")
    assert UNREGISTERED.format("7, 9").replace("broker 7, 9", "brokers 7, 9") in merged
    hint = merged[HINT]
    assert hint.clusters == ("prod-eu-1", "staging") and hint.sources == ("clusters/prod-eu-1/topics.yaml:6",)
    assert len(merged) == 6
    md = render_markdown(attention_plans())
    assert md.count("Kafka refuses it") == 1 and md.count("if you meant 7d") == 1


def test_different_broker_lists_in_one_message_are_not_merged() -> None:
    text = "broker 1 replicates from broker 2"
    plans = [Plan("c", warnings=(text, "broker 3 replicates from broker 4"))]
    assert sorted(w.message for w in merged_warnings(plans)) == [text, "broker 3 replicates from broker 4"]


def test_blocks_are_ordered_by_rank_so_a_more_severe_kind_goes_first() -> None:
    blocks = attention(attention_plans())
    assert [b.rank for b in blocks] == [RANK_DELETIONS, RANK_WARNINGS, RANK_UNMANAGED]
    assert [b.count for b in blocks] == [1, 6, 27]
    assert attention([Plan("quiet")]) == []
    assert "Before you approve" not in render_markdown([Plan("quiet").with_id()])


def test_manifest_text_is_escaped() -> None:
    md = render_markdown(attention_plans())
    assert "@platform-team" not in md and "<img" not in md and "[link](http" not in md
    assert "&lt;img src=x&gt;" in md and "`` k`ey| ``" in md


def test_the_section_stays_within_the_budget() -> None:
    many = [Diagnostic("warning", f"warning {i} " + "x" * 900, _src("c", "t.yaml", i)) for i in range(200)]
    plan = with_diagnostics(Plan("c", unmanaged=tuple(f"topics/t{i:04d}" + "y" * 200 for i in range(300))), many)
    md = render_markdown([plan.with_id()], budget=20_000)
    assert len(md) <= 20_000 and "(see the plan artifact)" in md
    assert md.rstrip().endswith("kafka-reconciler</sub>")


def test_diagnostics_are_plan_data_round_tripped_and_schema_checked() -> None:
    plans = attention_plans()
    assert plans_from_json(render_plan_file(plans)) == plans
    assert read_plans(render_plan_file(plans)) == plans  # the plan-file JSON Schema accepts them
    raw = plan_to_dict(plans[0])
    hint = next(d for d in raw["diagnostics"] if d["message"] == HINT)
    assert hint == {"severity": "warning", "message": HINT, "key": "retention.ms",
                                     "source": ["clusters/prod-eu-1/topics.yaml", 6, 5]}
    assert all(d.severity == "warning" for d in plans[0].diagnostics)
    bad = {**raw, "diagnostics": [{**raw["diagnostics"][0], "severity": "error"}]}
    assert schema_problem(bad) is not None


def test_plans_without_diagnostics_keep_their_json_and_id() -> None:
    plan = Plan("c", warnings=("w",)).with_id()
    raw = plan_to_dict(plan)
    assert "diagnostics" not in raw  # older readers' files and ids unchanged
    assert plan_from_dict(json.loads(json.dumps(raw))) == plan
    assert with_diagnostics(plan, [Diagnostic("error", "e")]) is plan
    added = with_diagnostics(plan, [Diagnostic("warning", "d")])
    assert added.plan_id != plan.plan_id and added.plan_id == replace(added, plan_id="").with_id().plan_id


def test_a_topic_deletion_round_trips_and_only_then_appears_in_the_plan_file() -> None:
    prod = attention_plans()[0]
    raw = plan_to_dict(prod)
    assert raw["topicsToDelete"] == [{"name": "tmp-load-test", "partitions": 12, "replicationFactor": 3,
                                      "baseVersion": 4, "matched": "tmp-*"}]
    again = plan_from_dict(raw)
    assert again == prod and again.max_risk == "destructive" and again.counts.topics_deleted == 1
    assert read_plans(json.dumps(raw)) == [prod]  # the plan-file schema accepts it
    assert "topicsToDelete" not in plan_to_dict(replace(prod, topics_to_delete=()))  # older ids unchanged


def test_golden_pull_request_comment_blocked_by_policy() -> None:
    """Issue 39, item 5: a blocked PR showed `### 🛑 Policy: 2 error(s) block this pull request` and then
    `## ✅ Kafka config plan … Max risk ✅ safe` (the H3 before the H2). One H2 first, the worst of errors and
    risk; every section an H3 below it."""
    safe = Plan(cluster="lab-1", kafka_version="3.9", revision="3f9c2ab",
                entities=(EntityPlan(EntityRef("brokers", DEFAULT_ENTITY), 1,
                                     (Change("num.io.threads", "~", "8", "16"),)),)).with_id()
    policy = [Diagnostic("error", f"policy durability, rule rf (clusters/policies.yaml:8): cluster lab-1: topics/t{i}: "
                         "replicationFactor is 1, not at least 3: production topics keep three replicas",
                         _src("lab-1", "topics.yaml", 5 + i), "policy:durability/rf") for i in range(2)]
    comment = render_comment([safe], base="main", merge_base="0123456789abcdef", revision="3f9c2ab",
                             reasons={"lab-1": ["clusters/lab-1/topics.yaml changed"]}, diagnostics=policy)
    _golden("pr-comment-blocked.md", comment)
    headings = [line for line in comment.splitlines() if line.startswith("#")]
    assert headings[0] == "## 🛑 Kafka config plan: blocked by 2 error(s) · 0 to add, 1 to change, 0 to remove"
    assert all(h.startswith("### ") for h in headings[1:])
    assert "✅ Kafka config plan" not in comment
