"""`reconcile` on real git repositories and a real ZooKeeper: a merged change is applied with its revision in the
audit entry, failures stay in their cluster, policy decides about destructive plans, drift is reported with
what changed live and when, and a stop request ends the pass between clusters (SIGTERM in a real process).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.gitops import current_revision
from reconciler.gitops.reconcile import Options, Outcome, Source, run_pass
from reconciler.model import EntityRef
from reconciler.zk.layout import encode_controller, encode_notification
from tests.conftest import REPO, ZkServer
from tests.integration.test_gitops import (
    UNREACHABLE,
    cluster_yaml,
    commit,
    invoke,
    make_repo,
    topics_yaml,
)


def audit_entries(client: KazooClient, chroot: str) -> list[dict[str, Any]]:
    parent = f"{chroot}/reconciler/audit"
    return [json.loads(client.get(f"{parent}/{n}")[0]) for n in sorted(client.get_children(parent))]


def config(client: KazooClient, path: str) -> dict[str, str]:
    return dict(json.loads(client.get(path)[0])["config"])


class Fleet:
    """A manifests repo whose clusters live under chroots of the test's ZooKeeper (or nowhere)."""

    def __init__(self, tmp_path: Path, server: ZkServer, chroot: str, root_client: KazooClient) -> None:
        self.server, self.chroot, self.client = server, chroot, root_client
        self.repo = make_repo(tmp_path / "manifests")
        self.root = Path(self.repo.working_tree_dir or ".")

    def connect(self, name: str) -> str:
        self.client.ensure_path(f"{self.chroot}/{name}")
        return f"{self.server.connect}{self.chroot}/{name}"

    def cluster(self, name: str, reachable: bool = True, extra: str = "", **topics: Any) -> dict[str, str]:
        connect = self.connect(name) if reachable else UNREACHABLE
        return {f"clusters/{name}/cluster.yaml": cluster_yaml(name, connect, {"env": "prod"}, extra),
                f"clusters/{name}/topics.yaml": topics_yaml(**topics)}


@pytest.fixture
def root_client(zk_server: ZkServer) -> Any:
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def fleet(tmp_path: Path, zk_server: ZkServer, zk_chroot: str, root_client: KazooClient) -> Fleet:
    return Fleet(tmp_path, zk_server, zk_chroot, root_client)


def reconcile(capsys: pytest.CaptureFixture[str], fleet: Fleet, *args: str, url: bool = False
              ) -> tuple[int, dict[str, Any], str]:
    where = ["--repo-url", str(fleet.root), "--cache-dir", str(fleet.root.parent / "cache")] if url else []
    code, out, err = invoke(capsys, "--repo", str(fleet.root), "reconcile", *where, "--once", "--format", "json",
                            "--audit-log", str(fleet.root.parent / "audit.jsonl"), *args)
    return code, json.loads(out), err


def statuses(summary: dict[str, Any]) -> dict[str, str]:
    return {c["cluster"]: c["status"] for c in summary["clusters"]}


