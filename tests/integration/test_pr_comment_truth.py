"""Issue 30: what a reviewer reads is the whole truth. Over a real ZooKeeper: the Markdown comment of `plan`
names every unmanaged entity (a topic removed from the manifests) and every warning (the "if you meant 7d"
hint) in its opening section, `show` of the plan file renders the same comment, and a refused partition
decrease is an error without a "no changes" line before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.test_cli_plan_apply import cli, make_repo

SECOND_TOPIC = "    legacy: {partitions: 1, replicationFactor: 1}\n"


def _applied(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_file = tmp_path / "first.json"
    assert cli(root, "plan", "--out", str(plan_file)) == 0
    assert cli(root, "apply", str(plan_file), "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 0
    capsys.readouterr()


def _with_legacy_topic(root: Path) -> Path:
    topics = root / "clusters" / "c1" / "topics.yaml"
    topics.write_text(topics.read_text() + SECOND_TOPIC)
    return topics


def test_a_topic_removed_from_the_manifests_is_in_the_opening_section(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    topics = _with_legacy_topic(root)
    _applied(root, tmp_path, capsys)
    topics.write_text(topics.read_text().replace(SECOND_TOPIC, ""))  # removed from the manifests
    assert cli(root, "plan", "--format", "markdown") == 0
    out = capsys.readouterr().out
    section = out.index("Before you approve")
    assert out.index("**ℹ️ Unmanaged (1)") > section and "`topics/legacy`" in out[section:]
    assert "removing a topic from the manifests does not delete it" in out
    assert zk_client.exists("/brokers/topics/legacy") is not None  # and it is left as it is


def test_show_renders_the_comment_plan_printed(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect, retention="604800")
    plan_file = tmp_path / "plan.json"
    assert cli(root, "plan", "--format", "markdown", "--out", str(plan_file)) == 0
    printed = capsys.readouterr().out
    assert cli(root, "show", str(plan_file), "--format", "markdown") == 0
    assert capsys.readouterr().out == printed


def test_the_seconds_hint_is_in_the_comment_not_only_on_stderr(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect, retention="604800")
    assert cli(root, "plan", "--format", "markdown") == 0
    out = capsys.readouterr().out
    section = out.index("Before you approve")
    assert out.index("if you meant 7d, write 604800000") > section
    assert "`clusters/c1/topics.yaml:6`" in out


def test_a_partition_decrease_is_an_error_without_a_no_changes_line(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", zk_connect)
    _applied(root, tmp_path, capsys)
    topics = root / "clusters" / "c1" / "topics.yaml"
    topics.write_text(topics.read_text().replace("partitions: 3", "partitions: 2"))
    assert cli(root, "plan") == 1
    captured = capsys.readouterr()
    assert "Kafka cannot remove partitions" in captured.err
    assert "no changes" not in (captured.err + captured.out).lower()
