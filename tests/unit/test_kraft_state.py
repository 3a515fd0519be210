"""The KRaft backend's pure parts around its state: the request shape and order of an apply
(kraft/operations.py), the write report after a refusal (kraft/write.py, with a scripted admin), the records
of the state (kraft/statedata.py), the apply lease over an in-memory store (kraft/lease.py) and drift dating
(kraft/drift.py). Real Kafka: tests/integration/test_kraft_state.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from reconciler.backend import AuditEntry, AuditInfo, DriftItem
from reconciler.errors import ConflictError
from reconciler.holder import claim
from reconciler.kraft.admin import Refusal
from reconciler.kraft.drift import OUTSIDE, date_drift
from reconciler.kraft.lease import apply_lock
from reconciler.kraft.operations import operations
from reconciler.kraft.statedata import Record, State, fold, lock_record, value_digest, written_records
from reconciler.kraft.write import plaintext_password_problem, write
from reconciler.model import (
    NO_ZOOKEEPER,
    AclEntry,
    AclResource,
    AdminClientSpec,
    ClusterSpec,
    EntityRef,
    KraftSpec,
    LiveEntity,
    LiveState,
    Secret,
    SecretRef,
    frozen_map,
)
from reconciler.plan import AclPlan, Change, EntityPlan, Plan, TopicCreate

SECRET = SecretRef(env="PW")


def scram(mechanism: str, op: str = "+") -> Change:
    return Change(mechanism, op, sensitive=True, redacted="changed" if op != "-" else "unchanged",
                  secret=None if op == "-" else SECRET, iterations=None if op == "-" else 4096)


SCRAM_PLAN = Plan("k1", entities=(
    EntityPlan(EntityRef("users", "alice"), 0, (scram("SCRAM-SHA-256"), scram("SCRAM-SHA-512"))),
    EntityPlan(EntityRef("users", "bob"), 0, (scram("SCRAM-SHA-256", "-"), scram("SCRAM-SHA-512", "~"),
                                                Change("producer_byte_rate", "+", after="1024"))),
    EntityPlan(EntityRef("users", "carol"), 0, (scram("SCRAM-SHA-512", "-"),)),
    EntityPlan(EntityRef("topics", "orders"), 0, (Change("retention.ms", "~", before="1", after="2"),)),
), acls=(AclPlan(AclResource("Topic", "LITERAL", "orders"), None, add=(AclEntry("User:alice", "*", "Read", "Allow"),),
                 remove=(), after=(AclEntry("User:alice", "*", "Read", "Allow"),)),))


def test_one_scram_alteration_per_user_per_request_upserts_first() -> None:
    """KRaft refuses two alterations of one user in one AlterUserScramCredentials request ("A user credential
    cannot be altered twice in the same request"): the README's two-mechanism user needs two requests."""
    ops = operations(SCRAM_PLAN, lambda change, ref: Secret("pw"))
    rounds = ops.of("AlterUserScramCredentials")
    assert [[u.label for u in s.units] for s in rounds] == [
        ["users/alice SCRAM-SHA-256 (set)", "users/bob SCRAM-SHA-512 (set)", "users/carol SCRAM-SHA-512 (removed)"],
        ["users/alice SCRAM-SHA-512 (set)", "users/bob SCRAM-SHA-256 (removed)"],
    ]
    for step in rounds:
        users = [a.user for a in step.payloads]
        assert len(users) == len(set(users))
    # what Kafka cannot validate up front first: credentials, then ACLs; then what validateOnly accepted
    assert [s.request for s in ops.steps] == ["AlterUserScramCredentials", "AlterUserScramCredentials",
                                              "CreateAcls", "IncrementalAlterConfigs", "AlterClientQuotas"]
    assert "pw" not in json.dumps(ops.passwords) and set(ops.passwords) == {
        "users/alice|SCRAM-SHA-256", "users/alice|SCRAM-SHA-512", "users/bob|SCRAM-SHA-512"}


def kraft_cluster(protocol: str = "PLAINTEXT", allow: bool = False) -> ClusterSpec:
    admin = AdminClientSpec(("b1:9092",), security_protocol=protocol)
    return ClusterSpec("k1", "4.1", NO_ZOOKEEPER, (1,), kraft=KraftSpec(admin, allow), admin=admin)


def test_scram_credentials_over_plaintext_are_refused_like_passwords() -> None:
    """Issue 38 finding 11: AlterUserScramCredentials carries salt and salted password, enough to log in."""
    plan = Plan("k1", entities=(EntityPlan(EntityRef("users", "alice"), 0, (scram("SCRAM-SHA-512"),)),))
    problem = plaintext_password_problem(plan, kraft_cluster())
    assert problem is not None and "users/alice SCRAM-SHA-512" in problem
    assert plaintext_password_problem(plan, kraft_cluster("SASL_SSL")) is None
    assert plaintext_password_problem(plan, kraft_cluster(allow=True)) is None
    removal = Plan("k1", entities=(EntityPlan(EntityRef("users", "alice"), 0, (scram("SCRAM-SHA-512", "-"),)),))
    assert plaintext_password_problem(removal, kraft_cluster()) is None  # a deletion carries no credential


class ScriptedAdmin:
    """Answers each request kind with the refusals scripted for it; records what was sent."""

    def __init__(self, refuse: dict[str, Callable[[Sequence[Any]], list[Refusal]]]) -> None:
        self.refuse, self.sent = refuse, []

    def _answer(self, kind: str, payloads: Sequence[Any]) -> list[Refusal]:
        self.sent.append(kind)
        return self.refuse.get(kind, lambda _: [])(payloads)

    def alter_scram(self, alterations: Sequence[Any]) -> list[Refusal]:
        return self._answer("AlterUserScramCredentials", alterations)

    def create_acls(self, acls: Sequence[Any]) -> list[Refusal]:
        return self._answer("CreateAcls", acls)

    def alter_many(self, resources: Sequence[Any], validate_only: bool, node: int | None = None
                   ) -> list[tuple[int, Refusal]]:
        types = {name: rtype for rtype, name, _ in resources}
        return [(types[r.what], r) for r in self._answer("IncrementalAlterConfigs", [n for _, n, _ in resources])]

    def alter_client_quotas(self, entries: Any, validate_only: bool) -> list[Refusal]:
        return self._answer("AlterClientQuotas", entries)


def test_a_refusal_mid_writes_is_reported_exactly_and_nothing_after_it_is_sent() -> None:
    ops = operations(SCRAM_PLAN, lambda change, ref: Secret("pw"))
    admin = ScriptedAdmin({"CreateAcls": lambda acls: [Refusal("Topic:orders", "InvalidRequestError",
                                                               "no such principal type", 0)]})
    report = write(admin, ops)  # type: ignore[arg-type]
    assert admin.sent == ["AlterUserScramCredentials", "AlterUserScramCredentials", "CreateAcls"]
    assert [u.label for u in report.written] == [
        "users/alice SCRAM-SHA-256 (set)", "users/bob SCRAM-SHA-512 (set)", "users/carol SCRAM-SHA-512 (removed)",
        "users/alice SCRAM-SHA-512 (set)", "users/bob SCRAM-SHA-256 (removed)"]
    assert [(u.label, m) for u, m in report.refused] == [
        ("ACL Topic:LITERAL:orders: Allow User:alice Read from * (added)",
         "InvalidRequestError: no such principal type")]
    assert [u.label for u in report.not_sent] == ["topics/orders config (1 key(s))",
                                                  "quotas of users/bob (1 key(s))"]
    text = "\n".join(report.lines())
    assert "written (5)" in text and "not written (2)" in text and "pw" not in text.replace("SHA", "")


def test_one_users_refusal_leaves_the_others_of_the_same_request_written() -> None:
    ops = operations(SCRAM_PLAN, lambda change, ref: Secret("pw"))
    admin = ScriptedAdmin({"AlterUserScramCredentials": lambda alts: [
        Refusal("bob", "refused", "Iterations 1 is less than the minimum", [a.user for a in alts].index("bob"))]})
    report = write(admin, ops)  # type: ignore[arg-type]
    assert admin.sent == ["AlterUserScramCredentials"]
    assert [u.label for u in report.written] == ["users/alice SCRAM-SHA-256 (set)",
                                                 "users/carol SCRAM-SHA-512 (removed)"]
    assert [u.label for u, _ in report.refused] == ["users/bob SCRAM-SHA-512 (set)"]
    assert len(report.not_sent) == 5


AUDIT = AuditInfo("plan-1", "k1", "rev1", "alice@ci", "2025-01-01T00:00:00Z")


def test_the_state_is_the_newest_record_of_each_key_and_holds_no_value() -> None:
    ops = operations(SCRAM_PLAN, lambda change, ref: Secret("hunter2"))
    writes = [w for u in ops.units for w in u.writes]
    records = written_records(writes, AUDIT)
    assert "hunter2" not in json.dumps([r.value for r in records])
    stamped = [Record(r.key, r.value, 1000 + i, f"t@{i}") for i, r in enumerate(records)]
    later = written_records([w for w in writes if w.key == "retention.ms"], AuditInfo("plan-2", "k1", None, "bob",
                                                                                       "t"))
    state = fold([*stamped, *(Record(r.key, r.value, 5000, "t@99") for r in later),
                  Record(json.dumps(["audit", "t", "plan-1", "x"]), {"result": "applied"}, 1500, "t@50")])
    retention = state.written[("topics/orders", "retention.ms")]
    assert (retention.plan_id, retention.time_ms) == ("plan-2", 5000)
    assert retention.holds("2") and not retention.holds("3") and not retention.holds(None)
    assert state.written[("users/bob", "SCRAM-SHA-256")].op == "delete"
    passwords = state.applied_passwords()
    assert passwords["users/bob|SCRAM-SHA-256"] == {} and set(passwords["users/alice|SCRAM-SHA-512"]) == {"ref",
                                                                                                          "stored"}
    assert [e.path for e in state.entries] == ["t@50"]


class MemoryStore:
    """An in-memory compacted log with compare-and-set (the lease's logic only)."""

    where = "memory"

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.mutex = threading.Lock()

    def read(self) -> State:
        with self.mutex:
            return fold(list(self.records))

    def transact(self, decide: Callable[[State], Sequence[Record]]) -> State:
        with self.mutex:
            state = fold(list(self.records))
            self.records += decide(state)
            return state


def _claim(user: str) -> dict[str, Any]:
    return json.loads(claim(user, f"plan-of-{user}", "2025-01-01T00:00:00Z"))


def test_the_loser_names_the_holder_and_a_released_lock_is_taken() -> None:
    store = MemoryStore()
    with apply_lock(store, _claim("alice@ci"), 0, "k1") as first:
        assert not first.taken_over
        with (pytest.raises(ConflictError, match=r"another apply holds the lock \(memory\): alice@ci \(host .*, "
                                                 r"pid \d+, plan plan-of-alice@ci"),
              apply_lock(store, _claim("bob@ci"), 0, "k1")):
            pass
    with apply_lock(store, _claim("bob@ci"), 0, "k1") as second:
        assert not second.taken_over


def test_a_killed_holder_on_this_machine_is_taken_over_at_once_and_recorded() -> None:
    dead = subprocess.run([sys.executable, "-c", "import json,sys; from reconciler.holder import claim; "
                           "sys.stdout.write(claim('ghost@ci', 'plan-g', 'then').decode())"],
                          capture_output=True, text=True, check=True)
    store = MemoryStore()
    store.records.append(lock_record("tok-ghost", json.loads(dead.stdout), 3, 60_000))
    told: list[str] = []
    with apply_lock(store, _claim("bob@ci"), 0, "k1", told.append) as lease:
        assert lease.taken_over[0]["user"] == "ghost@ci" and "no longer exists" in lease.taken_over[0]["reason"]
    assert "took over the apply lock of ghost@ci" in told[0]


def test_an_unrenewed_lease_of_another_machine_is_taken_after_a_whole_lease() -> None:
    store = MemoryStore()
    remote = {**_claim("carol@elsewhere"), "process": {"bootId": "another", "pidNamespace": "x",
                                                       "startTicks": 1}}
    store.records.append(lock_record("tok-remote", remote, 7, 300))  # a 0.3 s lease, never renewed
    started = time.monotonic()
    with apply_lock(store, _claim("bob@ci"), 5, "k1") as lease:
        assert "not renewed" in lease.taken_over[0]["reason"]
    assert time.monotonic() - started >= 0.3


def test_a_held_lease_is_renewed_and_a_taken_one_is_lost() -> None:
    store = MemoryStore()
    with apply_lock(store, _claim("alice@ci"), 0, "k1", lease_s=0.2) as lease:
        time.sleep(0.35)
        assert store.read().lock is not None and store.read().lock.beat >= 1  # type: ignore[union-attr]
        store.transact(lambda _s: [lock_record("intruder", _claim("mallory@x"), 0, 200)])
        deadline = time.monotonic() + 3
        while not lease.lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lease.lost.is_set() and lease.lost_to.startswith("mallory@x")


def test_drift_is_dated_by_the_apply_that_wrote_the_live_value_else_outside() -> None:
    ref = EntityRef("topics", "orders")
    state = fold([Record(json.dumps(["written", "topics/orders", "retention.ms"]),
                         {"op": "set", "digest": value_digest("5"), "planId": "plan-late", "user": "bob"}, 9000, ""),
                  Record(json.dumps(["written", "topics/orders", "cleanup.policy"]),
                         {"op": "set", "digest": value_digest("delete"), "planId": "plan-1", "user": "a"}, 1000, "")])
    since = AuditEntry("t@1", {"planId": "plan-1", "result": "applied"}, 2000)
    later = [AuditEntry("t@2", {"planId": "plan-late", "result": "failed: refused", "user": "bob"}, 9000)]
    live = LiveState("k1", frozen_map({}), frozen_map({}), frozen_map({ref: LiveEntity(ref, frozen_map(
        {"retention.ms": "5", "cleanup.policy": "compact"}), 0)}))
    items = [(ref, DriftItem("topics/orders", "retention.ms", "1", "5")),
             (ref, DriftItem("topics/orders", "cleanup.policy", "delete", "compact"))]
    dated = date_drift(state, items, since, later, live, True)
    assert dated[0].by.startswith("the reconciler: failed: refused apply plan-late by bob at ")
    assert dated[0].modified is not None
    assert dated[1].by.startswith(OUTSIDE) and dated[1].modified is None


def test_topic_creation_and_deletion_come_first_and_last() -> None:
    plan = Plan("k1", topics_to_create=(TopicCreate("new", 1, 1, frozen_map({}), frozen_map({0: (1,)})),),
                entities=(EntityPlan(EntityRef("topics", "new"), 0, (Change("retention.ms", "+", after="5"),)),))
    ops = operations(plan, None)
    assert [s.request for s in ops.steps] == ["CreateTopics", "IncrementalAlterConfigs"]


def _topic_changes(count: int) -> tuple[EntityPlan, ...]:
    return tuple(EntityPlan(EntityRef("topics", f"t{i:05d}"), 0, (Change("retention.ms", "~", before="1", after="2"),))
                 for i in range(count))


def test_config_resources_share_requests_as_kafkas_admin_client_sends_them() -> None:
    """Issue 44: 10,000 topic changes were 10,000 IncrementalAlterConfigs round trips. Every resource that is not
    one broker's goes in shared requests of CONFIG_BATCH (topics and the cluster default together), a broker's own
    resource in a request to that broker (`KafkaAdminClient.incrementalAlterConfigs`); each resource is one unit."""
    from reconciler.kraft.operations import CONFIG_BATCH

    plan = Plan("k1", entities=(
        EntityPlan(EntityRef("brokers", "1"), 0, (Change("log.cleaner.threads", "~", before="1", after="2"),)),
        EntityPlan(EntityRef("brokers", "<default>"), 0, (Change("num.io.threads", "~", before="8", after="9"),)),
        *_topic_changes(2 * CONFIG_BATCH + 500)))
    steps = operations(plan, None).of("IncrementalAlterConfigs")
    assert [len(s.payloads) for s in steps] == [1, CONFIG_BATCH, CONFIG_BATCH, 501]
    assert steps[0].payloads == [(4, "1", [("log.cleaner.threads", 0, "2")])]
    assert steps[1].payloads[0] == (4, "", [("num.io.threads", 0, "9")])  # the cluster default: any broker
    assert [len(s.units) for s in steps] == [len(s.payloads) for s in steps]
    assert steps[3].units[-1].label == f"topics/t{2 * CONFIG_BATCH + 499:05d} config (1 key(s))"


def test_a_refused_resource_of_a_shared_request_leaves_the_others_written_and_stops_there() -> None:
    """Kafka decides each resource of an IncrementalAlterConfigs on its own: a refused topic is reported by name,
    the other topics of its request are written, the later requests are not sent."""
    from reconciler.kraft.operations import CONFIG_BATCH

    plan = Plan("k1", entities=_topic_changes(CONFIG_BATCH + 10))
    refused_name = "t00007"
    admin = ScriptedAdmin({"IncrementalAlterConfigs": lambda names: [
        Refusal(n, "InvalidConfigurationError", "retention.ms: not a number") for n in names if n == refused_name]})
    report = write(admin, operations(plan, None))  # type: ignore[arg-type]
    assert admin.sent == ["IncrementalAlterConfigs"]  # the first request only
    assert [(u.label, m) for u, m in report.refused] == [
        (f"topics/{refused_name} config (1 key(s))", "InvalidConfigurationError: retention.ms: not a number")]
    assert len(report.written) == CONFIG_BATCH - 1 and len(report.not_sent) == 10
    assert report.requests == 1
