"""`reconcile` of a large fleet on worker processes (gitops/fanout.py) against a real ZooKeeper: the same outcomes
as one process (applied, failed, refused, invalid), errors of fleet.yaml fail every cluster in every worker, a
stop request reaches the workers, and a worker that dies fails only its own clusters.

The threshold for forking (`FANOUT_MIN`) is lowered so that a handful of clusters goes to workers."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.gitops import current_revision, reconcile
from reconciler.gitops.reconcile import Options, Outcome, Source, run_pass
from reconciler.manifests import validate
from reconciler.zk.layout import encode_controller
from tests.conftest import ZkServer
from tests.integration.test_gitops import FLEET, commit, topics_yaml
from tests.integration.test_reconcile import Fleet


@pytest.fixture
def fleet(tmp_path: Path, zk_server: ZkServer, zk_chroot: str) -> Iterator[Fleet]:
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    yield Fleet(tmp_path, zk_server, zk_chroot, client)
    client.stop()
    client.close()


@pytest.fixture(autouse=True)
def small_fanout(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Fork from two clusters on, and count the passes that did."""
    monkeypatch.setattr(validate, "FANOUT_MIN", 2)
    forked: list[int] = []
    real = reconcile.fan_out

    def counting(*args: Any, **kwargs: Any) -> Any:
        forked.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(reconcile, "fan_out", counting)
    return forked


def five_clusters(fleet: Fleet) -> None:
    files = {**fleet.cluster("good-1"), **fleet.cluster("good-2"), **fleet.cluster("kraft"),
             **fleet.cluster("invalid"), **fleet.cluster("good-3")}
    files["clusters/invalid/topics.yaml"] = topics_yaml().replace("retention.ms", "retention.mss")
    commit(fleet.repo, "five clusters", files)
    fleet.client.create(f"{fleet.chroot}/kraft/controller", encode_controller(1, kraft_controller_epoch=5))


def comparable(outcome: Outcome) -> tuple[Any, ...]:
    plan = outcome.plan
    return (outcome.cluster, outcome.status, outcome.error, outcome.diagnostics,
            None if plan is None else (plan.counts, plan.topics_to_create, plan.entities))


def source(fleet: Fleet) -> Source:
    return Source(fleet.root, current_revision(fleet.root), fleet.root)


def test_workers_find_what_one_process_finds(fleet: Fleet, small_fanout: list[int], tmp_path: Path) -> None:
    five_clusters(fleet)
    alone = run_pass(source(fleet), (), Options(dry_run=True, jobs=1))
    assert small_fanout == []
    seen: list[str] = []
    shared = run_pass(source(fleet), (), Options(dry_run=True, jobs=2), on_outcome=lambda o: seen.append(o.cluster))
    assert small_fanout == [2]
    assert [comparable(o) for o in shared.outcomes] == [comparable(o) for o in alone.outcomes]
    assert sorted(seen) == ["good-1", "good-2", "good-3", "invalid", "kraft"]  # reported by the parent
    assert {o.cluster: o.status for o in shared.outcomes} == {
        "good-1": "planned", "good-2": "planned", "good-3": "planned", "invalid": "failed", "kraft": "planned"}

    applied = run_pass(source(fleet), (), Options(jobs=2, audit_log=tmp_path / "audit.jsonl"))
    assert {o.cluster: o.status for o in applied.outcomes} == {
        "good-1": "applied", "good-2": "applied", "good-3": "applied", "invalid": "failed", "kraft": "refused"}
    for good in ("good-1", "good-2", "good-3"):
        assert fleet.client.exists(f"{fleet.chroot}/{good}/brokers/topics/orders")
    assert len((tmp_path / "audit.jsonl").read_text().splitlines()) == 3
    again = run_pass(source(fleet), ("good-1", "good-3"), Options(jobs=2))
    assert [(o.cluster, o.status) for o in again.outcomes] == [("good-1", "in-sync"), ("good-3", "in-sync")]


def test_a_broken_fleet_file_fails_every_cluster_in_every_worker(fleet: Fleet, small_fanout: list[int]) -> None:
    files = {**fleet.cluster("a"), **fleet.cluster("b"), **fleet.cluster("c"),
             "clusters/fleet.yaml": FLEET.replace("brokerDefaults:", "brokerDefaultz:")}
    commit(fleet.repo, "broken fleet", files)
    alone = run_pass(source(fleet), (), Options(jobs=1))
    result = run_pass(source(fleet), (), Options(jobs=3))
    assert small_fanout == [3]
    assert result.problems == alone.problems and result.problems
    assert [comparable(o) for o in result.outcomes] == [comparable(o) for o in alone.outcomes]
    assert {o.status for o in result.outcomes} == {"failed"}
    assert all(o.error and "clusters/fleet.yaml" in o.error for o in result.outcomes)
    assert not fleet.client.exists(f"{fleet.chroot}/a/brokers/topics/orders")


