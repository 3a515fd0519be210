"""The backend seam, followed through the code (issue 40): a plan passed to `apply_cluster_plan` enters one
backend's modules only. Every Python function called during the apply is recorded (`sys.setprofile`): a
KRaft cluster's apply calls nothing in `reconciler.zk`, a ZooKeeper cluster's nothing in `reconciler.kraft`.
Real clusters: a Kafka 4.1 KRaft node, a ZooKeeper chroot."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconciler.apply import apply_cluster_plan
from reconciler.workflow import load_desired, plan_cluster
from tests.kraftbrokers import KraftCluster

TOPICS = ("apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {name}:\n"
          "      partitions: 1\n      replicationFactor: 1\n      config: {{retention.ms: \"691200000\"}}\n")


def _modules_called(action: Callable[[], Any]) -> set[str]:
    seen: set[str] = set()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith("reconciler."):
                seen.add(module)

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return seen


def _repo(root: Path, cluster_block: str) -> Path:
    cluster = root / "clusters" / "c1"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text("apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1}\nspec:\n"
                                          + cluster_block + "  brokers: [1]\n")
    (cluster / "topics.yaml").write_text(TOPICS.format(name=f"seam-{uuid.uuid4().hex[:8]}"))
    return root


def _apply(root: Path, **options: Any) -> set[str]:
    states, _ = load_desired(root, ["c1"])
    result = plan_cluster(states["c1"], root)
    assert not result.plan.is_empty
    # an operator's apply (the CLI's): the shared brokers hold other tests' topics, which a first apply by the
    # scheduled reconcile would refuse to take over (ownership.beyond_empty)
    return _modules_called(lambda: apply_cluster_plan(result.plan, states["c1"], root, adopt=True, **options))


def test_a_kraft_apply_enters_no_zookeeper_module(kraft4: KraftCluster, tmp_path: Path) -> None:
    root = _repo(tmp_path, f'  kafkaVersion: "4.1"\n  kraft: {{bootstrapServers: "{kraft4.bootstrap}", '
                           f'stateTopic: _kr-{uuid.uuid4().hex[:8]}}}\n')
    called = _apply(root)
    assert "reconciler.kraft.write" in called and "reconciler.kraft.lease" in called
    assert sorted(m for m in called if m.startswith("reconciler.zk")) == []


def test_a_zookeeper_apply_enters_no_kraft_module(zk_connect: str, tmp_path: Path) -> None:
    root = _repo(tmp_path, f'  kafkaVersion: "3.9"\n  zookeeper: {{connect: "{zk_connect}"}}\n')
    called = _apply(root, allow_no_brokers=True)
    assert "reconciler.zk.write" in called and "reconciler.zk.lock" in called
    assert sorted(m for m in called if m.startswith("reconciler.kraft")) == []
