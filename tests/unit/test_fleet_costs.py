"""Issue 18, part 3: the shortcuts that cut the per-cluster cost of a fleet pass give what the long way gives."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import TransactionRequest
from kazoo.security import make_digest_acl

from reconciler.assignment import _rack_aware, _rack_unaware, assign_replicas, rack_alternated, seeded_index
from reconciler.model import EntityRef
from reconciler.plan import Change, EntityPlan, PartitionIncrease, Plan, TopicDelete
from reconciler.zk import session, txn
from reconciler.zk.layout import OPEN_ACL_UNSAFE, encode_notification, entity_path, notification_for
from reconciler.zk.session import kazoo_acls
from reconciler.zk.txn import Group, Op

NAMES = ["orders", "a.b-c_d", "ü/ß", 'q"uote\\back', "\u2028line", "x" * 300, "<default>", "emoji-\U0001f600"]


@pytest.mark.parametrize("name", NAMES)
def test_a_notification_is_the_json_object_kafka_writes(name: str) -> None:
    for ref in (EntityRef("topics", name), EntityRef("users", name), EntityRef("users", "alice", name)):
        assert encode_notification(ref) == json.dumps(
            {"version": 2, "entity_path": ref.path}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        assert notification_for(entity_path(ref)) == encode_notification(ref)  # apply's, from the znode's path


def _placement(brokers: dict[int, str | None], partitions: int, rf: int, seed: str) -> dict[int, tuple[int, ...]]:
    """`assign_replicas` as it was before the memo: computed from scratch."""
    n = len(brokers)
    start, shift = seeded_index(seed, "start", n), seeded_index(seed, "shift", n)
    racks = {b: r for b, r in brokers.items() if r is not None}
    if racks:
        return _rack_aware(racks, rack_alternated(racks), partitions, rf, start, shift, 0)
    return _rack_unaware(sorted(brokers), partitions, rf, start, shift, 0)


def test_memoised_placements_equal_fresh_ones_and_are_not_shared() -> None:
    rng = random.Random(18)
    for i in range(400):
        n = rng.randint(1, 9)
        ids = rng.sample(range(1, 40), n)
        racked = rng.random() < 0.5
        brokers = {b: (f"r{rng.randint(1, 3)}" if racked else None) for b in ids}
        partitions, rf = rng.randint(1, 30), rng.randint(1, n)
        seed = f"topic-{i % 37}"
        got = assign_replicas(brokers, partitions, rf, seed=seed)
        assert got == _placement(brokers, partitions, rf, seed)
        got[0] = (-1,)  # the caller's dict is its own
        assert assign_replicas(brokers, partitions, rf, seed=seed)[0] != (-1,)


def _naive_missing_parents(groups: list[Group]) -> list[str]:
    created = {op.path for g in groups for op in g.ops if op.kind == "create" and not op.sequential}
    needed = {a for g in groups for op in g.ops if op.kind == "create" for a in txn.ancestors(op.path)}
    return sorted(needed - created)


def test_missing_parents_are_every_ancestor_not_created() -> None:
    rng = random.Random(7)
    for _ in range(200):
        groups = []
        for _ in range(rng.randint(1, 6)):
            ops = []
            for _ in range(rng.randint(1, 4)):
                depth = rng.randint(1, 5)
                path = "/" + "/".join(rng.choice("abc") for _ in range(depth))
                kind = rng.choice(["create", "create", "set", "delete"])
                ops.append(Op(kind, path, b"", sequential=kind == "create" and rng.random() < 0.3))
            groups.append(Group("g", ops))
        assert txn.missing_parents(groups) == _naive_missing_parents(groups)


class _Chroot:
    def __init__(self, chroot: str) -> None:
        self.chroot = chroot


@pytest.mark.parametrize("chroot", ["", "/kafka/ü"])
def test_a_batch_size_is_the_length_of_the_request_kazoo_would_send(chroot: str) -> None:
    digest = [make_digest_acl("kafka", "secret", all=True)]
    ops = [
        Op("create", "/config/topics/orders", b'{"version":1}', acl=digest),
        Op("create", "/config/topics/ünïcode", b"{}", acl=kazoo_acls(OPEN_ACL_UNSAFE)),
        Op("create", "/config/changes/config_change_", b"{}", acl=digest, sequential=True),
        Op("set", "/config/clients/app-1", b"{}", version=4),
        Op("delete", "/config/users/alice", version=2),
        Op("check", "/controller", version=7),
    ]
    client = type("Client", (), {"chroot": chroot, "default_acl": None, "logger": logging.getLogger(__name__)})()
    tx = TransactionRequest(client)  # it puts the chroot before each path, as the server receives it
    for op in ops:
        path = op.path
        if op.kind == "create":
            tx.create(path, op.data, acl=list(op.acl), sequence=op.sequential)
        elif op.kind == "set":
            tx.set_data(path, op.data, version=op.version)
        elif op.kind == "delete":
            tx.delete(path, version=op.version)
        else:
            tx.check(path, op.version)
    from kazoo.protocol.serialization import Transaction

    serialized = Transaction(tx.operations).serialize()
    assert txn.size(ops, _Chroot(chroot)) + txn.MULTI_END == len(serialized)  # type: ignore[arg-type]


def test_max_risk_of_an_entity() -> None:
    def entity(*risks: Any) -> EntityPlan:
        changes = tuple(Change(f"k{i}", "~", "a", "b", risk=r) for i, r in enumerate(risks))
        return EntityPlan(EntityRef("topics", "t"), 1, changes)

    assert entity().max_risk == "safe"
    assert entity("disruptive", "disruptive").max_risk == "disruptive"
    assert entity("safe", "destructive", "disruptive").max_risk == "destructive"
    for risks in (("bogus",), ("bogus", "bogus"), ("safe", "bogus")):
        with pytest.raises(KeyError):
            _ = entity(*risks).max_risk


def test_max_risk_of_a_plan() -> None:
    def entity(name: str, *risks: Any) -> EntityPlan:
        changes = tuple(Change(f"k{i}", "~", "a", "b", risk=r) for i, r in enumerate(risks))
        return EntityPlan(EntityRef("topics", name), 1, changes)

    assert Plan("c").max_risk == "safe" and Plan("c", (entity("a"),)).max_risk == "safe"
    assert Plan("c", (entity("a", "safe"), entity("b", "disruptive", "safe"))).max_risk == "disruptive"
    assert Plan("c", (entity("a", "safe"),), partition_increases=(
        PartitionIncrease("t", 1, 2, 0, {1: (1,)}),)).max_risk == "disruptive"
    assert Plan("c", (entity("a", "disruptive"), entity("b", "destructive"))).max_risk == "destructive"
    assert Plan("c", topics_to_delete=(TopicDelete("t", 1, 1, 0, "t"),)).max_risk == "destructive"
    with pytest.raises(KeyError):
        _ = Plan("c", (entity("a", "bogus"),)).max_risk


def test_clients_of_a_process_share_one_handler_that_a_client_stop_leaves_running() -> None:
    handler = session.shared_handler()
    assert session.shared_handler() is handler
    handler.start()
    handler.stop()  # what KazooClient.stop does: the next client still has its worker threads
    assert handler.running
    done = handler.event_object()
    handler.dispatch_callback(type("Callback", (), {"func": done.set, "args": ()})())
    assert done.wait(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a forked worker has none of its parent's threads: it gets its own handler
        child = session.shared_handler()
        os.write(write, b"1" if child is not handler and not child.running else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"


def _written(plan: Any) -> tuple[Any, ...]:
    """What a plan writes, without what rates or reports it (risk, reasons, warnings, id)."""
    return (
        [(e.ref, e.delete_entity, tuple((c.key, c.op, c.before, c.after, c.sensitive, c.secret) for c in e.changes))
         for e in plan.entities],
        [(t.name, t.partitions, t.replication_factor, dict(t.config)) for t in plan.topics_to_create],
        [(a.resource, a.add, a.remove) for a in plan.acls],
        plan.partition_increases, plan.topics_to_delete, plan.unmanaged, plan.unmanaged_acls,
    )


def test_the_owner_checks_empty_cluster_plan_writes_what_the_full_one_writes(tmp_path: Path) -> None:
    """A first apply's owner check compares the plan with the same manifests planned against an empty cluster
    (`ownership.beyond_empty`); it builds that plan without risk, policies and warnings
    (`workflow.empty_cluster_changes`), which must write exactly what the full plan (`plan_against`) writes."""
    from reconciler.manifests.validate import load_and_validate
    from reconciler.ownership import beyond_empty
    from reconciler.workflow import empty_cluster_changes, empty_live_state, plan_against

    repo = tmp_path / "repo"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "fleet", repo)
    (repo / "clusters/prod-eu-1/acls.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec:\n"
        "  consumers:\n    - {principals: [User:alice], topicPrefix: app-, group: app-readers}\n"
        "  resources:\n    - {type: Topic, name: orders, entries: [{principal: User:eve, operation: Read}]}\n",
        encoding="utf-8")
    _, states, _ = load_and_validate(repo)
    assert len(states) == 3 and states["prod-eu-1"].acls
    for name, desired in sorted(states.items()):
        full = plan_against(desired, empty_live_state(desired.cluster), repo, "r1").plan
        lean = empty_cluster_changes(desired, repo, "r1")
        assert full.entities and full.topics_to_create, name
        assert _written(lean) == _written(full), name
        assert beyond_empty(full, lean) == beyond_empty(full, full) == []
        fewer = dataclasses.replace(full, topics_to_create=full.topics_to_create[1:], entities=full.entities[1:])
        assert beyond_empty(full, fewer) == beyond_empty(full, dataclasses.replace(
            lean, topics_to_create=lean.topics_to_create[1:], entities=lean.entities[1:])) != []
