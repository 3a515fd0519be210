"""GitOps adapter on real git repositories made here (branches, several commits) and `plan --git-base` against a
real ZooKeeper: which clusters a branch changes (directories, fleet.yaml selectors, labels), manifests read at a
revision without a checkout, the dirty-tree refusal, the PR comment and GitHub annotations.

The helpers at the top are shared with test_reconcile.py and test_import.py.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import git
import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run
from reconciler.gitops import (
    DirtyTreeError,
    GitError,
    changed_clusters,
    current_revision,
    manifests_at,
    require_clean,
)
from reconciler.manifests.validate import load_and_validate
from reconciler.render.pr_comment import MARKER
from tests.conftest import ZkServer

UNREACHABLE = "127.0.0.1:1"

# --- helpers (shared) -------------------------------------------------------------------------------------

FLEET = """\
# fleet defaults
apiVersion: reconciler/v1
kind: FleetDefaults
meta: {name: prod}
spec:
  selector: {labels: {env: prod}}
  brokerDefaults: {log.cleaner.threads: 2}
---
apiVersion: reconciler/v1
kind: FleetDefaults
meta: {name: staging}
spec:
  selector: {labels: {env: staging}}
  brokerDefaults: {num.replica.fetchers: 2}
"""


def cluster_yaml(name: str, connect: str, labels: Mapping[str, str], extra: str = "") -> str:
    pairs = ", ".join(f"{k}: {v}" for k, v in labels.items())
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}, labels: {{{pairs}}}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"}}
          brokers: [1, 2, 3]
        """) + extra