def test_reconcile_applies_a_merged_change_and_records_the_revision(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    first = commit(fleet.repo, "orders", fleet.cluster("a"))
    code, summary, err = reconcile(capsys, fleet, url=True)
    assert code == 0, err
    assert statuses(summary) == {"a": "applied"} and summary["revision"]["sha"] == first
    assert config(fleet.client, f"{fleet.chroot}/a/config/topics/orders") == {"retention.ms": "86400000"}

    fleet.repo.git.checkout("-b", "longer-retention")
    commit(fleet.repo, "orders: keep 2 days", {"clusters/a/topics.yaml": topics_yaml(retention=172800000)})
    fleet.repo.git.checkout("main")
    fleet.repo.git.merge("--no-ff", "longer-retention", "-m", "Merge pull request #7")
    merged = fleet.repo.head.commit.hexsha

    code, summary, err = reconcile(capsys, fleet, url=True)
    assert code == 0, err
    assert statuses(summary) == {"a": "applied"}
    assert summary["clusters"][0]["changes"] == {"add": 0, "change": 1, "remove": 0, "topicsCreated": 0,
                                                 "partitionsAdded": 0, "topicsDeleted": 0}
    assert config(fleet.client, f"{fleet.chroot}/a/config/topics/orders") == {"retention.ms": "172800000"}
    entries = audit_entries(fleet.client, f"{fleet.chroot}/a")
    assert [e["revision"] for e in entries] == [first, merged]
    assert all(e["result"] == "applied" for e in entries)
    assert entries[-1]["user"].endswith(" for Alice Example <alice@example.com>")
    assert entries[-1]["planId"] == summary["clusters"][0]["planId"]
    assert "a        applied  ~1" in err and "0 failure(s)" in err

    code, summary, _ = reconcile(capsys, fleet, url=True)
    assert code == 0 and statuses(summary) == {"a": "in-sync"}
    assert summary["clusters"][0]["drift"]["items"] == []


def test_a_failing_cluster_does_not_stop_the_others(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    files = {**fleet.cluster("good-1"), **fleet.cluster("good-2"), **fleet.cluster("kraft"),
             **fleet.cluster("invalid"), **fleet.cluster("down", reachable=False,
                                                         extra="")}
    files["clusters/down/cluster.yaml"] = files["clusters/down/cluster.yaml"].replace(
        f'connect: "{UNREACHABLE}"}}', f'connect: "{UNREACHABLE}", sessionTimeoutSeconds: 1}}')
    files["clusters/invalid/topics.yaml"] = topics_yaml().replace("retention.ms", "retention.mss")
    commit(fleet.repo, "five clusters", files)
    fleet.client.create(f"{fleet.chroot}/kraft/controller", encode_controller(1, kraft_controller_epoch=5))

    started = time.monotonic()
    code, summary, err = reconcile(capsys, fleet, "--parallel", "3")
    assert code == 1
    assert statuses(summary) == {"down": "failed", "good-1": "applied", "good-2": "applied", "invalid": "failed",
                                 "kraft": "refused"}
    by_name = {c["cluster"]: c for c in summary["clusters"]}
    assert "cannot connect to ZooKeeper at 127.0.0.1:1" in by_name["down"]["error"]
    assert "kraftControllerEpoch 5" in by_name["kraft"]["error"]
    assert "unknown topic config 'retention.mss'" in by_name["invalid"]["diagnostics"][0]
    for good in ("good-1", "good-2"):
        assert fleet.client.exists(f"{fleet.chroot}/{good}/brokers/topics/orders")
    assert summary["failures"] == 3 and "3 failure(s)" in err
    assert time.monotonic() - started < 30


def test_destructive_plans_wait_for_policy_or_the_flag(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    commit(fleet.repo, "orders", fleet.cluster("a"))
    assert reconcile(capsys, fleet)[0] == 0
    commit(fleet.repo, "orders: 1 hour", {"clusters/a/topics.yaml": topics_yaml(retention=3600000)})
    code, summary, _ = reconcile(capsys, fleet)
    assert code == 1 and statuses(summary) == {"a": "refused"}
    assert "--allow-destructive" in summary["clusters"][0]["error"]
    allowed = cluster_yaml("a", fleet.connect("a"), {"env": "prod"}, "  policy: {allowDestructive: true}\n")
    commit(fleet.repo, "a: destructive allowed", {"clusters/a/cluster.yaml": allowed})
    code, summary, _ = reconcile(capsys, fleet)
    assert code == 0 and statuses(summary) == {"a": "applied"}
    assert config(fleet.client, f"{fleet.chroot}/a/config/topics/orders") == {"retention.ms": "3600000"}


def test_drift_since_the_last_apply_names_the_keys_and_when(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    applied = commit(fleet.repo, "orders", fleet.cluster("a"))
    assert reconcile(capsys, fleet)[0] == 0
    time.sleep(0.05)  # a later mtime than the audit entry's ctime, whatever the clock's resolution
    base = f"{fleet.chroot}/a"
    fleet.client.set(f"{base}/config/topics/orders",
                     b'{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}')
    fleet.client.create(f"{base}/config/changes/config_change_", encode_notification(EntityRef("topics", "orders")),
                        sequence=True, makepath=True)
    code, summary, err = reconcile(capsys, fleet, "--dry-run")
    assert code == 0 and statuses(summary) == {"a": "planned"}
    drift = summary["clusters"][0]["drift"]
    assert drift["since"]["revision"] == applied
    items = {(i["entity"], i["key"]): i for i in drift["items"]}
    assert set(items) == {("topics/orders", "retention.ms"), ("topics/orders", "cleanup.policy")}
    changed = items["topics/orders", "retention.ms"]
    assert (changed["expected"], changed["live"]) == ("86400000", "1000")
    assert (items["topics/orders", "cleanup.policy"]["expected"], items["topics/orders", "cleanup.policy"]["live"]) \
        == (None, "compact")
    assert changed["modified"] and changed["notified"] and changed["by"].startswith("outside the reconciler")
    assert f"drift in a since the apply of {applied}" in err
    assert "topics/orders retention.ms: applied 86400000, live 1000" in err


def test_drift_without_the_applied_revision_falls_back_to_mtimes(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(fleet.repo, "orders", fleet.cluster("a"))
    assert reconcile(capsys, fleet, "--allow-dirty")[0] == 0
    (fleet.root / "clusters/a/topics.yaml").write_text(topics_yaml(retention=172800000))
    assert reconcile(capsys, fleet, "--allow-dirty")[0] == 0  # recorded as <sha>-dirty
    time.sleep(0.05)
    fleet.client.set(f"{fleet.chroot}/a/config/topics/orders", b'{"version":1,"config":{}}')
    code, summary, _ = reconcile(capsys, fleet, "--dry-run")
    assert code == 0
    drift = summary["clusters"][0]["drift"]
    assert drift["since"]["revision"].endswith("-dirty")
    assert [(i["entity"], i["key"]) for i in drift["items"]] == [("topics/orders", "*")]
    assert "cannot be read" in drift["note"]


def test_reconcile_a_local_branch_without_checking_it_out(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    main = commit(fleet.repo, "orders", fleet.cluster("a"))
    fleet.repo.git.checkout("-b", "wip")
    (fleet.root / "clusters/a/topics.yaml").write_text(topics_yaml(partitions=9))  # dirty, other branch
    code, summary, err = reconcile(capsys, fleet, "--branch", "main")
    assert code == 0, err
    assert summary["revision"]["sha"] == main and statuses(summary) == {"a": "applied"}
    assert len(json.loads(fleet.client.get(f"{fleet.chroot}/a/brokers/topics/orders")[0])["partitions"]) == 3


def test_a_stop_request_finishes_the_current_cluster_and_starts_no_other(fleet: Fleet) -> None:
    commit(fleet.repo, "three", {**fleet.cluster("a"), **fleet.cluster("b"), **fleet.cluster("c")})
    stop = threading.Event()
    seen: list[Outcome] = []

    def on_outcome(outcome: Outcome) -> None:
        seen.append(outcome)
        stop.set()  # as SIGTERM would, while the first cluster ends

    source = Source(fleet.root, current_revision(fleet.root), fleet.root)
    result = run_pass(source, (), Options(parallel=1), stop, on_outcome)
    assert [(o.cluster, o.status) for o in result.outcomes] == [("a", "applied"), ("b", "skipped"),
                                                               ("c", "skipped")]
    assert result.failures == 0
    assert not fleet.client.exists(f"{fleet.chroot}/b/brokers/topics/orders")


def test_sigterm_ends_an_interval_loop_gracefully(fleet: Fleet, tmp_path: Path) -> None:
    commit(fleet.repo, "orders", fleet.cluster("a"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RECONCILER_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "--repo", str(fleet.root), "reconcile", "--interval", "1h",
         "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # the first pass is done; the loop now waits an hour
        assert statuses(first) == {"a": "applied"}
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out == "" and "received SIGTERM" in err


def test_a_failed_fetch_is_a_failed_pass(fleet: Fleet, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = invoke(capsys, "--repo", str(fleet.root), "reconcile", "--once", "--format", "json",
                            "--repo-url", str(tmp_path / "no-such-repo"), "--cache-dir", str(tmp_path / "c"))
    assert code == 1 and "error: cannot fetch branch 'main'" in err
    assert "cannot fetch branch 'main'" in json.loads(out)["error"]


def test_interval_needs_a_duration(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(capsys, "--repo", str(fleet.root), "reconcile", "--interval", "5 minutes")
    assert code == 1 and "is not a duration" in err
    code, _, err = invoke(capsys, "--repo", str(fleet.root), "reconcile")
    assert code == 1 and "exactly one of --once and --interval" in err


ACLS_YAML = """apiVersion: reconciler/v1
kind: Acls
meta: {}
spec:
  consumers:
    - principals: [User:alice, User:bob]
      topic: orders
      group: orders-app
"""
SCRAM_YAML = """apiVersion: reconciler/v1
kind: Quotas
meta: {}
spec:
  scramUsers:
    alice:
      SCRAM-SHA-256: {password: {secret: {env: RECONCILE_TEST_ALICE_PW}}}
"""


def test_access_as_code_is_reconciled_audited_and_its_drift_named(
    fleet: Fleet, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACLs and a SCRAM user through reconcile: applied once, then in sync (live ACLs are read, not planned
    again), the audit entry says who gained what (names, never a credential), and an entry removed live as
    kafka-acls.sh --remove would is drift naming the entry."""
    password = "lk-reconcile-scram-pw-8f2k"
    monkeypatch.setenv("RECONCILE_TEST_ALICE_PW", password)
    applied = commit(fleet.repo, "access", {**fleet.cluster("a"), "clusters/a/acls.yaml": ACLS_YAML,
                                            "clusters/a/users.yaml": SCRAM_YAML})
    code, summary, err = reconcile(capsys, fleet)
    assert code == 0 and statuses(summary) == {"a": "applied"}, err
    assert summary["clusters"][0]["changes"]["aclEntries"] == 6  # Topic Read+Describe, Group Read; two principals
    (entry,) = audit_entries(fleet.client, f"{fleet.chroot}/a")
    access = entry["access"]
    assert {a["resource"] for a in access["acls"]} == {"Topic:LITERAL:orders", "Group:LITERAL:orders-app"}
    assert "Allow User:alice Read from *" in next(a for a in access["acls"] if a["resource"].startswith("Topic"))[
        "added"]
    assert access["scramCredentials"] == [{"user": "alice", "mechanism": "SCRAM-SHA-256", "op": "+"}]
    assert password not in json.dumps(entry)

    code, summary, err = reconcile(capsys, fleet)
    assert code == 0 and statuses(summary) == {"a": "in-sync"}, err

    time.sleep(0.05)
    topic_acl = f"{fleet.chroot}/a/kafka-acl/Topic/orders"
    left = [a for a in json.loads(fleet.client.get(topic_acl)[0])["acls"] if a["principal"] != "User:bob"]
    fleet.client.set(topic_acl, json.dumps({"acls": left, "version": 1}).encode())
    code, summary, _ = reconcile(capsys, fleet, "--dry-run")
    drift = summary["clusters"][0]["drift"]
    assert code == 0 and drift["since"]["revision"] == applied
    items = {(i["entity"], i["key"]): (i["expected"], i["live"]) for i in drift["items"]}
    assert items == {("acls/Topic:LITERAL:orders", "Allow User:bob Read from *"): ("present", None),
                     ("acls/Topic:LITERAL:orders", "Allow User:bob Describe from *"): ("present", None)}
