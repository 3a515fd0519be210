"""A new topic's durability is rated by the plan itself, policy or not (issue 39, item 5, second half): an RF-1
topic with 90-day retention on a 3-broker cluster was `✅ safe`. Planned as `plan` and the PR check plan
(manifests on disk, `workflow.plan_against`), rendered as the PR comment and the text plan."""

from __future__ import annotations

import textwrap
from pathlib import Path

from reconciler.manifests.validate import load_and_validate
from reconciler.model import LiveState
from reconciler.plan import Plan, plan_from_json, plan_to_json
from reconciler.render.pr_comment import render_comment
from reconciler.render.text import render_text
from reconciler.workflow import plan_against

TOPICS = """\
apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
    payments.audit: {partitions: 6, replicationFactor: 1, config: {retention.ms: 7776000000}}
    events: {partitions: 3, replicationFactor: 3}
"""


def plan(tmp_path: Path, brokers: str) -> Plan:
    (tmp_path / "clusters/lab-1").mkdir(parents=True)
    (tmp_path / "clusters/lab-1/cluster.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: lab-1}}
        spec:
          kafkaVersion: "3.9"
          zookeeper: {{connect: "127.0.0.1:1/lab-1"}}
          brokers: {brokers}
        """))
    (tmp_path / "clusters/lab-1/topics.yaml").write_text(TOPICS.replace("replicationFactor: 3", "replicationFactor: 1")
                                                         if brokers == "[1]" else TOPICS)
    _, states, diags = load_and_validate(tmp_path)
    assert not [d for d in diags if d.severity == "error"], diags
    result = plan_against(states["lab-1"], LiveState("lab-1", {}, {}, {}, acls={}), tmp_path, None).plan
    assert plan_from_json(plan_to_json(result)).topics_to_create == result.topics_to_create  # in the plan file
    return result


def test_a_single_replica_topic_is_rated_for_durability(tmp_path: Path) -> None:
    p = plan(tmp_path, "[1, 2, 3]")
    reason = ("durability: created with a single replica on a 3-broker cluster: the loss of that broker's disk loses "
              "the topic's records (90d of them on one disk)")
    assert p.max_risk == "disruptive"
    assert [(t.name, t.risk, t.reasons) for t in p.topics_to_create] == [
        ("events", "safe", ()), ("payments.audit", "disruptive", (reason,))]
    comment = render_comment([p], base="main")
    assert "## ⚠️ Kafka config plan" in comment and "| `lab-1` | 0 | 0 | 0 | 2 | ⚠️ disruptive |" in comment
    assert f"- `topics/payments.audit` `(new topic)`: {reason}" in comment
    assert f"          [disruptive: {reason}]" in render_text([p])


def test_one_broker_has_no_second_replica_to_give(tmp_path: Path) -> None:
    p = plan(tmp_path, "[1]")
    assert p.max_risk == "safe" and {t.risk for t in p.topics_to_create} == {"safe"}
