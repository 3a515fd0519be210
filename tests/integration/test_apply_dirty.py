"""`apply CLUSTER` plans from the work tree: uncommitted manifests are refused unless --allow-dirty."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from reconciler.cli.main import run

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "%s"}
  brokers: [1]
"""
BROKERS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: default}
spec:
  config: {num.io.threads: %d}
"""


def make_repo(root: Path, connect: str) -> git.Repo:
    (root / "clusters" / "c1").mkdir(parents=True)
    (root / "clusters" / "c1" / "cluster.yaml").write_text(CLUSTER % connect)
    (root / "clusters" / "c1" / "brokers.yaml").write_text(BROKERS % 8)
    repo = git.Repo.init(root)
    repo.index.add(["clusters/c1/cluster.yaml", "clusters/c1/brokers.yaml"])
    repo.index.commit("initial", author=git.Actor("Alice", "alice@example.com"))
    return repo


def test_dirty_tree_is_refused_and_allowed_with_the_flag(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(tmp_path, zk_connect)
    (tmp_path / "clusters" / "c1" / "brokers.yaml").write_text(BROKERS % 16)  # uncommitted
    assert run(["--repo", str(tmp_path), "apply", "c1", "--auto-approve"]) == 1
    assert "uncommitted" in capsys.readouterr().err.lower()
    assert run(["--repo", str(tmp_path), "apply", "c1", "--auto-approve", "--allow-dirty"]) == 0


def test_clean_tree_applies_and_records_the_revision(
    tmp_path: Path, zk_connect: str, zk_client: object
) -> None:
    repo = make_repo(tmp_path, zk_connect)
    audit = tmp_path.parent / f"{tmp_path.name}-audit.jsonl"
    assert run(["--repo", str(tmp_path), "apply", "c1", "--auto-approve", "--audit-log", str(audit)]) == 0
    assert repo.head.commit.hexsha in audit.read_text()
