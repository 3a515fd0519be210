"""The impact report's access section (reconciler/impact/access.py) on a real local SparkSession: the inventory's
ACLs (written and read back as Parquet, as `snapshot` and `impact` do) against the manifests give per cluster the
entries added and removed and the principals losing access, equal to what `plan` makes of the same live state.

Worked by hand, cluster c1 (declares ACLs), live:
  Topic:LITERAL:orders   Allow User:alice Read, Allow User:bob Read
  Topic:PREFIXED:app-    Allow User:carol Write           (no manifest declares it: unmanaged, left alone)
manifests: Topic:LITERAL:orders  Allow User:bob Read, Deny User:eve Read; Group:LITERAL:g Allow User:bob Read
  -> added 2 (eve's Deny, bob's group Read), removed 1 (alice's Read); losing access: User:alice, User:eve.
Cluster c2 declares no ACL: not in the section, and its ACLs are not read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reconciler.diff import build_plan
from reconciler.impact.access import access_summary, assess_access
from reconciler.impact.inventory import live_rows, write_tables
from reconciler.manifests.validate import load_and_validate
from reconciler.model import AclEntry, AclResource, LiveAcls, LiveState, LiveTopic
from tests.unit.test_validate import write_repo

pytestmark = [pytest.mark.spark]

ORDERS, APP = AclResource("Topic", "LITERAL", "orders"), AclResource("Topic", "PREFIXED", "app-")
ACLS = """apiVersion: reconciler/v1
kind: Acls
meta: {}
spec:
  resources:
    - type: Topic
      name: orders
      entries:
        - {principal: User:bob, operation: Read}
        - {principal: User:eve, operation: Read, permission: Deny}
    - type: Group
      name: g
      entries: [{principal: User:bob, operation: Read}]
"""


def _live(cluster: str) -> LiveState:
    allow = [AclEntry(p, "*", "Read", "Allow") for p in ("User:alice", "User:bob")]
    return LiveState(cluster, {}, {}, {}, acls={
        ORDERS: LiveAcls(ORDERS, frozenset(allow), 4),
        APP: LiveAcls(APP, frozenset({AclEntry("User:carol", "*", "Write", "Allow")}), 1)})


def test_the_access_section_is_the_plans_acl_changes(spark: Any, tmp_path: Path) -> None:
    write_repo(tmp_path / "repo", {"clusters/c1/acls.yaml": ACLS})
    _, states, diags = load_and_validate(tmp_path / "repo")
    assert not [d for d in diags if d.severity == "error"]
    states["c2"] = replace(states["c1"], cluster=replace(states["c1"].cluster, name="c2"), acls={})
    rows: dict[str, list[Any]] = {}
    for cluster in ("c1", "c2"):
        for table, found in live_rows(_live(cluster)).items():
            rows.setdefault(table, []).extend(found)
    inventory = tmp_path / "inventory"
    write_tables(spark, rows, inventory)

    section = assess_access(spark, inventory, states)
    assert section is not None
    (c1,) = section["clusters"]  # c2 declares none
    assert (c1["cluster"], c1["entriesAdded"], c1["entriesRemoved"]) == ("c1", 2, 1)
    assert c1["principalsLosingAccess"] == section["principalsLosingAccess"] == ["User:alice", "User:eve"]
    assert c1["unmanagedResources"] == 1
    plan, _ = build_plan(states["c1"], _live("c1"))  # what `plan` makes of the same state
    assert c1["entriesAdded"] == sum(len(a.add) for a in plan.acls)
    assert c1["entriesRemoved"] == sum(len(a.remove) for a in plan.acls)
    assert c1["reasons"] == [r for a in plan.acls for r in a.reasons]

    assert assess_access(spark, inventory, {"c2": states["c2"]}) is None  # nothing declared: nothing read
    (inventory / "acls").rename(tmp_path / "old-acls")  # an inventory from before ACLs: said, not guessed
    older = assess_access(spark, inventory, states)
    assert older is not None and older["clusters"] == [] and "snapshot" in older["note"]
    assert access_summary(states, {}) is not None  # no live ACL at all: everything declared is added


EVIL = "User:<script>x</script>|@org/admins"


def test_reports_show_the_access_section_escaped() -> None:
    from reconciler.impact.html import render_html
    from reconciler.impact.report import render_markdown
    from tests.unit.test_impact_units import summary

    s = summary()
    assert "Access (ACLs)" not in render_markdown(s) + render_html(s)  # no section without ACLs
    evil = AclResource("Topic", "LITERAL", "t")
    live = {"c1": {evil: LiveAcls(evil, frozenset({AclEntry(EVIL, "*", "Read", "Allow")}), 0)}}
    write = {"c1": replace(_desired_without_acls(), acls={})}
    write["c1"] = replace(write["c1"], cluster=replace(write["c1"].cluster, policy=replace(
        write["c1"].cluster.policy, prune_acls=True)))
    s["access"] = access_summary(write, live)
    md, html = render_markdown(s), render_html(s)
    assert "### Access (ACLs)" in md and "0 ACL entries added, 1 removed" in md
    # a principal is shown as a code span (inert), its `|` escaped so it cannot break the table; prose escaped
    assert "`User:<script>x</script>\\|@org/admins`" in md and "User\\:\\<script\\>" in md
    assert "Access (ACLs)" in html and "<script>x" not in html and "&lt;script&gt;" in html


def _desired_without_acls() -> Any:
    from reconciler.model import ClusterSpec, DesiredState, ZooKeeperSpec

    return DesiredState(ClusterSpec("c1", "3.9", ZooKeeperSpec("127.0.0.1:2181/c1"), (1,)), {}, {})


TOPICS = """apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  topics:
    orders: {partitions: 3, replicationFactor: 3, config: {retention.ms: 3600000}}
