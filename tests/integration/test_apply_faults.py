"""apply_plan when things go wrong: stale plans, a held lock, concurrent applies, a KRaft controller,
tiny batches, secure ACLs and lost connections (real ZooKeeper; faults injected around `txn.submit`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.security import ACL, READ_ACL_UNSAFE, Id, make_digest_acl_credential

from reconciler.errors import ApplyInterrupted, ConflictError, ExitCode, RefusedError
from reconciler.model import EntityRef, ZooKeeperSpec
from reconciler.zk import bulkread, txn
from reconciler.zk.layout import encode_controller
from reconciler.zk.session import ZooKeeperError, close, connect
from reconciler.zk.txn import Op
from reconciler.zk.write import ApplyOptions
from tests.conftest import ZkServer
from tests.integration.test_apply import (
    AUDIT,
    apply,
    config_bytes,
    desired,
    make_plan,
    notifications,
    seed,
    seed_topic,
    snapshot,
)

TOPICS = [f"t-{i:03d}" for i in range(200)]


def seed_topics(client: KazooClient, names: Sequence[str]) -> None:
    for name in names:
        seed_topic(client, name)
        seed(client, f"/config/topics/{name}", {"retention.ms": "1000"})


def last_audit(client: KazooClient) -> Any:
    return json.loads(client.get("/reconciler/audit/" + max(client.get_children("/reconciler/audit")))[0])


def retention_state(names: Sequence[str], value: str = "2000") -> Any:
    return desired(topics={name: (None, {"retention.ms": value}) for name in names})


def test_stale_plan_detected_before_writing(zk_client: KazooClient) -> None:
    seed_topics(zk_client, TOPICS[:3])
    plan = make_plan(zk_client, retention_state(TOPICS[:3]))
    zk_client.set("/config/topics/t-001", config_bytes({"retention.ms": "5"}))  # someone else, after planning
    before = snapshot(zk_client)
    with pytest.raises(ConflictError) as err:
        apply(zk_client, plan)
    assert err.value.exit_code == ExitCode.CONFLICT and int(err.value.exit_code) == 3
    assert "/config/topics/t-001 changed since the plan (version 0, now 1)" in err.value.message
    assert "nothing was written" in err.value.message and "reconciler plan" in err.value.message
    after = snapshot(zk_client)
    assert {p: v for p, v in after.items() if not p.startswith("/reconciler")} == before
    assert notifications(zk_client) == {}


def test_stale_version_caught_by_the_multi_itself(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write between the pre-read and the commit: ZooKeeper's version check rolls the whole batch back."""
    seed_topics(zk_client, TOPICS[:3])
    zk_client.ensure_path("/config/changes")
    plan = make_plan(zk_client, retention_state(TOPICS[:3]))
    real_submit, sent = txn.submit, []

    def racing_send(client: KazooClient, ops: Sequence[Op]) -> Any:
        sent.append(len(ops))
        zk_client.set("/config/topics/t-002", config_bytes({"retention.ms": "7"}))
        return real_submit(client, ops)

    monkeypatch.setattr(txn, "submit", racing_send)
    with pytest.raises(ConflictError) as err:
        apply(zk_client, plan)
    assert sent == [7]  # never retried (the lock's link + 3 entities with their notifications)
    message = err.value.message
    assert message.startswith("stale plan: ") and "/config/topics/t-002 changed since the plan" in message
    assert "(version 0, now 1)" in message and "nothing of batch 1/1 was written" in message
    for name in TOPICS[:2]:
        assert zk_client.get(f"/config/topics/{name}")[0] == config_bytes({"retention.ms": "1000"})
    assert notifications(zk_client) == {}
    record = last_audit(zk_client)
    assert record["result"] == "failed: ConflictError" and record["counts"]["entitiesWritten"] == 0