def topics_yaml(retention: int = 86400000, partitions: int = 3) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Topics
        meta: {{}}
        spec:
          topics:
            orders: {{partitions: {partitions}, replicationFactor: 3, config: {{retention.ms: {retention}}}}}
        """)


def make_repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Alice Example")
        cfg.set_value("user", "email", "alice@example.com")
        cfg.set_value("commit", "gpgsign", "false")
    return repo


def write(root: Path, files: Mapping[str, str | None]) -> None:
    """Write (or, for None, delete) files under root."""
    for name, text in files.items():
        path = root / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def commit(repo: git.Repo, message: str, files: Mapping[str, str | None]) -> str:
    root = Path(repo.working_tree_dir or ".")
    write(root, files)
    repo.git.add("--all")
    repo.index.commit(message)
    return repo.head.commit.hexsha


def fleet_repo(path: Path, connects: Mapping[str, str]) -> git.Repo:
    """main: fleet.yaml (prod, staging) and clusters a (prod, eu), b (staging, eu), c (prod, us)."""
    labels = {"a": {"env": "prod", "region": "eu"}, "b": {"env": "staging", "region": "eu"},
              "c": {"env": "prod", "region": "us"}}
    repo = make_repo(path)
    files: dict[str, str | None] = {"clusters/fleet.yaml": FLEET, "README.md": "manifests\n"}
    for name, lab in labels.items():
        files[f"clusters/{name}/cluster.yaml"] = cluster_yaml(name, connects.get(name, UNREACHABLE), lab)
        files[f"clusters/{name}/topics.yaml"] = topics_yaml()
    commit(repo, "initial fleet", files)
    return repo


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# --- changed clusters -------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    return fleet_repo(tmp_path / "manifests", {})


def branch(repo: git.Repo, name: str = "feature") -> None:
    repo.git.checkout("-b", name)


def changed(repo: git.Repo, base: str = "main", head: str | None = None) -> set[str]:
    return set(changed_clusters(Path(repo.working_tree_dir or "."), base, head).clusters)


def test_a_cluster_directory_change_selects_that_cluster(repo: git.Repo) -> None:
    branch(repo)
    commit(repo, "shorter retention", {"clusters/a/topics.yaml": topics_yaml(3600000)})
    commit(repo, "more partitions", {"clusters/a/topics.yaml": topics_yaml(3600000, 6)})
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == {"a"}
    assert result.reasons == {"a": ("clusters/a/topics.yaml changed",)}


@pytest.mark.parametrize(("document", "expected"), [("staging", {"b"}), ("prod", {"a", "c"})])
def test_a_fleet_document_change_selects_the_clusters_its_selector_matches(
    repo: git.Repo, document: str, expected: set[str]
) -> None:
    branch(repo)
    key = "log.cleaner.threads: 2" if document == "prod" else "num.replica.fetchers: 2"
    commit(repo, f"tune {document}", {"clusters/fleet.yaml": FLEET.replace(key, key[:-1] + "4")})
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == expected
    assert all(r == (f"fleet.yaml: FleetDefaults {document!r} changed",) for r in result.reasons.values())


def test_a_new_fleet_document_selects_by_label(repo: git.Repo) -> None:
    branch(repo)
    new_doc = "---\napiVersion: reconciler/v1\nkind: FleetDefaults\nmeta: {name: us}\nspec:\n" \
              "  selector: {labels: {region: us}}\n  brokerDefaults: {num.io.threads: 16}\n"
    commit(repo, "us defaults", {"clusters/fleet.yaml": FLEET + new_doc})
    assert changed(repo, head="HEAD") == {"c"}


def test_comments_formatting_and_unrelated_files_select_nothing(repo: git.Repo) -> None:
    branch(repo)
    reformatted = FLEET.replace("# fleet defaults", "# the fleet's defaults, reviewed weekly").replace(
        "{log.cleaner.threads: 2}", "\n    log.cleaner.threads: 2")
    commit(repo, "docs", {"clusters/fleet.yaml": reformatted, "README.md": "more docs\n",
                          "clusters/README.md": "about clusters\n", "docs/x.md": "x\n"})
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == set() and result.removed == set()


def test_relabelling_a_cluster_selects_it_with_the_reason(repo: git.Repo) -> None:
    branch(repo)
    commit(repo, "c to staging", {"clusters/c/cluster.yaml": cluster_yaml("c", UNREACHABLE, {"env": "staging"})})
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == {"c"}
    assert result.reasons["c"][0] == "labels changed"


def test_labels_before_and_after_both_count_for_a_fleet_change(repo: git.Repo) -> None:
    """c leaves `prod` for `staging` while `prod` changes: c is affected (by both) and so is a."""
    branch(repo)
    commit(repo, "move c, tune prod", {
        "clusters/c/cluster.yaml": cluster_yaml("c", UNREACHABLE, {"env": "staging"}),
        "clusters/fleet.yaml": FLEET.replace("log.cleaner.threads: 2", "log.cleaner.threads: 3"),
    })
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == {"a", "c"}
    assert "fleet.yaml: FleetDefaults 'prod' changed" in result.reasons["c"]


def test_commits_on_the_base_branch_after_the_branch_point_are_not_the_branchs(repo: git.Repo) -> None:
    branch(repo)
    commit(repo, "a change", {"clusters/a/topics.yaml": topics_yaml(3600000)})
    repo.git.checkout("main")
    commit(repo, "someone else's b change", {"clusters/b/topics.yaml": topics_yaml(7200000)})
    repo.git.checkout("feature")
    assert changed(repo, head="HEAD") == {"a"}


def test_the_work_tree_counts_uncommitted_and_untracked_files(repo: git.Repo) -> None:
    root = Path(repo.working_tree_dir or ".")
    branch(repo)
    write(root, {"clusters/b/topics.yaml": topics_yaml(1000),
                 "clusters/d/cluster.yaml": cluster_yaml("d", UNREACHABLE, {"env": "dev"})})
    assert changed(repo) == {"b", "d"}


def test_a_deleted_cluster_is_reported_as_removed(repo: git.Repo) -> None:
    branch(repo)
    commit(repo, "retire b", {"clusters/b/cluster.yaml": None, "clusters/b/topics.yaml": None})
    result = changed_clusters(Path(repo.working_tree_dir or "."), "main", "HEAD")
    assert result.clusters == set() and result.removed == {"b"}


def test_an_unknown_base_says_how_to_fetch_it(repo: git.Repo) -> None:
    with pytest.raises(GitError, match="fetch-depth: 0"):
        changed_clusters(Path(repo.working_tree_dir or "."), "origin/nope")


def test_manifests_in_a_subdirectory_of_the_repository(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "mono")
    sub = "infra/kafka/"
    commit(top, "fleet", {sub + "clusters/a/cluster.yaml": cluster_yaml("a", UNREACHABLE, {"env": "prod"}),
                          sub + "clusters/b/cluster.yaml": cluster_yaml("b", UNREACHABLE, {"env": "prod"})})
    top.git.checkout("-b", "feature")
    commit(top, "a topics", {sub + "clusters/a/topics.yaml": topics_yaml()})
    assert changed_clusters(tmp_path / "mono" / "infra" / "kafka", "main", "HEAD").clusters == {"a"}
    with manifests_at(tmp_path / "mono" / "infra" / "kafka", "main") as (root, _):
        assert sorted(p.name for p in (root / "clusters").iterdir()) == ["a", "b"]


# --- reading a revision without a checkout, dirty trees ----------------------------------------------------


def test_manifests_at_a_revision_validate_like_a_checkout(repo: git.Repo) -> None:
    root = Path(repo.working_tree_dir or ".")
    first = repo.head.commit.hexsha
    commit(repo, "more partitions", {"clusters/a/topics.yaml": topics_yaml(partitions=12),
                                     "clusters/a/static/broker-1.properties": "num.io.threads=8\n"})
    with manifests_at(root, first, only=["a"]) as (at, revision):
        _, states, diags = load_and_validate(at, ["a"])
        assert not diags and revision.sha == first and revision.author == "Alice Example <alice@example.com>"
        assert states["a"].topics["orders"].partitions == 3
        assert sorted(p.name for p in (at / "clusters").iterdir()) == ["a", "fleet.yaml"]
    assert (root / "clusters" / "a" / "topics.yaml").read_text() == topics_yaml(partitions=12)  # untouched


def test_a_dirty_tree_is_refused_unless_allowed(repo: git.Repo) -> None:
    root = Path(repo.working_tree_dir or ".")
    assert require_clean(root, allow_dirty=False) == current_revision(root)
    write(root, {"README.md": "edited docs do not count\n"})
    assert not current_revision(root).dirty
    write(root, {"clusters/a/topics.yaml": topics_yaml(1000)})
    with pytest.raises(DirtyTreeError, match=r"uncommitted changes \(clusters/a/topics.yaml\).*--allow-dirty"):
        require_clean(root, allow_dirty=False)
    allowed = require_clean(root, allow_dirty=True)
    assert allowed is not None and allowed.recorded == repo.head.commit.hexsha + "-dirty"


def test_apply_paths_refuse_a_dirty_tree_through_the_cli(repo: git.Repo, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(repo.working_tree_dir or ".")
    write(root, {"clusters/new/cluster.yaml": cluster_yaml("new", UNREACHABLE, {"env": "dev"})})  # untracked
    code, out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once")
    assert code == 1 and out == ""
    assert "refusing to apply: the manifests have uncommitted changes (clusters/new/cluster.yaml)" in err


# --- plan --git-base against real ZooKeeper ---------------------------------------------------------------


@pytest.fixture
def zk_repo(tmp_path: Path, zk_server: ZkServer, zk_chroot: str, zk_client: KazooClient) -> git.Repo:
    """a and c on this test's ZooKeeper (their own chroots); b unreachable: planning b would fail."""
    connect = zk_server.connect
    for name in ("a", "c"):
        zk_client.ensure_path(f"/{name}")
    return fleet_repo(tmp_path / "manifests", {n: f"{connect}{zk_chroot}/{n}" for n in ("a", "c")})