"""
POLICY = """apiVersion: reconciler/v1
kind: Policy
meta: {name: durability}
spec:
  selector: {clusters: [c1]}
  rules:
    - {id: retention, key: retention.ms, min: 1d, severity: warn, message: keep a day}
"""


def test_run_impact_adds_the_access_and_policy_sections(spark: Any, tmp_path: Path) -> None:
    """The whole use case (`impact --inventory`) on the session: both sections reach the summary."""
    from reconciler.impact.run import ImpactOptions, run_impact

    write_repo(tmp_path / "repo", {"clusters/c1/acls.yaml": ACLS, "clusters/c1/topics.yaml": TOPICS,
                                   "clusters/policies.yaml": POLICY})
    inventory = tmp_path / "inventory"
    live = replace(_live("c1"), topics={"orders": LiveTopic("orders", {p: (1, 2, 3) for p in range(3)}, 0)})
    write_tables(spark, live_rows(live), inventory)
    summary = run_impact(ImpactOptions(repo=tmp_path / "repo", inventory=inventory))
    (c1,) = summary["access"]["clusters"]
    assert (c1["entriesAdded"], c1["entriesRemoved"], c1["principalsLosingAccess"]) == (
        2, 1, ["User:alice", "User:eve"])
    assert summary["policy"]["warnings"] == 1 and summary["policy"]["rules"][0]["rule"] == "retention"


def test_impact_git_base_counts_what_a_policy_edit_changes_across_the_fleet(spark: Any, tmp_path: Path) -> None:
    """`impact --git-base` on a branch that only loosens a policy: every cluster is assessed (a policy may select
    any), and the policy section says, per cluster, what the base's version flags and the branch's no longer."""
    import git

    from reconciler.impact.run import ImpactOptions, run_impact

    root = tmp_path / "repo"
    write_repo(root, {"clusters/c1/topics.yaml": TOPICS, "clusters/policies.yaml": POLICY})  # orders keeps 1h
    repo = git.Repo.init(root)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    repo.git.add("--all")
    repo.index.commit("base")
    (root / "clusters" / "policies.yaml").write_text(POLICY.replace("min: 1d", "min: 30m"))  # the branch's edit
    inventory = tmp_path / "inventory"
    live = replace(_live("c1"), topics={"orders": LiveTopic("orders", {p: (1, 2, 3) for p in range(3)}, 0)})
    write_tables(spark, live_rows(live), inventory)
    summary = run_impact(ImpactOptions(repo=root, inventory=inventory, git_base="HEAD"))
    change = summary["policy"]["change"]
    assert change["rows"] == [{"cluster": "c1", "policy": "durability", "rule": "retention", "base": 1, "head": 0}]
    assert (change["newly"], change["cleared"]) == (0, 1)