def test_lock_held_by_another_apply(zk_client: KazooClient, zk_connect: str) -> None:
    seed_topics(zk_client, TOPICS[:1])
    plan = make_plan(zk_client, retention_state(TOPICS[:1]))
    other = connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0))
    try:
        lock = other.Lock("/reconciler/lock", "bob@elsewhere pid 42 plan p-9")
        assert lock.acquire(timeout=5)
        with pytest.raises(ConflictError) as err:
            apply(zk_client, plan, options=ApplyOptions(lock_timeout_s=0.3))
        assert err.value.exit_code == 3 and "bob@elsewhere pid 42 plan p-9" in err.value.message
        assert zk_client.get("/config/topics/t-000")[0] == config_bytes({"retention.ms": "1000"})
        lock.release()
    finally:
        close(other)
    apply(zk_client, plan)  # the lock is free again, and ours was released on failure
    assert zk_client.get_children("/reconciler/lock") == []


def test_concurrent_applies_one_wins(zk_client: KazooClient, zk_connect: str) -> None:
    seed_topics(zk_client, TOPICS[:50])
    state = retention_state(TOPICS[:50])
    plan = make_plan(zk_client, state)
    clients = [connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0)) for _ in range(2)]
    outcomes: list[str] = []

    def run(client: KazooClient) -> None:
        try:
            apply(client, plan)
            outcomes.append("applied")
        except ConflictError as exc:
            outcomes.append(f"conflict: {exc.message}")

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        for c in clients:
            close(c)
    assert sorted(o.split(":")[0] for o in outcomes) == ["applied", "conflict"], outcomes
    for name in TOPICS[:50]:
        assert zk_client.get(f"/config/topics/{name}")[0] == config_bytes({"retention.ms": "2000"})
    assert len(notifications(zk_client)) == 50
    assert make_plan(zk_client, state).is_empty


def test_kraft_controller_refused_and_nothing_written(zk_client: KazooClient) -> None:
    seed_topics(zk_client, TOPICS[:2])
    zk_client.create("/controller", encode_controller(1, kraft_controller_epoch=5))
    plan = make_plan(zk_client, retention_state(TOPICS[:2]))
    before = snapshot(zk_client)
    with pytest.raises(RefusedError, match="KRaft controller owns the metadata"):
        apply(zk_client, plan)
    assert snapshot(zk_client) == before