def test_plan_git_base_plans_only_the_changed_clusters(zk_repo: git.Repo, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(zk_repo.working_tree_dir or ".")
    branch(zk_repo)
    head = commit(zk_repo, "orders: 6 partitions", {"clusters/a/topics.yaml": topics_yaml(partitions=6)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json",
                            "--detailed-exitcode")
    assert code == 2, err
    import json

    plans = json.loads(out)["plans"]
    assert [p["cluster"] for p in plans] == ["a"]  # b (unreachable) and c were not read
    assert plans[0]["revision"] == head
    assert "a: clusters/a/topics.yaml changed" in err


def test_plan_git_base_markdown_is_one_pr_comment(zk_repo: git.Repo, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(zk_repo.working_tree_dir or ".")
    branch(zk_repo)
    commit(zk_repo, "prod: 3 cleaner threads", {
        "clusters/fleet.yaml": FLEET.replace("log.cleaner.threads: 2", "log.cleaner.threads: 3")})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0, err
    assert out.startswith(MARKER + "\n")
    assert out.count(MARKER) == 1
    assert "2 cluster(s) changed since `main`" in out
    assert "`a`: fleet.yaml: FleetDefaults 'prod' changed" in out and "`c`:" in out and "`b`" not in out
    assert "Kafka config plan" in out and zk_repo.head.commit.hexsha[:7] in out


def test_plan_git_base_with_nothing_changed(zk_repo: git.Repo, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(zk_repo.working_tree_dir or ".")
    branch(zk_repo)
    commit(zk_repo, "docs", {"README.md": "new docs\n"})
    code, out, _ = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0
    assert "This branch changes no cluster since `main`" in out


def test_plan_git_base_github_annotations(zk_repo: git.Repo, zk_client: KazooClient,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(zk_repo.working_tree_dir or ".")
    code, _, err = invoke(capsys, "--repo", str(root), "apply", "a", "--auto-approve")  # orders exists now
    assert code == 0, err
    branch(zk_repo)
    commit(zk_repo, "shorter retention, bad key", {
        "clusters/a/topics.yaml": topics_yaml(retention=3600000),
    })
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "github")
    assert code == 0, err
    assert "::warning file=clusters/a/topics.yaml,line=6,title=destructive change::a topics/orders retention.ms" \
        in err
    assert "retention.ms" in out
    commit(zk_repo, "typo", {"clusters/a/topics.yaml": topics_yaml().replace("retention.ms", "retention.mss")})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "github")
    assert code == 1 and out == ""
    assert "::error file=clusters/a/topics.yaml,line=6,col=" not in err  # GitHub's form has no col
    assert "::error file=clusters/a/topics.yaml,line=6::unknown topic config 'retention.mss'" in err


def test_plan_git_base_markdown_reports_invalid_manifests(
    zk_repo: git.Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(zk_repo.working_tree_dir or ".")
    branch(zk_repo)
    commit(zk_repo, "typo", {"clusters/a/topics.yaml": topics_yaml().replace("retention.ms", "retention.mss")})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1
    assert out.startswith(MARKER) and "Invalid manifests: 1 error(s)" in out
    assert "clusters/a/topics.yaml:6" in out and "did you mean 'retention.ms'" in err


# --- small pure pieces --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("30s", 30), ("5m", 300), ("1h30m", 5400), ("1d", 86400)])
def test_durations(text: str, seconds: float) -> None:
    from reconciler.cli.gitops import parse_duration

    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 m", "m5", "0s", "1w"])
def test_bad_durations(text: str) -> None:
    import click

    from reconciler.cli.gitops import parse_duration

    with pytest.raises(click.BadParameter):
        parse_duration(text)


def test_annotations_escape_what_github_would_misread() -> None:
    from reconciler.cli.gitops import github_annotations
    from reconciler.errors import Diagnostic
    from reconciler.model import SourceRef

    diag = Diagnostic("error", "50% of it,\nreally", SourceRef("clusters/a,b:c.yaml", 3, 7), "k")
    assert github_annotations([diag], [], "infra") == [
        "::error file=infra/clusters/a%2Cb%3Ac.yaml,line=3::50%25 of it,%0Areally [k]"]


def test_a_token_in_a_repo_url_is_never_shown() -> None:
    from reconciler.gitops.remote import mirror_path, redact

    assert redact("https://x-access-token:s3cr3t@github.com/acme/kafka.git") == "https://***@github.com/acme/kafka.git"
    assert redact("git@github.com:acme/kafka.git") == "git@github.com:acme/kafka.git"
    assert "s3cr3t" not in str(mirror_path(Path("/c"), "https://t:s3cr3t@github.com/acme/kafka.git"))


def test_listeners_that_differ_between_brokers_stay_per_broker() -> None:
    from reconciler.importer.listeners import compile_listeners

    brokers = {1: {"listeners": "A://:1", "listener.security.protocol.map": "A:PLAINTEXT"},
               2: {"listeners": "A://:1,B://:2", "listener.security.protocol.map": "A:PLAINTEXT,B:SSL"}}
    compiled = compile_listeners(brokers, lambda v: False, lambda k: False, lambda v: {"encoded": v})
    assert compiled.document is None and compiled.remaining == brokers and compiled.notes


def test_listener_configs_shared_only_when_equal_everywhere() -> None:
    from reconciler.importer.listeners import compile_listeners

    common = {"listeners": "EXT://:9094", "listener.security.protocol.map": "EXT:SSL",
              "listener.name.ext.ssl.keystore.location": "/ks.jks"}
    brokers = {1: {**common, "listener.name.ext.ssl.keystore.type": "JKS", "num.io.threads": "8"},
               2: {**common, "listener.name.ext.ssl.keystore.type": "PKCS12"}}
    compiled = compile_listeners(brokers, lambda v: False, lambda k: False, lambda v: {"encoded": v})
    assert compiled.document is not None
    assert compiled.document["spec"]["listenerConfigs"] == {"EXT": {"ssl.keystore.location": "/ks.jks"}}
    assert compiled.remaining == {1: {"listener.name.ext.ssl.keystore.type": "JKS", "num.io.threads": "8"},
                                  2: {"listener.name.ext.ssl.keystore.type": "PKCS12"}}


def test_the_impact_summary_joins_the_comment_when_an_inventory_is_given(
    zk_repo: git.Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The impact job runs as `reconciler impact` in a subprocess (Spark): stubbed here, its contract checked. Its
    JSON gives the comment's "Fleet impact" section and, at the top, the consumers at risk (issue 42)."""
    import json
    import subprocess

    from tests.unit.test_impact_units import summary

    calls: list[list[str]] = []
    found = {**summary(), "consumers": {"known": True, "groupsAtRisk": 1, "clustersAtRisk": 1, "groupTopicsAtRisk": 1,
                                        "recordsAtRisk": [42, 42], "clusters": [], "policy": [], "rows": [
        {"cluster": "a", "topic": "orders", "group": "billing", "records": [42, 42], "lagMs": [0, 300000],
         "retentionMs": ["604800000", "3600000"], "state": "Stable", "members": 1, "active": True}]}}

    def fake_run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, json.dumps(found), "")

    monkeypatch.setattr(subprocess, "run", fake_run)  # cli/gitops imports subprocess where it runs the job
    root = Path(zk_repo.working_tree_dir or ".")
    branch(zk_repo)
    commit(zk_repo, "orders: 6 partitions", {"clusters/a/topics.yaml": topics_yaml(partitions=6)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown",
                            "--inventory", str(tmp_path / "inventory"))
    assert code == 0, err
    assert calls and calls[0][1:4] == ["-I", "-m", "reconciler"]  # isolated: never the checkout's modules
    assert calls[0][4:] == ["--repo", str(root.resolve()), "impact", "--git-base", "main", "--inventory",
                                      str((tmp_path / "inventory").resolve()), "--format", "json"]
    assert "### Fleet impact\n\n## Fleet impact: 1 consumer group(s) would lose unread records; 2 topic(s) " \
           "deleted" in out
    assert out.index("### 🛑 Consumers at risk: 1 group(s)") < out.index("### Fleet impact")
    assert "`billing` on `orders` (`a`) is less than 5m behind: retention 1h would delete ~42 records" in out
