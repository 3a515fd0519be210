"""Issue 38, finding 7: `impact --git-base` without `--inventory` read the live state with the pull request's own
`spec.zookeeper` and credential reference: a PR-chosen host received the digest credential. Every PR-mode command
now takes connection settings from the base (gitops/trusted.py). Real git, a real ZooKeeper behind two logging
proxies (the base's address and the author's), a real SparkSession.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ZkServer
from tests.integration.test_gitops import commit, invoke
from tests.integration.test_security_pr import base_repo, cluster_yaml, topics_yaml
from tests.leakcheck import ATTACKER_BAIT, ENCODER_SECRET, ZK_CREDENTIALS
from tests.tcpproxy import LoggingProxy, logging_proxy

pytestmark = [pytest.mark.spark]


@pytest.fixture
def proxies(zk_server: ZkServer) -> Iterator[tuple[LoggingProxy, LoggingProxy]]:
    target = ("127.0.0.1", zk_server.port)
    with logging_proxy(target) as trusted, logging_proxy(target) as attacker:
        yield trusted, attacker


def test_impact_of_a_pull_request_reads_only_with_the_base_settings(
    spark: Any, tmp_path: Path, zk_chroot: str, proxies: tuple[LoggingProxy, LoggingProxy],
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LK_ZK_AUTH", ZK_CREDENTIALS)
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    monkeypatch.setenv("LK_PR_BAIT", ATTACKER_BAIT)
    monkeypatch.setenv("RECONCILER_SPARK_PARTITIONS", "2")
    trusted, attacker = proxies
    root = tmp_path / "manifests"
    repo = base_repo(root, f"{trusted.address}{zk_chroot}")
    evil = cluster_yaml("a", f"{attacker.address}{zk_chroot}").replace("{env: LK_ZK_AUTH}", "{env: LK_ENCODER}")
    new = cluster_yaml("b", f"{attacker.address}/b", auth_env="LK_PR_BAIT")
    commit(repo, "shorter retention", {"clusters/a/cluster.yaml": evil, "clusters/a/topics.yaml": topics_yaml(3600000),
                                       "clusters/b/cluster.yaml": new, "clusters/b/topics.yaml": topics_yaml(60000)})
    code, out, err = invoke(capsys, "--repo", str(root), "impact", "--git-base", "main", "--master", "local[2]",
                            "--format", "json")
    assert code in (0, 2), err
    assert attacker.connections == 0 and not attacker.sent  # not one byte to the PR's hosts
    assert trusted.connections >= 1 and trusted.saw(ZK_CREDENTIALS)  # the base's identity on the base's host
    assert not trusted.saw(ENCODER_SECRET) and not trusted.saw(ATTACKER_BAIT)
    summary = json.loads(out)
    assert summary["source"]["before"] == "live state read with the base revision's connection settings"
    assert ENCODER_SECRET not in out + err and ATTACKER_BAIT not in out + err
