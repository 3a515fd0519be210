"""The PR comment of `plan --git-base REV --format markdown --inventory DIR` over a real ZooKeeper and the real
impact job (a `reconciler impact` subprocess on local Spark): when a change opts a cluster into
policy.deleteTopics, the plan lists the topics to delete at the top of the comment, and the impact summary
appended to it gives their partitions and bytes from the inventory (`snapshot --sizes`).

Worked out by hand: c1 has orders (declared) and scratch-1 and scratch-2 (3 and 1 partitions, RF 2). The change
removes them from the manifests and adds `deleteTopics: [scratch-1, scratch-2]`; the sizes CSV gives scratch-1's
partitions 1, 2 and 4 KiB (7 KiB in all) and nothing for scratch-2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_cli_plan_apply import cli, make_repo

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRATCH = ("    scratch-1: {partitions: 3, replicationFactor: 2}\n"
           "    scratch-2: {partitions: 1, replicationFactor: 2}\n")


def test_the_comment_shows_the_bytes_of_the_topics_to_delete(
    tmp_path: Path, zk_connect: str, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import git

    root = make_repo(tmp_path / "repo", zk_connect)
    topics = root / "clusters" / "c1" / "topics.yaml"
    topics.write_text(topics.read_text() + SCRATCH)
    assert cli(root, "apply", "c1", "--auto-approve", "--audit-log", str(tmp_path / "a.jsonl")) == 0
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t")
        config.set_value("user", "email", "t@t")
    repo.git.add("--all")
    repo.index.commit("base")

    sizes = tmp_path / "sizes.csv"
    sizes.write_text("cluster,topic,partition,size_bytes\n"
                     "c1,scratch-1,0,1024\nc1,scratch-1,1,2048\nc1,scratch-1,2,4096\nc1,orders,0,99\n")
    inventory = tmp_path / "inventory"
    assert cli(root, "snapshot", "--out", str(inventory), "--sizes", str(sizes)) == 0
    capsys.readouterr()

    repo.git.checkout("-b", "feature")
    topics.write_text(topics.read_text().replace(SCRATCH, ""))
    cluster = root / "clusters" / "c1" / "cluster.yaml"
    cluster.write_text(cluster.read_text() + "  policy: {deleteTopics: [scratch-1, scratch-2]}\n")
    repo.git.add("--all")
    repo.index.commit("delete the scratch topics")

    code = cli(root, "plan", "--git-base", "main", "--format", "markdown", "--inventory", str(inventory))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    comment = captured.out
    plan_part, impact_part = comment.split("### Fleet impact", 1)
    assert "Topics to DELETE (2)" in plan_part  # the plan's own list, first in the comment
    assert "### 🛑 Topics to DELETE (2 in 1 cluster(s))" in impact_part, captured.err
    assert "2 topic(s) deleted (4 partitions, at least 7.0 KiB)" in impact_part
    assert "| `c1` | `scratch-1` | 3 | 6 | 7.0 KiB |" in impact_part
    assert "| `c1` | `scratch-2` | 1 | 2 | – |" in impact_part
    assert "7,168 bytes" in impact_part  # the reason carries the exact bytes
