"""Issue 38, findings 1, 5, 9 and 14, and issue 39 item 3: the base's side of a pull request comes from one
trusted view (gitops/trusted.py). Real git repositories and a real ZooKeeper.

* 1: a new cluster directory naming an existing cluster's target is refused (every spelling of the same
  ensemble and chroot); a rename is an explicit, reviewed step (`meta.renamedFrom`), planned against the target
  with the old cluster's settings; `validate` refuses two directories with one target;
* 5: a secret file whose content the PR changes (same reference) is "changed", never compared;
* 9: policies select by the base's labels (and a relabel is shown first);
* 14: a TLS file with the same path but other content is a connection-settings change;
* 39.3: a secret this job cannot compare, untouched by the PR, is neither a change nor rated.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import git
import pytest

from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import ENCODER_SECRET, plant

PASSWORD = plant("lk-review3-trusted-pw-4k7d")
EVIL = plant("lk-review3-trusted-evil-8s2m")
KEY = "listener.name.internal.ssl.key.password"


def cluster_yaml(name: str, connect: str, labels: str = "env: prod", extra_meta: str = "", extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}, labels: {{{labels}}}{extra_meta}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"}}
          passwordEncoder: {{secret: {{env: LK_ENCODER}}}}
          brokers: [1, 2, 3]
        """) + extra


def topics_yaml(rf: int = 3, **extra: int) -> str:
    lines = "".join(f"    {n}: {{partitions: 1, replicationFactor: {r}}}\n" for n, r in extra.items())
    return ("apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
            f"    orders: {{partitions: 3, replicationFactor: {rf}}}\n" + lines)


def prod_repo(root: Path, connect: str, files: dict[str, str | None] | None = None) -> git.Repo:
    repo = make_repo(root)
    commit(repo, "prod", {"clusters/prod/cluster.yaml": cluster_yaml("prod", connect),
                          "clusters/prod/topics.yaml": topics_yaml(), **(files or {})})
    repo.git.checkout("-b", "feature")
    return repo


DESTRUCTIVE = "  policy: {allowDestructive: true, deleteTopics: ['*'], pruneAcls: true}\n"


