"""Renderers: golden files for text/markdown/json, no secrets ever, truncation, random plans.

Regenerate the golden files after an intended change with `UPDATE_GOLDEN=1 pytest tests/unit/test_render.py`
and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.cli.console import ansi_text
from reconciler.model import DEFAULT_ENTITY, ChangeOp, EntityRef, RedactedState, Risk, SecretRef, SourceRef
from reconciler.plan import (
    Change,
    EntityPlan,
    PartitionIncrease,
    Plan,
    TopicCreate,
    plan_from_dict,
    plans_from_json,
)
from reconciler.render.json import redacted, render_json, render_plan_file
from reconciler.render.markdown import GITHUB_LIMIT, render_markdown
from reconciler.render.text import plan_lines, render_text
from reconciler.risk import assess

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
PLANTED = "SECRET-CIPHERTEXT-XYZ"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _src(file: str, line: int) -> SourceRef:
    return SourceRef(f"clusters/prod-eu-1/{file}", line)


def _entity(
    ref: EntityRef, version: int | None, *changes: Change, delete: bool = False,
    topic_rf: int | None = None, inherited: str | None = None,
) -> EntityPlan:
    """Risk from the real rules, so the golden files show the reasons operators will read."""
    rated = []
    for c in changes:
        redacted = c.redacted if c.sensitive else None
        risk, reasons = assess(c.key, c.op, c.before, c.after, entity=ref, topic_rf=topic_rf,
                               inherited=inherited, redacted=redacted)
        rated.append(replace(c, risk=risk, reasons=reasons))
    return EntityPlan(ref, version, tuple(rated), delete_entity=delete)


def sample_plans() -> list[Plan]:
    default = EntityRef("brokers", DEFAULT_ENTITY)
    b1 = EntityRef("brokers", "1")
    prod = Plan(
        cluster="prod-eu-1",
        kafka_version="3.6",
        revision="3f9c2ab",
        created_at="2024-05-01T12:00:00Z",
        entities=(
            _entity(default, 7,
                    Change("log.cleaner.threads", "-", "2", None, source=_src("brokers.yaml", 7)),
                    Change("log.retention.ms", "~", "604800000", "86400000", source=_src("brokers.yaml", 9)),
                    Change("num.io.threads", "+", None, "16", source=_src("brokers.yaml", 10)),
                    inherited="1"),
            _entity(b1, 3,
                    Change("listener.name.external.scram-sha-512.sasl.jaas.config", "+", sensitive=True,
                           redacted="changed", secret=SecretRef(env="EXTERNAL_JAAS"),
                           source=_src("listeners.yaml", 14)),
                    Change("listener.name.external.ssl.keystore.password", "~", sensitive=True,
                           redacted="changed", secret=SecretRef(encoded=PLANTED),
                           source=_src("listeners.yaml", 15)),
                    Change("listener.name.internal.ssl.key.password", "~", sensitive=True,
                           redacted="unchanged", secret=SecretRef(file="secrets/internal-key.txt"),
                           reencode=True),
                    Change("listeners", "~", "INTERNAL://:9092,REPLICATION://:9093,EXTERNAL://:9094",
                           "INTERNAL://:9092,REPLICATION://:9093", source=_src("listeners.yaml", 8))),
            _entity(EntityRef("clients", "billing-app"), None,
                    Change("producer_byte_rate", "+", None, "4194304", source=_src("quotas.yaml", 5))),
            _entity(EntityRef("topics", "orders"), 2,
                    Change("cleanup.policy", "~", "delete", "compact", source=_src("topics.yaml", 12)),
                    Change("retention.ms", "~", "604800000", "86400000", source=_src("topics.yaml", 12))),
            _entity(EntityRef("topics", "payments.ledger"), 5,
                    Change("min.insync.replicas", "~", "2", "4", source=_src("topics.yaml", 20)), topic_rf=3),
            _entity(EntityRef("users", "alice", "app-1"), 1,
                    Change("producer_byte_rate", "-", "2097152", None), delete=True),
        ),
        topics_to_create=(
            TopicCreate("orders.v2", 12, 3, {"cleanup.policy": "compact", "retention.ms": "86400000"},
                        {p: (1, 2, 3) for p in range(12)}, _src("topics.yaml", 30)),
        ),
        partition_increases=(
            PartitionIncrease("payments", 6, 12, 4, {p: (2, 3, 1) for p in range(6, 12)},
                              _src("topics.yaml", 40)),
        ),
        unmanaged=tuple(f"topics/legacy-{i:02d}" for i in range(12)),
        ignored=4,
        warnings=("broker 7 has a per-broker override but is not registered in /brokers/ids",
                  "@platform-team <b>check</b> [link](http://x)"),
    ).with_id()
    staging = Plan(
        cluster="staging",
        kafka_version="3.6",
        revision="3f9c2ab",
        entities=(_entity(default, 1, Change("num.io.threads", "~", "8", "16")),),
    ).with_id()
    quiet = Plan(cluster="prod-us-1", kafka_version="3.6", revision="3f9c2ab", unmanaged=("users/bob",))
    quiet = quiet.with_id()
    return [prod, staging, quiet]


def empty_plans() -> list[Plan]:
    return [Plan(cluster="prod-eu-1", kafka_version="3.6", revision="3f9c2ab").with_id()]


def _golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs; UPDATE_GOLDEN=1 regenerates it"


RENDERERS = {
    "txt": lambda plans: render_text(plans),
    "color.txt": lambda plans: ansi_text(plan_lines(plans)),  # through rich, as the CLI prints it
    "md": render_markdown,
    "json": render_json,
}


@pytest.mark.parametrize("ext", sorted(RENDERERS))
def test_golden(ext: str) -> None:
    _golden(f"plan.{ext}", RENDERERS[ext](sample_plans()))


@pytest.mark.parametrize("ext", ["txt", "md", "json"])
def test_golden_empty(ext: str) -> None:
    _golden(f"plan-empty.{ext}", RENDERERS[ext](empty_plans()))


def test_no_renderer_prints_a_secret() -> None:
    plans = sample_plans()
    for render in RENDERERS.values():
        out = render(plans)
        assert PLANTED not in out
        assert "EXTERNAL_JAAS" in out or out.startswith("{")  # a reference's name is fine (text, markdown)


def test_text_summary_lines() -> None:
    out = render_text(sample_plans())
    assert out.endswith(
        "Plan: 3 to add, 8 to change, 2 to remove, 1 topic to create, 6 partitions to add "
        "(4 destructive, 5 disruptive).\n"  # the partition increase is disruptive
    )
    assert "  staging: 0 to add, 1 to change, 0 to remove.\n" in out
    assert "[destructive: retention lowered from 7d to 1d (7× lower): data older than 1d is deleted]" in out
    assert "604800000 (7d) -> 86400000 (1d)" in out
    assert "… and 2 more" in out
    assert render_text(empty_plans()).endswith("No changes. Live configuration matches the manifests.\n")
    assert render_text([]) == "No changes. Live configuration matches the manifests.\n"


def test_colour_only_when_asked() -> None:
    plain, coloured = render_text(sample_plans()), ansi_text(plan_lines(sample_plans()))
    assert "\x1b[" not in plain
    assert "\x1b[1;31m" in coloured  # destructive tags in bold red
    assert ANSI.sub("", coloured) == plain


def test_markdown_puts_risks_above_the_diff_and_escapes_free_text() -> None:
    md = render_markdown(sample_plans())
    section = md[md.index("### 🛑 `prod-eu-1`"):]
    assert section.index("**🛑 Destructive (4)**") < section.index("```diff")
    assert "@platform-team" not in md and "<b>" not in md and "[link](http" not in md
    assert md.count("```diff") == md.count("\n```\n") == 2


def test_markdown_folds_long_sections() -> None:
    changes = tuple(Change(f"custom.key.{i:03d}", "+", None, str(i)) for i in range(40))
    plan = Plan(cluster="c1", entities=(EntityPlan(EntityRef("brokers", "1"), 1, changes),)).with_id()
    md = render_markdown([plan])
    assert "<details><summary>41 diff lines</summary>" in md
    assert md.index("</details>") > md.index("custom.key.039")


def _big_plan(cluster: str, n: int) -> Plan:
    changes = tuple(
        Change(f"retention.ms.{i:05d}", "~", "604800000", "86400000", risk="destructive", reasons=("low",))
        for i in range(n)
    )
    return Plan(cluster=cluster, entities=(EntityPlan(EntityRef("topics", "big"), 1, changes),)).with_id()


def test_markdown_truncates_below_the_github_limit() -> None:
    plans = [_big_plan("a", 10_000), _big_plan("b", 500)]
    md = render_markdown(plans)
    assert len(md) < GITHUB_LIMIT and len(md.encode("utf-16-le")) // 2 < GITHUB_LIMIT
    shown = md.count("\n+ retention.ms.")
    note = re.search(r"… (\d+) more changes \(see the plan artifact\)", md)
    assert note is not None and int(note.group(1)) == 10_500 - shown
    assert md.count("```diff") == md.count("\n```\n")  # the cut block is closed
    assert md.rstrip().endswith("kafka-reconciler</sub>")  # the footer survives
    small = render_markdown(plans, budget=3_000)
    assert len(small) <= 3_000 and "more changes" in small


# --- random plans -----------------------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_values = st.none() | _text | st.integers(-2, 10**13).map(str)


@st.composite
def _changes(draw: st.DrawFn) -> Change:
    op: ChangeOp = draw(st.sampled_from(["+", "~", "-"]))
    key = draw(st.sampled_from(["retention.ms", "segment.bytes", "listeners", "producer_byte_rate", "k`|x"]))
    risk: Risk = draw(st.sampled_from(["safe", "disruptive", "destructive"]))
    if draw(st.booleans()):
        secret = SecretRef(encoded=PLANTED) if op != "-" else None
        state: RedactedState = draw(st.sampled_from(["changed", "unchanged", "unknown"]))
        why: tuple[str, ...] = (draw(_text),) if risk != "safe" else ()
        return Change(key, op, sensitive=True, redacted=state, secret=secret, risk=risk, reasons=why)
    before = draw(_values) if op != "+" else None
    after = draw(_values) if op != "-" else None
    src = draw(st.none() | st.builds(SourceRef, _text, st.integers(1, 999)))
    reasons = tuple(draw(st.lists(_text, max_size=2)))
    return Change(key, op, before, after, risk=risk, reasons=reasons, source=src)


@st.composite
def _plans(draw: st.DrawFn) -> list[Plan]:
    plans = []
    for i in range(draw(st.integers(0, 3))):
        entities = tuple(
            EntityPlan(EntityRef("topics", draw(_text) or "t"), draw(st.none() | st.integers(0, 9)),
                       tuple(draw(st.lists(_changes(), min_size=1, max_size=4))), draw(st.booleans()))
            for _ in range(draw(st.integers(0, 3)))
        )
        topics = tuple(TopicCreate(draw(_text) or "n", 3, 2, {"retention.ms": draw(_text)}, {0: (1, 2)})
                       for _ in range(draw(st.integers(0, 2))))
        plan = Plan(
            cluster=f"c{i}{draw(_text)}", entities=entities, topics_to_create=topics,
            unmanaged=tuple(draw(st.lists(_text, max_size=12))), ignored=draw(st.integers(0, 5)),
            warnings=tuple(draw(st.lists(_text, max_size=2))), revision=draw(st.none() | _text),
        )
        plans.append(plan.with_id())
    return plans


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(plans=_plans())
def test_random_plans_render_and_round_trip(plans: Sequence[Plan]) -> None:
    for render in RENDERERS.values():
        assert PLANTED not in render(plans)
    assert len(render_markdown(plans)) < GITHUB_LIMIT
    doc = json.loads(render_json(plans))
    assert doc["formatVersion"] == 1
    assert [plan_from_dict(p) for p in doc["plans"]] == [redacted(p) for p in plans]


def test_control_characters_from_live_state_are_escaped() -> None:
    change = Change("custom.key", "~", "a\x1b[2Jb", "line1\nline2")
    plan = Plan(cluster="c1", entities=(EntityPlan(EntityRef("brokers", "1"), 1, (change,)),),
                warnings=("\u202eevil",)).with_id()
    for out in (ansi_text(plan_lines([plan])), render_markdown([plan])):
        assert "\x1b[2J" not in out and "line1\nline2" not in out and "\u202e" not in out
        assert "a\\x1b[2Jb" in out and "line1\\nline2" in out and "\\u202eevil" in out
    assert json.loads(render_json([plan]))["plans"][0]["entities"][0]["changes"][0]["after"] == "line1\nline2"


def test_plan_file_keeps_references_and_passes_the_id_check() -> None:
    plans = sample_plans()
    assert plans_from_json(render_plan_file(plans)) == plans
    # the view lost the sealed value: its id no longer matches, so apply refuses it rather than guessing
    with pytest.raises(ValueError, match="does not match its id"):
        plans_from_json(render_json(plans))
    assert plans_from_json(render_json(plans[1:])) == plans[1:]  # nothing sealed: view == file


def test_plan_file_id_is_checked_on_the_files_own_json_and_on_the_canonical_form() -> None:
    plans = sample_plans()
    doc = json.loads(render_plan_file(plans))
    # laid out differently (compact, keys in another order): the same JSON content, accepted as written
    relaid = {"plans": [dict(reversed(list(p.items()))) for p in doc["plans"]], "formatVersion": doc["formatVersion"]}
    assert plans_from_json(json.dumps(relaid, separators=(",", ":"))) == plans
    # a number written as 3.0 hashes differently as JSON but is the same plan: the canonical form accepts it
    created = next(p for p in doc["plans"] if p["topicsToCreate"])
    created["topicsToCreate"][0]["partitions"] = float(created["topicsToCreate"][0]["partitions"])
    assert plans_from_json(json.dumps(doc)) == plans
    # a value edited after planning matches neither the file's id nor its canonical form: refused
    changed = next(p for p in doc["plans"] if p["entities"])
    first = next(c for e in changed["entities"] for c in e["changes"] if c.get("after") is not None)
    first["after"] = str(first["after"]) + "0"
    with pytest.raises(ValueError, match="does not match its id"):
        plans_from_json(json.dumps(doc))
