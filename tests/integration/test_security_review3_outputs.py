"""Issue 38, findings 2, 12, 13 and 16: what the PR check writes and shows cannot be bent by the PR.

* 2: a new cluster's ACL grants are shown (they were planned against "ACLs not read", which rendered as nothing);
* 12: `--out` never writes through a committed symbolic link, and a failed plan leaves no plan file behind;
* 13: the fleet impact summary is cut at block boundaries, closing what is open, never mid-line;
* 16: a PR that edits a policy file is compared across the fleet within the PR check's bounds.
Real git repositories; no cluster is reachable (new clusters are planned without connecting).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from reconciler.render.pr_comment import IMPACT_BUDGET, cut_markdown, render_comment
from tests.integration.test_gitops import commit, invoke, make_repo

CLUSTER = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Cluster
    meta: {{name: {name}, labels: {{env: {env}}}}}
    spec: {{kafkaVersion: "3.6", zookeeper: {{connect: "127.0.0.1:1/{name}"}}, brokers: [1]}}
    """)

GRANT_EVERYTHING = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Acls
    meta: {}
    spec:
      resources:
        - {type: Topic, name: "*", entries: [{principal: "User:*", operation: All}]}
        - {type: Cluster, name: kafka-cluster, entries: [{principal: "User:mallory", operation: All}]}
    """)


def test_a_new_clusters_acl_grants_are_in_the_plan_and_the_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 2: before, `LiveState(acls=None)` meant "not read" and `plan_acls` planned nothing: ✅ no changes."""
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, "base", {"clusters/a/cluster.yaml": CLUSTER.format(name="a", env="dev")})
    repo.git.checkout("-b", "feature")
    commit(repo, "sandbox", {"clusters/sandbox/cluster.yaml": CLUSTER.format(name="sandbox", env="dev"),
                             "clusters/sandbox/acls.yaml": GRANT_EVERYTHING})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    (plan,) = json.loads(out)["plans"]
    granted = {(a["resource"]["type"], a["resource"]["name"], e["principal"], e["operation"])
               for a in plan["acls"] for e in a["add"]}
    assert granted == {("Topic", "*", "User:*", "All"), ("Cluster", "kafka-cluster", "User:mallory", "All")}
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0, err
    assert "User:mallory" in out and "No changes" not in out


def test_acls_not_read_are_an_error_of_the_plan_not_an_empty_plan() -> None:
    """The mechanism: a live state whose ACLs were not read never plans as "no ACL changes"."""
    from reconciler.diff import build_plan
    from reconciler.model import AclEntry, AclResource, ClusterSpec, DesiredAcls, DesiredState, LiveState, ZooKeeperSpec

    resource = AclResource("Topic", "LITERAL", "*")
    desired = DesiredState(ClusterSpec("c", "3.6", ZooKeeperSpec("h:1/c"), (1,)), {}, {},
                           acls={resource: DesiredAcls(resource, frozenset({AclEntry("User:*", "*", "All", "Allow")}))})
    plan, problems = build_plan(desired, LiveState("c", {}, {}, {}))  # acls=None: not read
    assert not plan.acls
    assert [d.severity for d in problems] == ["error"] and "were not read" in problems[0].message


def _pr_with(tmp_path: Path, files: dict[str, str | None]) -> Path:
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, "base", {"clusters/a/cluster.yaml": CLUSTER.format(name="a", env="dev")})
    repo.git.checkout("-b", "feature")
    commit(repo, "pr", {"clusters/b/cluster.yaml": CLUSTER.format(name="b", env="dev"), **files})
    return root


