"""kind Policy where changes are reviewed and applied: a pull request is judged by the BASE revision's policies
(real git repositories, a real ZooKeeper), its comment lists the policies it edits with what they would newly
flag; `reconcile` reports violations found in live state as drift."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.model import EntityRef
from reconciler.zk.layout import encode_entity_config, encode_topic_assignment, entity_path, topic_path
from tests.integration.test_gitops import commit, invoke, make_repo


def cluster_yaml(connect: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: a, labels: {{env: prod}}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"}}
          brokers: [1, 2, 3]
        """)


def topics_yaml(**partitions: int) -> str:
    lines = "".join(f"    {name}: {{partitions: {n}, replicationFactor: 3, config: {{retention.ms: 86400000}}}}\n"
                    for name, n in partitions.items())
    return "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n" + lines


def policies_yaml(max_partitions: int) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Policy
        meta: {{name: sizes}}
        spec:
          selector: {{labels: {{env: prod}}}}
          rules:
            - id: partitions
              key: partitions
              max: {max_partitions}
              message: "more partitions need the platform team's review <@platform-team>"
        """)


def test_a_pr_that_loosens_a_policy_is_still_judged_by_the_base(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml(zk_connect),
                               "clusters/a/topics.yaml": topics_yaml(orders=3),
                               "clusters/policies.yaml": policies_yaml(8)})
    repo.git.checkout("-b", "feature")
    commit(repo, "a big topic, and the rule that would stop it loosened",
           {"clusters/a/topics.yaml": topics_yaml(orders=3, big=12), "clusters/policies.yaml": policies_yaml(100)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1, err  # the base's rule: an error, which blocks the check
    assert "### 🛑 Policy: 1 error(s) block this pull request" in out
    assert "topics/big: partitions is 12" in out and "not at most 8" in out
    assert "- 🛑 `clusters/a/topics.yaml:7` policy sizes" in out  # the line of big's partitions
    assert "Invalid manifests" not in out  # the policy error is in its own section
    assert "(clusters/policies.yaml:" in out
    assert "@\u200bplatform-team" in out and "&lt;" in out and "<@platform-team>" not in out  # escaped
    assert "**This branch changes policies.**" in out and "policy sizes changed" in out
    assert "would newly flag 0 violation(s)" in out
    # the head's versions run over the head's manifests: the loosening is what lets big through
    assert "and would no longer flag 1 violation(s) the base's versions find: a topics/big (sizes/partitions)" in out
    # without the PR's loosening, the very same judgement: the head's policy file played no part
    commit(repo, "policy back", {"clusters/policies.yaml": policies_yaml(8)})
    code, out2, _ = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 1 and "topics/big: partitions is 12" in out2 and "This branch changes policies" not in out2
    # and `validate` of the loosened work tree (no PR mode: the work tree's own policies) passes
    commit(repo, "loosen again", {"clusters/policies.yaml": policies_yaml(100)})
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err


def test_a_pr_that_tightens_a_policy_lists_what_it_would_newly_flag(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml(zk_connect),
                               "clusters/a/topics.yaml": topics_yaml(orders=6, payments=4, logs=1),
                               "clusters/policies.yaml": policies_yaml(8)})
    repo.git.checkout("-b", "feature")
    commit(repo, "at most 2 partitions", {"clusters/policies.yaml": policies_yaml(2)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0, err  # judged by the base's 8: nothing breaks it
    assert "### ✅ Policy: no violation" in out and "policy sizes changed (clusters/policies.yaml:1)" in out
    assert "would newly flag 2 violation(s) in 1 cluster(s) of the fleet's manifests: a 2" in out
    assert "a topics/orders: sizes/partitions: partitions is 6" in out and "a topics/payments" in out
    assert "topics/logs" not in out
    assert "policy change (judged by the base's version): policy sizes changed" in err


def test_reconcile_reports_policy_violations_in_live_state_as_drift(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml(zk_connect),
                               "clusters/a/topics.yaml": topics_yaml(orders=3),
                               "clusters/policies.yaml": policies_yaml(8)})
    # a topic created outside the reconciler, with 20 partitions: in ZooKeeper as Kafka writes it
    zk_client.create(topic_path("legacy"), encode_topic_assignment({p: (1, 2, 3) for p in range(20)}),
                     makepath=True)
    zk_client.create(entity_path(EntityRef("topics", "legacy")), encode_entity_config({}), makepath=True)
    code, out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--dry-run", "--format", "json")
    assert code == 0, err
    cluster = json.loads(out)["clusters"][0]
    assert cluster["policyDrift"] == ["error: topics/legacy: policy sizes, rule partitions: partitions is 20 "
                                      "(from /brokers/topics/legacy), not at most 8"]
    code, _, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--dry-run")
    assert "policy drift in a: 1 violation(s) in live state:" in err and "topics/legacy" in err
