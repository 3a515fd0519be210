"""ACL manifests as the user validates them (the CLI on a repository on disk), messages compared whole:
resource names ZooKeeper cannot hold (issue 38, finding 19) and every problem of an entry at once (issue 39,
item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli.main import run

ZK_CLUSTER = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: a}
spec:
  kafkaVersion: "3.9"
  zookeeper: {connect: "127.0.0.1:1/a"}
  brokers: [1]
"""
KRAFT_CLUSTER = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: a}
spec:
  kafkaVersion: "4.1"
  kraft: {bootstrapServers: "127.0.0.1:1"}
  brokers: [1]
"""


def validate(root: Path, cluster: str, acls: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (root / "clusters/a").mkdir(parents=True)
    (root / "clusters/a/cluster.yaml").write_text(cluster, encoding="utf-8")
    (root / "clusters/a/acls.yaml").write_text("apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec:\n" + acls,
                                               encoding="utf-8")
    code = run(["--repo", str(root), "--no-color", "validate"])
    out = capsys.readouterr()
    return code, out.out + out.err


NAMES = """\
  resources:
    - {type: Group, name: "..", entries: [{principal: "User:bob", operation: Read}]}
    - {type: Topic, name: ".", entries: [{principal: "User:bob", operation: Read}]}
    - {type: TransactionalId, name: "a/b", pattern: PREFIXED, entries: [{principal: "User:bob", operation: Write}]}
    - {type: Group, name: "ok.group", entries: [{principal: "User:bob", operation: Read}]}
"""


def test_names_zookeeper_cannot_hold_are_refused_at_their_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `valid`, then `..` failed every apply and `a/b` re-planned forever."""
    assert validate(tmp_path, ZK_CLUSTER, NAMES, capsys) == (1, (
        "clusters/a/acls.yaml:6:21: error: ACL resource Group '..' cannot be stored in ZooKeeper: Kafka's ZkAclStore "
        "keeps it at /kafka-acl/Group/.., and ZooKeeper refuses the path component '..' (PathUtils.validatePath: "
        "relative paths not allowed): every apply of this cluster would fail [name]\n"
        "clusters/a/acls.yaml:7:21: error: ACL resource Topic '.' cannot be stored in ZooKeeper: Kafka's ZkAclStore "
        "keeps it at /kafka-acl/Topic/., and ZooKeeper refuses the path component '.' (PathUtils.validatePath: "
        "relative paths not allowed): every apply of this cluster would fail [name]\n"
        "clusters/a/acls.yaml:8:31: error: ACL resource TransactionalId 'a/b' cannot be stored in ZooKeeper: Kafka's "
        "ZkAclStore keeps it at /kafka-acl-extended/prefixed/TransactionalId/a/b, and a '/' makes it a deeper znode "
        "that Kafka's authorizer reads back as another resource (named 'a'): the plan would never settle [name]\n"
        "invalid: 3 error(s), 0 warning(s)\n"))


def test_a_kraft_cluster_stores_names_as_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = validate(tmp_path, KRAFT_CLUSTER, NAMES, capsys)
    assert "ZkAclStore" not in out


def test_every_problem_of_an_entry_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39 item 8: the principal without `User:` was reported alone (the schema's pattern dropped the
    document); the host and the operation came only after it was fixed."""
    acls = """\
  resources:
    - type: Group
      name: analytics
      entries:
        - {principal: svc-analytics, host: analytics.internal, operation: Write}
"""
    assert validate(tmp_path, ZK_CLUSTER, acls, capsys) == (1, (
        "clusters/a/acls.yaml:9:12: error: principal 'svc-analytics' must be Type:name, e.g. User:alice "
        "(Kafka's SecurityUtils.parseKafkaPrincipal) [principal]\n"
        "clusters/a/acls.yaml:9:38: error: host 'analytics.internal' must be '*' or an IP address (Kafka compares "
        "the client's address, not its name) [host]\n"
        "clusters/a/acls.yaml:9:64: error: operation Write is not valid for a Group (Kafka's "
        "AclEntry.supportedOperations: Delete, Describe, Read, or All) [operation]\n"
        "invalid: 3 error(s), 0 warning(s)\n"))