@pytest.mark.parametrize("spelling", ["{hosts}{chroot}", "{upper}{chroot}/", "{hosts},10.9.9.9:2181{chroot}"])
def test_a_new_directory_naming_an_existing_target_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    """Finding 1, the attack: `clusters/sandbox/` names prod's ensemble and chroot with a destructive policy.
    Before, it was planned "against an empty cluster" (no changes) and its merge deleted prod's topics."""
    hosts, chroot = "127.0.0.1:1", "/kafka/prod"
    root = tmp_path / "repo"
    repo = prod_repo(root, hosts + chroot)
    alias = spelling.format(hosts=hosts, upper=hosts.upper(), chroot=chroot)
    commit(repo, "a sandbox", {"clusters/sandbox/cluster.yaml": cluster_yaml("sandbox", alias, "env: dev",
                                                                           extra=DESTRUCTIVE)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1, err
    assert "is the target of cluster prod on the base branch" in out and "meta.renamedFrom" in out
    assert "No changes" not in out and "✅" not in out.split("could not be planned")[0].split("Kafka config plan")[-1]


def test_validate_refuses_two_directories_with_one_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, "two", {"clusters/a/cluster.yaml": cluster_yaml("a", "127.0.0.1:1,127.0.0.2:1/k"),
                         "clusters/b/cluster.yaml": cluster_yaml("b", "127.0.0.2:1/k/")})
    code, _out, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1
    assert "clusters/a/cluster.yaml:6" in err and "clusters/b/cluster.yaml:6" in err
    assert "a target belongs to one cluster directory" in err


def test_a_declared_rename_is_planned_against_the_old_clusters_target(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename keeps the target: the PR removes clusters/prod/ and adds clusters/sandbox/ with
    meta.renamedFrom: prod. It is planned with prod's connection settings against prod's live state, judged as
    prod, and said at the top."""
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    root = tmp_path / "repo"
    repo = prod_repo(root, zk_connect)
    repo.git.checkout("main")
    assert invoke(capsys, "--repo", str(root), "apply", "prod", "--auto-approve",
                  "--audit-log", str(tmp_path / "a.jsonl"))[0] == 0
    repo.git.checkout("feature")
    commit(repo, "rename", {"clusters/prod/cluster.yaml": None, "clusters/prod/topics.yaml": None,
                            "clusters/sandbox/cluster.yaml": cluster_yaml("sandbox", zk_connect,
                                                                          extra_meta=", renamedFrom: prod"),
                            "clusters/sandbox/topics.yaml": topics_yaml()})
    (root / "clusters/prod").rmdir()  # git keeps no empty directory; neither would a checkout
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    kept = out
    (plan,) = json.loads(out)["plans"]
    assert plan["cluster"] == "sandbox" and not plan["topicsToCreate"] and not plan["entities"]
    assert any("renames cluster prod → sandbox" in w for w in plan["warnings"])
    # a rename that keeps the old directory would leave two directories on one target
    commit(repo, "keep the old one too", {"clusters/prod/cluster.yaml": cluster_yaml("prod", zk_connect),
                                          "clusters/prod/topics.yaml": topics_yaml()})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1 and "clusters/prod/ is still there" in out, out
    assert kept


def test_policies_select_by_the_base_labels(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 9: relabelling `env: prod -> dev` let an RF-1 topic through a prod-only policy."""
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    policy = textwrap.dedent("""\
        apiVersion: reconciler/v1
        kind: Policy
        meta: {name: durability}
        spec:
          selector: {labels: {env: prod}}
          rules:
            - {id: rf, key: replicationFactor, min: 3, message: production topics keep three replicas}
        """)
    root = tmp_path / "repo"
    repo = prod_repo(root, zk_connect, {"clusters/policies.yaml": policy})
    commit(repo, "dev now", {"clusters/prod/cluster.yaml": cluster_yaml("prod", zk_connect, "env: dev"),
                             "clusters/prod/topics.yaml": topics_yaml(scratch=1)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1, err
    assert "policy durability, rule rf" in out and "topics/scratch" in out
    assert "labels change (env=prod → env=dev)" in out
    # issue 39, item 5: the one H2 comes first and carries the block; every section below it is an H3
    headings = [line for line in out.splitlines() if line.startswith("#")]
    assert headings[0].startswith("## 🛑 Kafka config plan: blocked by 1 error(s)"), headings
    assert all(h.startswith("### ") for h in headings[1:]), headings


def password_yaml(reference: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {{broker: 1}}
        spec:
          config:
            {KEY}: {{secret: {reference}}}
        """)


def _states(plan_json: str, key: str) -> list[str]:
    return [c["redacted"] for p in json.loads(plan_json)["plans"] for e in p["entities"] for c in e["changes"]
            if c["key"] == key]


def test_a_secret_file_whose_content_the_pr_changes_is_a_change(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 5: same reference, other content. PR mode resolved the base's copy ("unchanged"); the apply after
    merge writes the PR's value. The job here even has the encoder secret (the opt-in)."""
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    root = tmp_path / "repo"
    repo = prod_repo(root, zk_connect, {"clusters/prod/brokers.yaml": password_yaml("{file: secrets/key.pw}"),
                                        "clusters/prod/secrets/key.pw": PASSWORD + "\n"})
    repo.git.checkout("main")
    assert invoke(capsys, "--repo", str(root), "apply", "prod", "--auto-approve",
                  "--audit-log", str(tmp_path / "a.jsonl"))[0] == 0
    repo.git.checkout("feature")
    commit(repo, "rotate quietly", {"clusters/prod/secrets/key.pw": EVIL + "\n"})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    assert _states(out, KEY) == ["changed"]
    assert "whose file this pull request changes" in out
    assert PASSWORD not in out + err and EVIL not in out + err
    # the content back as on main: unchanged again (the file is compared, not its name)
    commit(repo, "undo", {"clusters/prod/secrets/key.pw": PASSWORD + "\n", "clusters/prod/topics.yaml":
                          topics_yaml(rf=3, extra=3)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    assert _states(out, KEY) == []


def test_a_tls_file_with_new_content_is_a_connection_settings_change(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 14: swapping `ca.pem` for another CA under the same name showed no connection-settings change."""
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    admin = "  adminClient: {bootstrapServers: '127.0.0.1:1', securityProtocol: SSL, tls: {ca: tls/ca.pem}}\n"
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, "prod", {"clusters/prod/cluster.yaml": cluster_yaml("prod", zk_connect, extra=admin),
                          "clusters/prod/tls/ca.pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                          "clusters/prod/topics.yaml": topics_yaml()})
    repo.git.checkout("-b", "feature")
    commit(repo, "another CA", {"clusters/prod/tls/ca.pem":
                                "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0, err
    assert "connection settings change" in out and "spec.adminClient.tls (the content of tls/ca.pem)" in out


SCRAM = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Quotas
    meta: {}
    spec:
      scramUsers:
        alice:
          SCRAM-SHA-256: {password: {secret: {env: LK_ALICE}}, iterations: 8192}
    """)


def test_an_untouched_secret_the_job_cannot_compare_is_not_a_disruptive_change(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39, item 3: the PR only changes a topic; alice's SCRAM credential reads `(sensitive, unknown)` in a
    job without her password, so every PR was '1 disruptive' and --detailed-exitcode said 2 forever."""
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    monkeypatch.setenv("LK_ALICE", PASSWORD)
    root = tmp_path / "repo"
    repo = prod_repo(root, zk_connect, {"clusters/prod/users.yaml": SCRAM})
    repo.git.checkout("main")
    assert invoke(capsys, "--repo", str(root), "apply", "prod", "--auto-approve",
                  "--audit-log", str(tmp_path / "a.jsonl"))[0] == 0
    repo.git.checkout("feature")
    monkeypatch.delenv("LK_ALICE")  # the PR job is not given alice's password
    monkeypatch.delenv("LK_ENCODER")
    commit(repo, "one more topic", {"clusters/prod/topics.yaml": topics_yaml(extra=3)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json",
                            "--detailed-exitcode")
    assert code == 2, err  # a topic is created ...
    (plan,) = json.loads(out)["plans"]
    assert not plan["entities"]  # ... and alice's credential is no change at all
    said = [w for w in plan["warnings"] if "SCRAM-SHA-256" in w]
    assert len(said) == 1, plan["warnings"]
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert "disruptive" not in out.lower(), out
