"""Broad ACL grants are rated (issue 38, finding 18): `User:*` with `All` on `Topic:*`, grants on the Cluster
resource or on a short prefix land in the PR comment's "Before you approve" section, and the plan is not ✅ safe.
Planned as `plan`/the PR check plan (manifests on disk, `workflow.plan_against`, the PR comment renderer)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from reconciler.manifests.validate import load_and_validate
from reconciler.model import AclEntry, AclResource, LiveState
from reconciler.plan import plan_from_json, plan_to_json
from reconciler.render.pr_comment import render_comment
from reconciler.risk.acls import ACL_RULES, grant_rules
from reconciler.workflow import plan_against

CLUSTER = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: lab-1}
spec:
  kafkaVersion: "3.9"
  zookeeper: {connect: "127.0.0.1:1/kafka/lab-1"}
  brokers: [1]
"""
ACLS = """\
apiVersion: reconciler/v1
kind: Acls
meta: {}
spec:
  resources:
    - {type: Topic, name: "*", entries: [{principal: "User:*", operation: All}]}
    - {type: Cluster, name: kafka-cluster, entries: [{principal: "User:mallory", operation: Alter}]}
    - {type: Group, name: "a", pattern: PREFIXED, entries: [{principal: "User:*", operation: Read}]}
    - {type: Topic, name: "orders", entries: [{principal: "User:alice", operation: Read}]}
    - {type: Topic, name: "app-", pattern: PREFIXED, entries: [{principal: "User:app", operation: All}]}
"""


def comment(tmp_path: Path, acls: str) -> tuple[str, str]:
    (tmp_path / "clusters/lab-1").mkdir(parents=True)
    (tmp_path / "clusters/lab-1/cluster.yaml").write_text(CLUSTER)
    (tmp_path / "clusters/lab-1/acls.yaml").write_text(textwrap.dedent(acls))
    _, states, diags = load_and_validate(tmp_path)
    assert not diags, diags
    result = plan_against(states["lab-1"], LiveState("lab-1", {}, {}, {}, acls={}), tmp_path, None)
    plan = result.plan
    assert plan_from_json(plan_to_json(plan)).acls == plan.acls  # the rating is in the plan file
    return plan.max_risk, render_comment([plan], base="main")


def test_broad_grants_are_rated_and_listed_before_approval(tmp_path: Path) -> None:
    """Before: `## ✅ Kafka config plan … Max risk ✅ safe`, and no word of the grants above the diff."""
    risk, text = comment(tmp_path, ACLS)
    assert risk == "disruptive"
    assert "## ⚠️ Kafka config plan" in text and "✅" not in text.split("\n### ")[0]
    section = text.split("### 🔓 Before you approve\n\n", 1)[1].split("\n\n", 1)[0]
    assert section == (
        "**🔓 Broad access granted (3): who may do what on many resources at once**\n"
        "- `lab-1`: disruptive: User:mallory granted Alter on the Cluster resource: it may act on the cluster itself "
        "(ClusterAction is what brokers do to each other; Alter and AlterConfigs change the brokers' "
        "configuration)\n"
        "- `lab-1`: disruptive: everyone (User:*) granted Read on every group whose name starts with 'a' (a "
        "1-character prefix): every principal, anonymous ones included on a PLAINTEXT listener\n"
        "- `lab-1`: disruptive: everyone (User:*) granted All on every topic (Topic:*, present and future): any "
        "client, anonymous ones included on a PLAINTEXT listener, may delete or alter them")


def test_narrow_grants_stay_safe(tmp_path: Path) -> None:
    risk, text = comment(tmp_path, """\
        apiVersion: reconciler/v1
        kind: Acls
        meta: {}
        spec:
          resources:
            - {type: Topic, name: "orders", entries: [{principal: "User:alice", operation: Read}]}
            - {type: Topic, name: "app-", pattern: PREFIXED, entries: [{principal: "User:app", operation: All}]}
            - {type: Cluster, name: kafka-cluster, entries: [{principal: "User:app", operation: IdempotentWrite}]}
        """)
    assert risk == "safe" and "Broad access" not in text


def test_the_table_is_data_the_impact_job_can_read() -> None:
    everything = AclResource("Topic", "LITERAL", "*")
    fired = grant_rules(everything, AclEntry("User:*", "*", "All", "Allow"))
    assert [r.id for r in fired] == ["acl-everyone-all-on-everything", "acl-everyone", "acl-all-on-everything"]
    assert grant_rules(everything, AclEntry("User:*", "*", "All", "Deny")) == ()  # a Deny takes access away
    assert len({r.id for r in ACL_RULES}) == len(ACL_RULES)


def test_the_impact_report_rates_grants_with_the_same_table(tmp_path: Path) -> None:
    from reconciler.impact.access import access_summary

    (tmp_path / "clusters/lab-1").mkdir(parents=True)
    (tmp_path / "clusters/lab-1/cluster.yaml").write_text(CLUSTER)
    (tmp_path / "clusters/lab-1/acls.yaml").write_text(ACLS)
    _, states, _ = load_and_validate(tmp_path)
    summary = access_summary(states, {"lab-1": {}})
    assert summary is not None
    cluster = summary["clusters"][0]
    assert cluster["broadGrants"] == 3
    assert cluster["reasons"][0].startswith("User:mallory granted Alter on the Cluster resource")
