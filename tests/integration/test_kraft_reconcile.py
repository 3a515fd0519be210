"""`reconcile` of a KRaft cluster (spec.kraft) on a real Kafka 4.x node: the same pass as for ZooKeeper clusters,
through the Admin API backend — applied once (and verified), in sync the next time, and its drift report starts
from that apply, read back from the cluster's own state topic. The node is shared by the session's KRaft tests:
like every test of it, these manage it as cluster `k1` (one target, one cluster directory: ownership.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.integration.test_gitops import commit, invoke, make_repo
from tests.integration.test_kraft_backend import KRAFT_CLUSTER, manifests
from tests.kraftbrokers import KraftCluster


def test_reconcile_applies_a_kraft_cluster_then_finds_it_in_sync(kraft4: KraftCluster, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "manifests")
    root = Path(repo.working_tree_dir or ".")
    topic = f"rk-{uuid.uuid4().hex[:8]}"
    files = {f"clusters/k1/{name}": text for name, text in manifests(topic).items()}
    files["clusters/k1/cluster.yaml"] = KRAFT_CLUSTER.format(name="k1", version="4.1", bootstrap=kraft4.bootstrap,
                                                             extra="")
    # the shared node holds other tests' topics: an operator's apply takes it over first (the scheduled
    # reconcile never does, ownership.py), then reconcile applies what is committed next
    first = {n: t for n, t in files.items() if n.endswith(("cluster.yaml", "brokers.yaml"))}
    commit(repo, "a KRaft cluster", first)
    code, _, err = invoke(capsys, "--repo", str(root), "apply", "k1", "--auto-approve")
    assert code == 0, err
    commit(repo, "its topic and quotas", files)
    audit = str(tmp_path / "audit.jsonl")
    args = ("--repo", str(root), "reconcile", "--once", "--format", "json", "--audit-log", audit)
    code, out, err = invoke(capsys, *args, "--verify")
    summary = json.loads(out)
    assert code == 0, err
    (cluster,) = summary["clusters"]
    assert cluster["status"] == "applied" and cluster["verification"]["verified"] is True, cluster
    code, out, err = invoke(capsys, *args)
    (cluster,) = json.loads(out)["clusters"]
    assert code == 0 and cluster["status"] == "in-sync", err
    since = cluster["drift"]["since"]
    assert since["revision"] == repo.head.commit.hexsha and since["entry"].startswith("_kafka-reconciler@"), since
    assert cluster["drift"]["items"] == [] and cluster["drift"]["note"] is None


def test_snapshot_rows_of_a_kraft_cluster_come_from_its_admin_api(kraft4: KraftCluster, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`snapshot` / `impact` read a KRaft cluster through its Admin API (every entity type), not ZooKeeper."""
    from reconciler.impact.snapshot import collect_rows
    from reconciler.workflow import load_desired

    repo = make_repo(tmp_path / "manifests")
    root = Path(repo.working_tree_dir or ".")
    topic = f"sk-{uuid.uuid4().hex[:8]}"
    files = {f"clusters/k1/{name}": text for name, text in manifests(topic).items()}
    files["clusters/k1/cluster.yaml"] = KRAFT_CLUSTER.format(name="k1", version="4.1", bootstrap=kraft4.bootstrap,
                                                             extra="")
    commit(repo, "a KRaft cluster", files)
    code, _, err = invoke(capsys, "--repo", str(root), "apply", "k1", "--auto-approve")
    assert code == 0, err
    states, _ = load_desired(root, ["k1"])
    rows = collect_rows(states, root)
    assert ("k1", topic, 2, 1) in rows["topics"]
    assert ("k1", "topics", topic, "retention.ms", "86400000") in rows["configs"]
    assert ("k1", "users", "kraft-alice", "producer_byte_rate", "1048576") in rows["configs"]
    assert [b[1] for b in rows["brokers"]] == [1]