def test_zk_controller_is_checked_in_every_batch(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_topics(zk_client, TOPICS[:2])
    zk_client.create("/controller", encode_controller(1))
    zk_client.ensure_path("/config/changes")
    plan = make_plan(zk_client, retention_state(TOPICS[:2]))
    real_submit = txn.submit

    def migrating(client: KazooClient, ops: Sequence[Op]) -> Any:
        assert ops[0] == Op("check", "/controller", version=0)
        zk_client.set("/controller", encode_controller(1, kraft_controller_epoch=3))
        return real_submit(client, ops)

    monkeypatch.setattr(txn, "submit", migrating)
    with pytest.raises(ConflictError, match=r"controller .* changed since apply started"):
        apply(zk_client, plan)
    assert notifications(zk_client) == {}


def test_tiny_batches_never_split_an_entity(zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_topics(zk_client, TOPICS)
    plan = make_plan(zk_client, retention_state(TOPICS))
    real_submit, batches = txn.submit, []

    def recording(client: KazooClient, ops: Sequence[Op]) -> Any:
        batches.append(list(ops))
        return real_submit(client, ops)

    monkeypatch.setattr(txn, "submit", recording)
    result = apply(zk_client, plan, options=ApplyOptions(max_batch_bytes=2048))
    assert result.batches == len(batches) > 10 and result.entities_written == 200
    for number, ops in enumerate(batches, 1):
        assert txn.size(ops, zk_client) + txn.MULTI_END <= 2048
        # the lock is still ours, and the batch before this one committed (the chain of the lock's versions)
        assert ops[0].kind == "set" and ops[0].path.startswith("/reconciler/lock/") and ops[0].version == number - 1
        kinds = [(op.kind, op.sequential) for op in ops[1:]]
        assert kinds == [("set", False), ("create", True)] * (len(ops) // 2)  # entity + its notification
    written = [op.path for ops in batches for op in ops[1:] if op.kind == "set"]
    assert written == [f"/config/topics/{t}" for t in TOPICS]
    assert len(notifications(zk_client)) == 200
    expected = config_bytes({"retention.ms": "2000"})
    assert all(zk_client.get(f"/config/topics/{t}")[0] == expected for t in TOPICS)


def test_secure_acls_like_kafka(zk_connect: str) -> None:
    client = connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0))
    try:
        client.add_auth("digest", "kafka:secret")
        seed_topic(client, "orders")
        state = desired({EntityRef("brokers", "1"): {"log.cleaner.threads": "2"}},
                        topics={"orders": (None, {"retention.ms": "1"})})
        apply(client, make_plan(client, state), options=ApplyOptions(secure_acls=True))
        creator = [ACL(31, Id("digest", make_digest_acl_credential("kafka", "secret")))]
        world_read = creator + list(READ_ACL_UNSAFE)
        assert client.get_acls("/config/brokers/1")[0] == creator
        assert client.get_acls("/config/brokers")[0] == creator
        assert client.get_acls("/config/topics/orders")[0] == world_read
        assert client.get_acls("/config/changes")[0] == world_read
        for child in client.get_children("/config/changes"):
            assert client.get_acls(f"/config/changes/{child}")[0] == world_read
        assert client.get_acls("/reconciler/audit")[0] == world_read
    finally:
        close(client)


def test_committed_batch_with_lost_reply_is_not_resent(
    zk_client: KazooClient, zk_server: ZkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The multi commits, then the server dies before we learn it: after reconnecting we read it back."""
    seed_topics(zk_client, TOPICS[:5])
    plan = make_plan(zk_client, retention_state(TOPICS[:5]))
    real_submit, calls = txn.submit, []

    def commit_then_crash(client: KazooClient, ops: Sequence[Op]) -> Any:
        calls.append(1)
        real_submit(client, ops).get(10)
        zk_server.kill()
        zk_server.restart()
        raise ConnectionLoss()

    monkeypatch.setattr(txn, "submit", commit_then_crash)
    result = apply(zk_client, plan)
    assert calls == [1] and result.entities_written == 5
    assert len(notifications(zk_client)) == 5  # not doubled
    for name in TOPICS[:5]:
        data, stat = zk_client.get(f"/config/topics/{name}")
        assert (data, stat.version) == (config_bytes({"retention.ms": "2000"}), 1)


def test_batch_lost_before_commit_is_resent_once(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_topics(zk_client, TOPICS[:3])
    plan = make_plan(zk_client, retention_state(TOPICS[:3]))
    real_submit, calls = txn.submit, []

    def lose_first(client: KazooClient, ops: Sequence[Op]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionLoss()
        return real_submit(client, ops)

    monkeypatch.setattr(txn, "submit", lose_first)
    assert apply(zk_client, plan).entities_written == 3
    assert len(calls) == 2 and len(notifications(zk_client)) == 3


def test_connection_keeps_dropping_gives_a_clear_error(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_topics(zk_client, TOPICS[:2])
    plan = make_plan(zk_client, retention_state(TOPICS[:2]))

    def always_lost(client: KazooClient, ops: Sequence[Op]) -> Any:
        raise ConnectionLoss()

    monkeypatch.setattr(txn, "submit", always_lost)
    with pytest.raises(ZooKeeperError, match=r"dropped 3 times .* nothing of it was written"):
        apply(zk_client, plan)
    assert notifications(zk_client) == {}
    assert AUDIT.plan_id  # the failure is audited with the plan id
    record = last_audit(zk_client)
    assert record["result"] == "failed: ZooKeeperError" and record["planId"] == AUDIT.plan_id


def test_bulk_reads_match_pipelined_reads(zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_topics(zk_client, TOPICS[:30])
    paths = [f"/config/topics/{t}" for t in TOPICS[:30]] + [f"/config/topics/missing-{i}" for i in range(5)]
    monkeypatch.setattr(bulkread, "CHUNK", 7)  # several multiReads in flight
    multi = bulkread.read_all(zk_client, paths, 10)
    pipelined = bulkread._pipelined(zk_client, paths, 10, False)
    assert multi == pipelined and sum(v is None for v in multi.values()) == 5


def test_server_without_multiread_falls_back(zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """ZooKeeper < 3.6 answers an unknown opcode with UNIMPLEMENTED (and drops the connection)."""
    seed_topics(zk_client, TOPICS[:20])
    plan = make_plan(zk_client, retention_state(TOPICS[:20]))
    monkeypatch.setattr(bulkread._MultiRead, "type", 99)  # an opcode this server does not know either
    assert apply(zk_client, plan).entities_written == 20
    assert zk_client in bulkread._NO_MULTI_READ
    assert make_plan(zk_client, retention_state(TOPICS[:20])).is_empty


# --- several batches in flight (zk/pipeline.py) -------------------------------------------------------------


def test_a_stale_batch_fails_every_batch_sent_after_it(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch 3 goes stale while batches 4-6 are on their way behind it: each of them sets the lock node at the
    version batch 3 would have left, so none commits; batches 1-2 are committed and complete."""
    seed_topics(zk_client, TOPICS[:40])
    plan = make_plan(zk_client, retention_state(TOPICS[:40]))
    real_submit, sent = txn.submit, []

    def stale_third(client: KazooClient, ops: Sequence[Op]) -> Any:
        sent.append([op.path for op in ops if op.kind == "set"][1:])
        if len(sent) == 3:  # someone else writes an entity of batch 3 after the plan's pre-read
            zk_client.set(sent[-1][0], config_bytes({"retention.ms": "7"}))
        return real_submit(client, ops)

    monkeypatch.setattr(txn, "submit", stale_third)
    with pytest.raises(ConflictError) as err:
        apply(zk_client, plan, options=ApplyOptions(max_batch_bytes=1024))
    assert len(sent) == 6  # batches 4-6 were sent before batch 3's reply was read
    assert "nothing of batch 3/" in err.value.message and "(batches 1-2 are committed and correct)" in err.value.message
    written = {p for batch in sent[:2] for p in batch}
    for name in TOPICS[:40]:
        path = f"/config/topics/{name}"
        expected = "2000" if path in written else ("7" if path == sent[2][0] else "1000")
        assert zk_client.get(path)[0] == config_bytes({"retention.ms": expected}), path
    assert len(notifications(zk_client)) == len(written)
    assert last_audit(zk_client)["counts"]["batches"] == 2


def test_replies_lost_with_several_batches_in_flight(
    zk_client: KazooClient, zk_server: ZkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZooKeeper dies right after a batch is queued behind others: after reconnecting, the lock node's version
    says how many committed; the others are sent again, and every entity is written exactly once."""
    seed_topics(zk_client, TOPICS[:60])
    plan = make_plan(zk_client, retention_state(TOPICS[:60]))
    real_submit, calls = txn.submit, []

    def crash_at_fourth(client: KazooClient, ops: Sequence[Op]) -> Any:
        calls.append(ops[0].version)  # the lock's version this batch expects: its number - 1
        reply = real_submit(client, ops)
        if len(calls) == 4:
            zk_server.kill()
            zk_server.restart()
        return reply

    monkeypatch.setattr(txn, "submit", crash_at_fourth)
    result = apply(zk_client, plan, options=ApplyOptions(max_batch_bytes=1024))
    assert result.entities_written == 60 and len(calls) > result.batches  # some were sent again
    assert len(notifications(zk_client)) == 60  # none doubled, none lost
    for name in TOPICS[:60]:
        data, stat = zk_client.get(f"/config/topics/{name}")
        assert (data, stat.version) == (config_bytes({"retention.ms": "2000"}), 1)
    assert sorted(set(calls)) == list(range(result.batches))  # each batch number sent, some twice


def signal_after_sending(batch: int, first: Callable[[], None] = lambda: None) -> Callable[..., Any]:
    """A `txn.submit` that, right after queueing multi number `batch`, runs `first` and then raises
    KeyboardInterrupt, as a second signal would arrive there."""
    real_submit, calls = txn.submit, []

    def submit(client: KazooClient, ops: Sequence[Op]) -> Any:
        calls.append(1)
        reply = real_submit(client, ops)
        if len(calls) == batch:
            first()
            raise KeyboardInterrupt
        return reply

    return submit


def test_a_second_signal_settles_the_batches_in_flight(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A second signal (KeyboardInterrupt) right after batch 5 was queued, four on their way: the lock node's
    version, read once, says that all five committed; nothing is reported as unknown."""
    seed_topics(zk_client, TOPICS[:60])
    plan = make_plan(zk_client, retention_state(TOPICS[:60]))
    monkeypatch.setattr(txn, "submit", signal_after_sending(5))
    with pytest.raises(ApplyInterrupted) as err:
        apply(zk_client, plan, options=ApplyOptions(max_batch_bytes=1024), audit_log=tmp_path / "audit.jsonl")
    assert "stopped between batches 5 and 6 of " in err.value.message and "unknown" not in err.value.message
    record = last_audit(zk_client)
    assert record["result"] == "interrupted" and "unknown" not in record["interrupted"]
    assert record["counts"]["batches"] == 5
    assert record["counts"]["entitiesWritten"] == len(notifications(zk_client)) == sum(
        zk_client.get(f"/config/topics/{n}")[0] == config_bytes({"retention.ms": "2000"}) for n in TOPICS[:60])


def test_a_second_signal_with_zookeeper_gone_reports_the_batches_in_flight_as_unknown(
    zk_client: KazooClient, zk_server: ZkServer, zk_connect: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same, but ZooKeeper is gone when the signal comes: which of the batches on their way committed cannot
    be known, so they are reported (and audited in the local log) as unknown, a range; ZooKeeper holds a prefix
    of them."""
    seed_topics(zk_client, TOPICS[:60])
    plan = make_plan(zk_client, retention_state(TOPICS[:60]))
    monkeypatch.setattr(txn, "submit", signal_after_sending(5, first=zk_server.kill))
    log = tmp_path / "audit.jsonl"
    try:
        with pytest.raises(ApplyInterrupted) as err:
            apply(zk_client, plan, options=ApplyOptions(max_batch_bytes=1024), audit_log=log)
    finally:
        zk_server.restart()
    record = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    unknown, committed = record["interrupted"]["unknown"], record["interrupted"]["committed"]
    assert unknown["batch"] == committed["batches"] + 1 and unknown["batch"] + unknown["batches"] - 1 == 5
    first = unknown["batch"]
    being = f"batch {first} of" if first == 5 else f"batches {first}-5 of"
    assert f"apply ended by a second signal while {being} " in err.value.message, err.value.message
    assert f"  unknown ({being} " in err.value.message
    after = connect(ZooKeeperSpec(zk_connect, session_timeout_s=10.0))  # the apply's client gave up meanwhile
    try:
        written = sum(after.get(f"/config/topics/{n}")[0] == config_bytes({"retention.ms": "2000"})
                      for n in TOPICS[:60])
        assert committed["entitiesWritten"] <= written <= committed["entitiesWritten"] + unknown["entitiesWritten"]
        assert len(notifications(after)) == written  # whole batches: each entity with its notification
    finally:
        close(after)
