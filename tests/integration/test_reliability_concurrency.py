"""Concurrency between processes, through the real command line: two applies at once on one cluster, and a
manual edit between `plan --out` and `apply plan.json` (or in the middle of an apply). Version checks and
the cluster lock decide; nothing is written twice, nothing half; a plan afterwards is empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.apply import apply_tuning
from reconciler.errors import ReconcilerError
from tests.integration.reliability import (
    Proc,
    cli,
    config_bytes,
    notification_entities,
    outside_reconciler,
    seed_topics,
    topic_configs,
    tree,
    wait_until,
    write_repo,
)

OLD, NEW = {"retention.ms": "1000"}, {"retention.ms": "2000"}

pytestmark = pytest.mark.timeout(180)  # a safety net: each process inside has its own timeout


def setup_cluster(client: KazooClient, root: Path, connect: str, count: int) -> tuple[Path, list[str]]:
    names = [f"t-{i:04d}" for i in range(count)]
    seed_topics(client, dict.fromkeys(names, OLD))
    return write_repo(root, connect, topics=dict.fromkeys(names, NEW)), names


def assert_converged(client: KazooClient, repo: Path, names: list[str]) -> None:
    """Every topic has the desired config and exactly one notification; `plan` has nothing to do."""
    assert set(topic_configs(client, names).values()) == {config_bytes(NEW)}
    entities = notification_entities(client)
    assert sorted(entities) == [f"topics/{n}" for n in names]  # one each: none lost, none doubled
    again = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0 and "No changes" in again.stdout, again


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"RECONCILER_MAX_BATCH_BYTES": "1024", "RECONCILER_AUDIT_LOG": str(tmp_path / "audit.jsonl"), **extra}


@pytest.mark.slow
def test_two_applies_at_once_one_applies_the_other_waits_or_exits_3(
    zk_client: KazooClient, zk_connect: str, tmp_path: Path
) -> None:
    repo, names = setup_cluster(zk_client, tmp_path, zk_connect, 300)
    procs = [Proc(repo, ["apply", "--auto-approve"], env=env(tmp_path)) for _ in range(2)]
    runs = sorted((p.finish(90) for p in procs), key=lambda r: "applied plan" not in r.stderr)
    winner, other = runs
    assert winner.code == 0 and "300 entities" in winner.stderr, runs
    if other.code == 0:  # it planned after the winner had finished: nothing left to do
        assert "nothing to apply" in other.stderr, other
    else:  # it planned before, then waited for the lock: its plan is stale now
        assert other.code == 3, other
        assert "stale plan" in other.stderr or "another apply holds the lock" in other.stderr, other
        assert "wrote nothing" in other.stderr or "nothing was written" in other.stderr, other
    assert_converged(zk_client, repo, names)
    assert zk_client.get_children("/reconciler/lock") == []  # both released their lock nodes


@pytest.mark.slow
def test_apply_holding_the_lock_makes_others_wait_or_exit_3(
    zk_client: KazooClient, zk_connect: str, tmp_path: Path
) -> None:
    """A holds the lock (paused in the middle of its apply). B with a short lock timeout exits 3 naming A;
    C waits for the lock, gets it when A has finished, and finds its plan stale: exit 3, nothing written."""
    repo, names = setup_cluster(zk_client, tmp_path, zk_connect, 60)
    a = Proc(repo, ["apply", "--auto-approve"], module="tests.integration.faultproc",
             env=env(tmp_path, FAULT_PAUSE="multi:4"))
    a.wait_stopped(30)
    written = notification_entities(zk_client)
    assert 0 < len(written) < 60
    before = tree(zk_client)
    (before_lock,) = zk_client.get_children("/reconciler/lock")
    b = cli(repo, "apply", "--auto-approve", timeout=60, env=env(tmp_path, RECONCILER_LOCK_TIMEOUT="0.5"))
    assert b.code == 3, b
    assert "another apply holds the lock" in b.stderr and f", pid {a.pid}, plan " in b.stderr, b
    assert "held by reliability@test (host " in b.stderr and "waited 0.5 s and wrote nothing" in b.stderr, b
    assert outside_reconciler(tree(zk_client)) == outside_reconciler(before)
    assert zk_client.get_children("/reconciler/lock") == [before_lock]  # b's contender node came and went
    c = Proc(repo, ["apply", "--auto-approve"], env=env(tmp_path))
    assert wait_until(lambda: len(zk_client.get_children("/reconciler/lock")) == 2, 30)  # c is queued
    a.resume()
    assert a.finish(60).code == 0
    run = c.finish(60)
    assert run.code == 3 and "stale plan: " in run.stderr and "nothing was written" in run.stderr, run
    assert_converged(zk_client, repo, names)


def test_manual_edit_between_plan_and_apply_is_detected(
    zk_client: KazooClient, zk_connect: str, zk_chroot: str, tmp_path: Path
) -> None:
    repo, names = setup_cluster(zk_client, tmp_path, zk_connect, 30)
    plan_file = tmp_path / "plan.json"
    planned = cli(repo, "plan", "--out", str(plan_file), "--detailed-exitcode", timeout=60)
    assert planned.code == 2, planned
    zk_client.set("/config/topics/t-0017", config_bytes({"retention.ms": "5"}))  # an operator, by hand
    before = tree(zk_client)
    run = cli(repo, "apply", str(plan_file), "--auto-approve", timeout=60, env=env(tmp_path))
    assert run.code == 3, run
    assert run.stderr.rstrip().splitlines()[-1] == (
        f"error: stale plan: {zk_chroot}/config/topics/t-0017 changed since the plan (version 0, now 1); "
        "nothing was written; run `reconciler plan` again"
    ), run
    assert outside_reconciler(tree(zk_client)) == outside_reconciler(before)
    assert notification_entities(zk_client) == []
    (line,) = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert json.loads(line)["result"] == "failed: ConflictError"
    # re-plan as the message says: the manual edit is seen (and the desired state wins)
    replanned = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert replanned.code == 2, replanned
    assert "~ topics/t-0017  (znode version 1)\n      ~ retention.ms: 5 -> 2000 (2s)" in replanned.stdout, replanned
    assert cli(repo, "apply", "--auto-approve", timeout=60).code == 0
    assert_converged(zk_client, repo, names)


def test_manual_edit_during_apply_stops_it_at_that_batch(
    zk_client: KazooClient, zk_connect: str, zk_chroot: str, tmp_path: Path
) -> None:
    """The edit lands after apply's pre-read: ZooKeeper's version check rejects the whole batch."""
    repo, names = setup_cluster(zk_client, tmp_path, zk_connect, 30)
    plan_file = tmp_path / "plan.json"
    assert cli(repo, "plan", "--out", str(plan_file), timeout=60).code == 0
    proc = Proc(repo, ["apply", str(plan_file), "--auto-approve"], module="tests.integration.faultproc",
                env=env(tmp_path, FAULT_PAUSE="multi:3"))
    proc.wait_stopped(30)
    written = sorted(notification_entities(zk_client))  # batches 1 and 2, in plan order
    assert written == [f"topics/{n}" for n in names[: len(written)]] and 0 < len(written) < 30
    victim = names[len(written)]  # the first entity of batch 3
    zk_client.set(f"/config/topics/{victim}", config_bytes({"retention.ms": "5"}))
    proc.resume()
    run = proc.finish(60)
    assert run.code == 3, run
    assert f"stale plan: {zk_chroot}/config/topics/{victim} changed since the plan (version 0, now 1)" in \
        run.stderr, run
    assert "nothing of batch 3/" in run.stderr and "(batches 1-2 are committed and correct)" in run.stderr, run
    assert "run `reconciler plan` again" in run.stderr, run
    assert sorted(notification_entities(zk_client)) == written  # nothing of batch 3 or later
    configs = topic_configs(zk_client, names)
    assert {n for n, v in configs.items() if v == config_bytes(NEW)} == {w.split("/")[1] for w in written}
    assert cli(repo, "apply", "--auto-approve", timeout=60).code == 0
    assert_converged(zk_client, repo, names)


def test_operator_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_MAX_BATCH_BYTES", "2048")
    monkeypatch.setenv("RECONCILER_LOCK_TIMEOUT", "0")
    assert apply_tuning() == {"max_batch_bytes": 2048, "lock_timeout_s": 0.0}
    monkeypatch.setenv("RECONCILER_LOCK_TIMEOUT", "1m30s")  # a duration, like --lock-timeout
    assert apply_tuning()["lock_timeout_s"] == 90.0
    for env, value, error in [
        ("RECONCILER_MAX_BATCH_BYTES", "1MB", "is not a number"),
        ("RECONCILER_MAX_BATCH_BYTES", "100", "at least 1024 bytes"),
        ("RECONCILER_LOCK_TIMEOUT", "nan", "not a duration"),
        ("RECONCILER_LOCK_TIMEOUT", "-1", "not a duration"),
        ("RECONCILER_LOCK_TIMEOUT", "1d", "below one day"),
    ]:
        with monkeypatch.context() as patch:
            patch.setenv(env, value)
            with pytest.raises(ReconcilerError, match=error):
                apply_tuning()