def test_out_never_writes_through_a_committed_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 12: the PR commits `plan.json -> <a file the job may write>` and `artifacts -> <a directory>`."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = _pr_with(tmp_path, {})
    (root / "plan.json").symlink_to(victim)
    (root / "artifacts").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(root)  # the job runs in the checkout
    for out in ("plan.json", "artifacts/plan.json"):
        for args in (["--git-base", "main"], []):
            code, _out, err = invoke(capsys, "--repo", str(root), "plan", *args, "b", "--out", out)
            assert code == 1 and "symbolic link" in err, (out, args, err)
    assert victim.read_text() == "precious\n" and not list(elsewhere.iterdir())
    code, _out, err = invoke(capsys, "--repo", str(root), "impact", "--git-base", "main", "--out", "artifacts",
                             "--inventory", str(tmp_path))
    assert code == 1 and "symbolic link" in err
    assert not list(elsewhere.iterdir())


def test_a_failed_plan_leaves_no_plan_file_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 12: the PR commits its own `plan.json` and an invalid manifest; the workflow uploads whatever
    `plan.json` is there, as the plan a maintainer may later apply."""
    root = _pr_with(tmp_path, {"clusters/b/topics.yaml": "apiVersion: reconciler/v1\nkind: Topics\nspec: 7\n",
                               "plan.json": '{"formatVersion": 1, "plans": ["the author\'s own"]}\n'})
    monkeypatch.chdir(root)
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown",
                             "--out", "plan.json")
    assert code == 1, err
    assert not (root / "plan.json").exists()
    # a good plan is written whole (atomically: no temporary file is left beside it)
    (root / "clusters/b/topics.yaml").unlink()
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--out", "plan.json")
    assert code == 0, err
    assert json.loads((root / "plan.json").read_text())["plans"][0]["cluster"] == "b"
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".plan.json")) == []


def _impact_text(lines: int) -> str:
    """A report shaped like the impact summary: a table whose cells quote manifest text in code spans, inside a
    <details>, a code fence, then more text."""
    rows = [f"| `topic-{i:05d}` | `retention.ms` | <b>{i}</b> |" for i in range(lines)]
    return "\n".join(["**Fleet impact**", "", "<details><summary>topics</summary>", "", "| topic | key | n |",
                      "|---|---|---|", *rows, "", "```", "raw <script>", "```", "", "</details>", "", "end"])


def test_the_impact_summary_is_cut_between_blocks_with_everything_closed() -> None:
    """Finding 13: `impact[:12000]` cut mid-line, leaving a code span open and the rest of the comment live."""
    text = _impact_text(2000)
    cut = cut_markdown(text, IMPACT_BUDGET)
    assert len(cut) <= IMPACT_BUDGET
    kept = cut.split("\n")
    original = set(text.split("\n"))
    assert all(line in original or line in ("</details>", "… (cut; see the report)") for line in kept)
    assert cut.count("<details>") == cut.count("</details>")
    assert cut.count("```") % 2 == 0
    assert cut.endswith("… (cut; see the report)")
    comment = render_comment([], base="main", impact=text)
    section = comment[comment.index("### Fleet impact"):]
    assert section.count("<details>") == section.count("</details>") and section.count("```") % 2 == 0
    assert cut_markdown("short", 100) == "short"


def test_a_policy_edit_is_compared_within_the_pr_checks_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 16: the policy comparison loads every cluster of the work tree; it must use the PR bounds
    (RECONCILER_PR_MAX_*), not the operator's larger ones."""
    root = tmp_path / "repo"
    repo = make_repo(root)
    files: dict[str, str | None] = {f"clusters/c{i}/cluster.yaml": CLUSTER.format(name=f"c{i}", env="dev")
                                    for i in range(6)}
    policy = textwrap.dedent("""\
        apiVersion: reconciler/v1
        kind: Policy
        meta: {{name: retention}}
        spec:
          rules:
            - {{id: bounds, key: retention.ms, max: {max}, message: bounded}}
        """)
    files["clusters/policies.yaml"] = policy.format(max=604800000)
    commit(repo, "base", files)
    repo.git.checkout("-b", "feature")
    commit(repo, "tighter", {"clusters/policies.yaml": policy.format(max=3600000)})
    monkeypatch.setenv("RECONCILER_PR_MAX_DOCUMENTS", "3")
    _code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert "not compared across the fleet" in out + err and "RECONCILER_PR_MAX_DOCUMENTS" in out + err, (out, err)