def test_two_directories_naming_one_target_are_refused_across_workers(fleet: Fleet, small_fanout: list[int]) -> None:
    """One target, one directory (targets.py): the two clusters land in different workers' shares, and each is
    failed at its connect line exactly as a one-process pass fails it (so neither is applied)."""
    files = {**fleet.cluster("a"), **fleet.cluster("b"), **fleet.cluster("c"), **fleet.cluster("d")}
    files["clusters/d/cluster.yaml"] = files["clusters/b/cluster.yaml"].replace("name: b", "name: d")
    commit(fleet.repo, "d names b's target", files)
    alone = run_pass(source(fleet), (), Options(dry_run=True, jobs=1))
    result = run_pass(source(fleet), (), Options(dry_run=True, jobs=2))
    assert small_fanout == [2]  # shares a, c and b, d: the conflict is found across them
    assert result.problems == alone.problems == ()
    assert [comparable(o) for o in result.outcomes] == [comparable(o) for o in alone.outcomes]
    assert {o.cluster: o.status for o in result.outcomes} == {"a": "planned", "b": "failed", "c": "planned",
                                                              "d": "failed"}
    for o in result.outcomes[1::2]:
        assert [d.message for d in o.diagnostics if "target" in d.message] == [
            f"cluster {o.cluster}: its target is also the target of cluster(s) {'d' if o.cluster == 'b' else 'b'}: "
            "a target belongs to one cluster directory (a rename keeps it with meta.renamedFrom and removes the old "
            "directory)"]
    selected = run_pass(source(fleet), ("b", "c", "d"), Options(dry_run=True, jobs=2))
    assert [comparable(o) for o in selected.outcomes] == [
        comparable(o) for o in run_pass(source(fleet), ("b", "c", "d"), Options(dry_run=True, jobs=1)).outcomes]


def test_a_stop_request_reaches_the_workers(fleet: Fleet, small_fanout: list[int]) -> None:
    commit(fleet.repo, "three", {**fleet.cluster("a"), **fleet.cluster("b"), **fleet.cluster("c")})
    stop = threading.Event()
    stop.set()  # as SIGTERM during the load
    result = run_pass(source(fleet), (), Options(jobs=2), stop)
    assert small_fanout == [2]
    assert {o.status for o in result.outcomes} == {"skipped"} and len(result.outcomes) == 3
    assert not fleet.client.exists(f"{fleet.chroot}/a/brokers/topics/orders")


def test_a_worker_that_dies_fails_only_its_own_clusters(
    fleet: Fleet, small_fanout: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    commit(fleet.repo, "four", {k: v for n in ("a", "b", "c", "d") for k, v in fleet.cluster(n).items()})
    real = reconcile._Runner.run

    def run(self: Any, name: str, desired: Any) -> Outcome:
        if name == "b":
            os._exit(9)  # the worker of shares ["b", "d"] is killed before it reconciles b
        return real(self, name, desired)

    monkeypatch.setattr(reconcile._Runner, "run", run)
    seen: list[str] = []
    result = run_pass(source(fleet), (), Options(jobs=2, parallel=2), on_outcome=lambda o: seen.append(o.cluster))
    assert {o.cluster: o.status for o in result.outcomes} == {"a": "applied", "b": "failed", "c": "applied",
                                                             "d": "failed"}
    assert all(o.error == "the worker process reconciling it ended early"
               for o in result.outcomes if o.status == "failed")
    assert sorted(seen) == ["a", "b", "c", "d"]
    assert fleet.client.exists(f"{fleet.chroot}/c/brokers/topics/orders")
    assert not fleet.client.exists(f"{fleet.chroot}/d/brokers/topics/orders")


def test_a_cluster_is_planned_and_applied_on_one_session(
    fleet: Fleet, small_fanout: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from reconciler.zk import backend as zk_backend  # where the ZooKeeper backend opens its sessions

    commit(fleet.repo, "one", fleet.cluster("a"))
    opened: list[str] = []
    real = zk_backend.connect

    def counting(spec: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(spec.connect)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(zk_backend, "connect", counting)
    result = run_pass(source(fleet), (), Options(jobs=1, audit_log=tmp_path / "audit.jsonl"))
    assert [(o.cluster, o.status) for o in result.outcomes] == [("a", "applied")]
    assert opened == [fleet.connect("a")]  # the apply (lock, writes, audit) reused the planning session
    assert fleet.client.exists(f"{fleet.chroot}/a/brokers/topics/orders")
    assert not fleet.client.get_children(f"{fleet.chroot}/a/reconciler/lock")  # and released its lock
