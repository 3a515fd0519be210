"""diff.build_plan: ownership, canonical comparison, secrets, quota deletion, topics, determinism."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.diff import build_plan
from reconciler.model import (
    DEFAULT_ENTITY,
    BrokerRegistration,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    Policy,
    SecretRef,
    SecretState,
    SourceRef,
    ZooKeeperSpec,
)
from reconciler.plan import Change, EntityPlan, Plan, plan_from_json, plan_to_json

SRC = SourceRef("clusters/c1/brokers.yaml", 3)
ENT_SRC = SourceRef("clusters/c1/brokers.yaml", 1)
CLUSTER_SRC = SourceRef("clusters/c1/cluster.yaml", 1)

DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
B1 = EntityRef("brokers", "1")
CLIENT_A = EntityRef("clients", "a")
USER_U = EntityRef("users", "u")
USER_U_C = EntityRef("users", "u", "c")
IP_DEFAULT = EntityRef("ips", DEFAULT_ENTITY)


def cluster(
    *, prune: bool = False, ignore: tuple[str, ...] = (), brokers: tuple[int, ...] = (1, 2, 3)
) -> ClusterSpec:
    return ClusterSpec(
        name="c1",
        kafka_version="3.6",
        zookeeper=ZooKeeperSpec("zk:2181/kafka"),
        brokers=brokers,
        policy=Policy(prune=prune, ignore_keys=ignore),
        source=CLUSTER_SRC,
    )


def dv(value: str | SecretRef, line: int = 3) -> DesiredValue:
    return DesiredValue(value, SourceRef("clusters/c1/brokers.yaml", line))


def desired(
    entities: Mapping[EntityRef, Mapping[str, str | SecretRef]] | None = None,
    topics: Mapping[str, tuple[int | None, int | None, Mapping[str, str]]] | None = None,
    **cluster_kw: Any,
) -> DesiredState:
    return DesiredState(
        cluster=cluster(**cluster_kw),
        entities={
            r: DesiredEntity(r, {k: dv(v) for k, v in c.items()}, ENT_SRC)
            for r, c in (entities or {}).items()
        },
        topics={
            n: DesiredTopic(
                n, p, rf, {k: dv(v) for k, v in c.items()}, SourceRef("clusters/c1/topics.yaml", 5)
            )
            for n, (p, rf, c) in (topics or {}).items()
        },
    )


def live(
    entities: Mapping[EntityRef, Mapping[str, str]] | None = None,
    topics: Mapping[str, Mapping[int, tuple[int, ...]]] | None = None,
    brokers: Mapping[int, str | None] | None = None,
    children: tuple[str, ...] = (),
) -> LiveState:
    regs = {
        b: BrokerRegistration(b, (f"PLAINTEXT://b{b}:9092",), {"PLAINTEXT": "PLAINTEXT"}, rack)
        for b, rack in (brokers if brokers is not None else dict.fromkeys((1, 2, 3))).items()
    }
    return LiveState(
        cluster="c1",
        brokers=regs,
        topics={n: LiveTopic(n, a, version=4) for n, a in (topics or {}).items()},
        entities={
            r: LiveEntity(r, dict(c), 7, has_children=r.name in children and r.client is None)
            for r, c in (entities or {}).items()
        },
    )


def only(plan: Plan) -> EntityPlan:
    assert len(plan.entities) == 1, plan.entities
    return plan.entities[0]


def ops(plan: Plan) -> list[tuple[str, str, str, str | None, str | None]]:
    return [(e.ref.display, c.op, c.key, c.before, c.after) for e in plan.entities for c in e.changes]


# --- ownership ------------------------------------------------------------------------------------------

OWNERSHIP_CASES: list[tuple[str, DesiredState, LiveState, list[Any], int, tuple[str, ...]]] = [
    (
        "undeclared live key is removed, declared key set and changed",
        desired({DEFAULT: {"log.retention.ms": "100", "num.io.threads": "16"}}),
        live({DEFAULT: {"log.retention.ms": "200", "background.threads": "12"}}),
        [
            ("brokers/<default>", "-", "background.threads", "12", None),
            ("brokers/<default>", "~", "log.retention.ms", "200", "100"),
            ("brokers/<default>", "+", "num.io.threads", None, "16"),
        ],
        0,
        (),
    ),
    (
        "policy.ignoreKeys are never touched and counted",
        desired({DEFAULT: {}}, ignore=("custom.metrics",)),
        live({DEFAULT: {"custom.metrics": "x"}}),
        [],
        1,
        (),
    ),
    (
        "replication throttles are ignored unless declared",
        desired({B1: {}}, topics={"t": (None, None, {})}),
        live(
            {
                B1: {
                    "leader.replication.throttled.rate": "1000",
                    "follower.replication.throttled.rate": "1000",
                },
                EntityRef("topics", "t"): {"leader.replication.throttled.replicas": "0:1"},
            },
            topics={"t": {0: (1, 2)}},
        ),
        [],
        3,
        (),
    ),
    (
        "declared throttle key is managed",
        desired({B1: {"leader.replication.throttled.rate": "2000"}}),
        live({B1: {"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "5"}}),
        [("brokers/1", "~", "leader.replication.throttled.rate", "1000", "2000")],
        1,
        (),
    ),
    (
        "SCRAM credentials of a user survive its quota manifest",
        desired({USER_U: {"producer_byte_rate": "1024"}}),
        live({USER_U: {"SCRAM-SHA-512": "salt=x,stored_key=y,server_key=z,iterations=4096"}}),
        [("users/u", "+", "producer_byte_rate", None, "1024")],
        0,  # left alone, but not an `Ignored:` live key (policy.ignoreKeys, throttles): issue 39 item 11
        (),
    ),
    (
        "undeclared entities are unmanaged and untouched (SCRAM credentials too: named, never removed without "
        "policy.pruneScramUsers); empty ones and structural parents are not listed",
        desired({DEFAULT: {}}),
        live(
            {
                CLIENT_A: {"producer_byte_rate": "1"},
                B1: {"num.io.threads": "9"},
                EntityRef("clients", "empty"): {},
                USER_U: {"SCRAM-SHA-256": "s"},
                EntityRef("topics", "gone"): {"retention.ms": "1"},
            },
            topics={"legacy": {0: (1,)}},
        ),
        [],
        0,
        ("brokers/1", "clients/a", "topics/gone", "topics/legacy", "users/u"),
    ),
    (
        "prune clears undeclared brokers/clients/users/ips but never topics",
        desired({DEFAULT: {}}, prune=True),
        live(
            {
                CLIENT_A: {"producer_byte_rate": "1"},
                B1: {"num.io.threads": "9", "leader.replication.throttled.rate": "1"},
                EntityRef("topics", "legacy"): {"retention.ms": "1"},
            },
            topics={"legacy": {0: (1,)}},
        ),
        [
            ("brokers/1", "-", "num.io.threads", "9", None),
            ("clients/a", "-", "producer_byte_rate", "1", None),
        ],
        1,
        ("topics/legacy",),
    ),
]


@pytest.mark.parametrize(
    "name,want,have,expected,ignored,unmanaged", OWNERSHIP_CASES, ids=[c[0] for c in OWNERSHIP_CASES]
)
def test_ownership(
    name: str,
    want: DesiredState,
    have: LiveState,
    expected: list[Any],
    ignored: int,
    unmanaged: tuple[str, ...],
) -> None:
    plan, diags = build_plan(want, have)
    assert diags == []
    assert ops(plan) == expected
    assert plan.ignored == ignored
    assert plan.unmanaged == unmanaged


def test_sources_and_base_versions() -> None:
    plan, _ = build_plan(
        desired({DEFAULT: {"log.retention.ms": "100"}, B1: {"num.io.threads": "4"}}),
        live({DEFAULT: {"log.retention.ms": "1", "x.y": "z"}}),
    )
    b1, default = plan.entities  # sorted by name: "1" < "<default>"
    assert (default.ref, default.base_version, b1.ref, b1.base_version) == (DEFAULT, 7, B1, None)
    by_key = {c.key: c for c in default.changes}
    assert by_key["log.retention.ms"].source == SRC
    assert by_key["x.y"].source == ENT_SRC  # a removal points at the entity that owns it
    assert all(c.risk == "safe" for e in plan.entities for c in e.changes)


def test_pruned_removal_points_at_the_cluster() -> None:
    plan, _ = build_plan(desired(prune=True), live({CLIENT_A: {"producer_byte_rate": "1"}}))
    assert only(plan).changes[0].source == CLUSTER_SRC


def test_declared_ignore_key_warns_and_is_not_written() -> None:
    plan, diags = build_plan(desired({DEFAULT: {"custom.x": "1"}}, ignore=("custom.x",)), live())
    assert plan.is_empty
    assert [(d.severity, d.key) for d in diags] == [("warning", "custom.x")]


# --- canonical comparison -------------------------------------------------------------------------------

NO_FALSE_DIFF = [
    (DEFAULT, "log.retention.ms", "604800000", " 604800000"),
    (DEFAULT, "unclean.leader.election.enable", "true", "TRUE"),
    (DEFAULT, "ssl.cipher.suites", "a,b", "a, b"),
    (DEFAULT, "log.cleaner.min.cleanable.ratio", "0.5", "0.50"),
    (EntityRef("topics", "t"), "retention.ms", "604800000", "0604800000"),
    (EntityRef("topics", "t"), "cleanup.policy", "compact,delete", "compact , delete"),
    (USER_U, "request_percentage", "50.0", "50"),
    (CLIENT_A, "producer_byte_rate", "1048576", "+1048576"),
    (IP_DEFAULT, "connection_creation_rate", "50", " 50 "),
    (DEFAULT, "custom.unknown.key", "abc", " abc"),
]


@pytest.mark.parametrize("ref,key,want,have", NO_FALSE_DIFF)
def test_no_false_diff(ref: EntityRef, key: str, want: str, have: str) -> None:
    if ref.entity_type == "topics":
        state = desired(topics={"t": (1, 1, {key: want})})
        current = live({ref: {key: have}}, topics={"t": {0: (1,)}})
    else:
        state, current = desired({ref: {key: want}}), live({ref: {key: have}})
    plan, diags = build_plan(state, current)
    assert diags == [] and plan.is_empty, ops(plan)


@pytest.mark.parametrize(
    "key,want,have",
    [
        ("log.retention.ms", "100", "1000"),
        ("unclean.leader.election.enable", "true", "false"),
        ("ssl.cipher.suites", "a,b", "b,a"),
        ("custom.unknown.key", "abc", "ABC"),
    ],
)
def test_real_differences_are_reported(key: str, want: str, have: str) -> None:
    plan, _ = build_plan(desired({DEFAULT: {key: want}}), live({DEFAULT: {key: have}}))
    assert ops(plan) == [("brokers/<default>", "~", key, have, want)]


# --- sensitive values -----------------------------------------------------------------------------------

PW = "listener.name.external.ssl.keystore.password"
SECRET = SecretRef(env="KS_PW")


@pytest.mark.parametrize(
    "live_value,state,expected",
    [
        (None, None, ("+", "changed", False)),
        ("CIPHERTEXT", None, ("~", "unknown", False)),
        ("CIPHERTEXT", SecretState("unknown"), ("~", "unknown", False)),
        ("CIPHERTEXT", SecretState("changed"), ("~", "changed", False)),
        ("CIPHERTEXT", SecretState("unchanged"), None),
        ("CIPHERTEXT", SecretState("unchanged", reencode=True), ("~", "unchanged", True)),
    ],
)
def test_sensitive_states(
    live_value: str | None, state: SecretState | None, expected: tuple[str, str, bool] | None
) -> None:
    have = live({B1: {PW: live_value}} if live_value is not None else {B1: {}})
    states = {(B1, PW): state} if state is not None else {}
    plan, diags = build_plan(desired({B1: {PW: SECRET}}), have, secret_states=states)
    assert [d for d in diags if d.severity == "error"] == []
    if expected is None:
        assert plan.is_empty
        return
    change = only(plan).changes[0]
    assert (change.op, change.redacted, change.reencode) == expected
    assert change.sensitive and change.before is None and change.after is None and change.secret == SECRET
    assert "CIPHERTEXT" not in plan_to_json(plan)


def test_sensitive_removal_and_plaintext_password() -> None:
    plan, _ = build_plan(desired({B1: {}}), live({B1: {PW: "ciphertext"}}))
    change = only(plan).changes[0]
    assert (change.op, change.sensitive, change.before, change.redacted) == ("-", True, None, "changed")
    assert "ciphertext" not in plan_to_json(plan)
    plan, diags = build_plan(desired({B1: {PW: "plaintext!"}}), live())
    assert plan.is_empty and [d.severity for d in diags] == ["error"]


def test_reencode_is_a_change_warned_once_by_the_adapter_and_no_comparison_is_warned_here() -> None:
    """The secrets adapter warns once per re-encoded key (and once per cluster for secret-less comparisons):
    the diff adds no second warning for them; it warns only when no comparison ran at all."""
    states = {(B1, PW): SecretState("unchanged", reencode=True, rotation=True)}
    plan, _ = build_plan(desired({B1: {PW: SECRET}}), live({B1: {PW: "x"}}), secret_states=states)
    (change,) = plan.entities[0].changes
    assert (change.reencode, change.rotation, change.redacted) == (True, True, "unchanged")
    assert plan.warnings == ()
    plan, _ = build_plan(desired({B1: {PW: SECRET}}), live({B1: {PW: "x"}}),
                         secret_states={(B1, PW): SecretState("unknown")})
    assert plan.warnings == ()
    plan, _ = build_plan(desired({B1: {PW: SECRET}}), live({B1: {PW: "x"}}))
    assert any("cannot tell" in w for w in plan.warnings)


# --- entity lifecycle -----------------------------------------------------------------------------------


def test_quota_entity_emptied_is_deleted_broker_kept() -> None:
    plan, _ = build_plan(
        desired({CLIENT_A: {}, B1: {}}),
        live({CLIENT_A: {"producer_byte_rate": "1"}, B1: {"num.io.threads": "8"}}),
    )
    assert [(e.ref.display, e.delete_entity) for e in plan.entities] == [
        ("brokers/1", False),
        ("clients/a", True),
    ]


def test_user_with_children_is_not_deleted_unless_they_go_too() -> None:
    have = live({USER_U: {"producer_byte_rate": "1"}, USER_U_C: {"producer_byte_rate": "2"}}, children=("u",))
    plan, _ = build_plan(desired({USER_U: {}}), have)
    assert [(e.ref.display, e.delete_entity) for e in plan.entities] == [("users/u", False)]
    plan, _ = build_plan(desired({USER_U: {}, USER_U_C: {}}), have)
    assert [(e.ref.display, e.delete_entity) for e in plan.entities] == [
        ("users/u", True),
        ("users/u/clients/c", True),
    ]
    # children the reader did not load are assumed to stay
    plan, _ = build_plan(desired({USER_U: {}}), live({USER_U: {"producer_byte_rate": "1"}}, children=("u",)))
    assert not only(plan).delete_entity


def test_declared_absent_empty_entity_has_no_entry() -> None:
    plan, _ = build_plan(desired({CLIENT_A: {}, B1: {}}), live())
    assert plan.is_empty


# --- topics ---------------------------------------------------------------------------------------------


def test_topic_create_with_rack_aware_assignment_and_no_entity_plan() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    plan, diags = build_plan(
        desired(topics={"orders": (6, 3, {"retention.ms": "86400000"})}),
        live({EntityRef("topics", "orders"): {"retention.ms": "1"}}, brokers=racks),
    )
    assert diags == [] and plan.entities == ()
    (create,) = plan.topics_to_create
    assert (create.name, create.partitions, create.replication_factor) == ("orders", 6, 3)
    assert dict(create.config) == {"retention.ms": "86400000"}
    for replicas in create.assignment.values():
        assert len({racks[b] for b in replicas}) == 3


def test_topic_create_without_registered_brokers_uses_declared_ids_and_defaults() -> None:
    plan, diags = build_plan(desired(topics={"t": (None, None, {})}, brokers=(5, 6)), live(brokers={}))
    assert diags == []
    (create,) = plan.topics_to_create
    assert (create.partitions, create.replication_factor) == (1, 1)
    assert set(create.assignment[0]) <= {5, 6}


def test_topic_create_rf_too_large_and_name_collision() -> None:
    plan, diags = build_plan(
        desired(topics={"t": (1, 5, {}), "a.b": (1, 1, {})}), live(topics={"a_b": {0: (1,)}})
    )
    assert plan.topics_to_create == ()
    messages = sorted(d.message for d in diags)
    assert "collides with existing topics: a_b" in messages[0]
    assert "Replication factor: 5 larger than available brokers: 3." in messages[1]


def test_two_new_topics_that_collide() -> None:
    plan, diags = build_plan(desired(topics={"a.b": (1, 1, {}), "a_b": (1, 1, {})}), live())
    assert [t.name for t in plan.topics_to_create] == ["a.b"]
    assert [d.message.split(".")[0] for d in diags] == ["Topic 'a_b' collides with existing topics: a"]


def test_partition_increase() -> None:
    plan, diags = build_plan(desired(topics={"t": (5, None, {})}), live(topics={"t": {0: (2, 3), 1: (3, 1)}}))
    assert diags == []
    (inc,) = plan.partition_increases
    assert (inc.current, inc.target, inc.base_version, sorted(inc.new_assignment)) == (2, 5, 4, [2, 3, 4])
    assert all(len(r) == 2 for r in inc.new_assignment.values())
    assert plan.counts.partitions_added == 3


def test_partition_decrease_is_an_error() -> None:
    plan, diags = build_plan(desired(topics={"t": (1, None, {})}), live(topics={"t": {0: (1, 2), 1: (2, 3)}}))
    assert plan.partition_increases == () and plan.topics_to_create == ()
    assert [d.severity for d in diags] == ["error"] and "Kafka cannot remove partitions" in diags[0].message
    assert diags[0].source == SourceRef("clusters/c1/topics.yaml", 5)


@pytest.mark.parametrize("partitions,rf", [(None, 3), (2, 1)])
def test_rf_change_is_a_reassignment(partitions: int | None, rf: int) -> None:
    """A replication factor changed on an existing topic is planned as replica moves (reconciler/reassign/); this
    cluster names no Admin API to run them through, which is the one error."""
    plan, diags = build_plan(
        desired(topics={"t": (partitions, rf, {})}), live(topics={"t": {0: (1, 2), 1: (2, 3)}})
    )
    assert plan.reassignment is not None and all(len(m.target) == rf for m in plan.reassignment.moves)
    assert [d.severity for d in diags] == ["error"] and "spec.adminClient" in diags[0].message


def test_none_means_dont_care_for_existing_topics() -> None:
    plan, diags = build_plan(
        desired(topics={"t": (None, None, {})}), live(topics={"t": {0: (1, 2), 1: (2, 3)}})
    )
    assert plan.is_empty and diags == []


# --- determinism, id, JSON ------------------------------------------------------------------------------


def _big_case() -> tuple[DesiredState, LiveState]:
    return (
        desired(
            {
                DEFAULT: {"log.retention.ms": "100"},
                B1: {PW: SECRET},
                CLIENT_A: {},
                USER_U_C: {"producer_byte_rate": "5"},
            },
            topics={"new": (3, 2, {"cleanup.policy": "compact"}), "t": (4, None, {"retention.ms": "9"})},
        ),
        live(
            {
                DEFAULT: {"a": "b"},
                CLIENT_A: {"producer_byte_rate": "1"},
                EntityRef("ips", "10.0.0.1"): {"x": "1"},
            },
            topics={"t": {0: (1, 2), 1: (2, 3)}, "z": {0: (1,)}},
        ),
    )


def test_deterministic_and_plan_id_stable() -> None:
    want, have = _big_case()
    a, _ = build_plan(want, have, revision="abc", created_at="2024-01-01T00:00:00Z")
    b, _ = build_plan(want, have, revision="abc", created_at="2030-01-01T00:00:00Z")
    assert a.plan_id and a.plan_id == b.plan_id and plan_to_json(a) != plan_to_json(b)
    reordered = replace(
        want,
        entities=dict(reversed(list(want.entities.items()))),
        topics=dict(reversed(list(want.topics.items()))),
    )
    c, _ = build_plan(reordered, have, revision="abc")
    assert c.plan_id == a.plan_id
    d, _ = build_plan(want, have, revision="other")
    assert d.plan_id != a.plan_id
    assert [e.ref.display for e in a.entities] == sorted(e.ref.display for e in a.entities)
    for e in a.entities:
        assert [c.key for c in e.changes] == sorted(c.key for c in e.changes)


def test_json_round_trip() -> None:
    want, have = _big_case()
    plan, _ = build_plan(want, have, revision="abc", created_at="2024-01-01T00:00:00Z")
    assert plan.topics_to_create and plan.partition_increases and plan.entities
    back = plan_from_json(plan_to_json(plan))
    assert back == plan
    assert back.with_id().plan_id == plan.plan_id


# --- property: applying the plan converges --------------------------------------------------------------

ENTITY_KEYS: dict[str, list[tuple[str, list[str], list[str]]]] = {
    # scope -> (key, desired canonical values, extra live spellings)
    "brokers": [
        ("log.retention.ms", ["100", "604800000"], [" 100", "0100"]),
        ("unclean.leader.election.enable", ["true", "false"], ["TRUE", "False"]),
        ("leader.replication.throttled.rate", ["1000"], ["5"]),
        ("custom.key", ["a"], ["b"]),
    ],
    "quota": [
        ("producer_byte_rate", ["1024", "2048"], ["+1024"]),
        ("request_percentage", ["50.0", "12.5"], ["50", "1.25E1"]),
        ("SCRAM-SHA-256", ["salt=a"], ["salt=b"]),
    ],
    "topics": [
        ("retention.ms", ["100", "200"], [" 200"]),
        ("cleanup.policy", ["compact,delete", "delete"], ["compact, delete"]),
        ("leader.replication.throttled.replicas", ["0:1"], ["*"]),
    ],
}
REFS = [DEFAULT, B1, CLIENT_A, USER_U, USER_U_C, EntityRef("ips", "10.0.0.1")]
TOPICS = ["t1", "t2"]


def _scope(ref: EntityRef) -> str:
    return ref.entity_type if ref.entity_type in ("brokers", "topics") else "quota"


@st.composite
def config_for(draw: st.DrawFn, ref: EntityRef, *, live_side: bool) -> dict[str, str | SecretRef]:
    out: dict[str, str | SecretRef] = {}
    for key, values, spellings in ENTITY_KEYS[_scope(ref)]:
        if key.startswith("SCRAM") and ref != USER_U:
            continue
        if draw(st.booleans()):
            out[key] = draw(st.sampled_from(values + spellings if live_side else values))
    if ref == B1 and draw(st.booleans()):
        out[PW] = (
            draw(st.sampled_from(["enc:A", "enc:B"]))
            if live_side
            else SecretRef(env=draw(st.sampled_from("AB")))
        )
    return out


@st.composite
def scenario(draw: st.DrawFn) -> tuple[DesiredState, LiveState]:
    declared = {r: draw(config_for(r, live_side=False)) for r in REFS if draw(st.booleans())}
    existing = {r: draw(config_for(r, live_side=True)) for r in REFS if draw(st.booleans())}
    live_topics: dict[str, dict[int, tuple[int, ...]]] = {}
    topics: dict[str, tuple[int | None, int | None, Mapping[str, str]]] = {}
    for name in TOPICS:
        ref = EntityRef("topics", name)
        count = draw(st.integers(0, 3))
        if count:
            live_topics[name] = {p: (1 + p % 3, 1 + (p + 1) % 3) for p in range(count)}
            if draw(st.booleans()):
                existing[ref] = draw(config_for(ref, live_side=True))
        if draw(st.booleans()):
            config = {k: v for k, v in draw(config_for(ref, live_side=False)).items() if isinstance(v, str)}
            partitions = draw(st.sampled_from([None, max(count, 1), count + 2]))
            topics[name] = (partitions, 2 if draw(st.booleans()) else None, config)
    kw = {
        "prune": draw(st.booleans()),
        "ignore": tuple(draw(st.sets(st.sampled_from(["custom.key", "retention.ms"])))),
    }
    want = desired(declared, topics, **kw)
    have = live(
        {r: {k: str(v) for k, v in c.items()} for r, c in existing.items()},
        live_topics,
        children=("u",) if USER_U_C in existing else (),
    )
    return want, have


def secret_states_of(want: DesiredState, have: LiveState) -> dict[tuple[EntityRef, str], SecretState]:
    """What a decoding adapter would report: live "enc:X" equals SecretRef(env=X)."""
    out = {}
    for ref, entity in want.entities.items():
        for key, value in entity.config.items():
            current = have.entities.get(ref)
            if isinstance(value.value, SecretRef) and current is not None and key in current.config:
                same = current.config[key] == f"enc:{value.value.env}"
                out[(ref, key)] = SecretState("unchanged" if same else "changed")
    return out


def apply_in_memory(plan: Plan, have: LiveState) -> LiveState:
    """Execute a plan against an in-memory LiveState the way apply does against ZooKeeper."""
    entities = dict(have.entities)
    for entity_plan in plan.entities:
        current = entities.get(entity_plan.ref)
        config = dict(current.config) if current is not None else {}
        for change in entity_plan.changes:
            config = _apply_change(config, change)
        if entity_plan.delete_entity:
            assert not config
            entities.pop(entity_plan.ref, None)
        else:
            version = (current.version or 0) + 1 if current is not None else 0
            entities[entity_plan.ref] = LiveEntity(entity_plan.ref, config, version)
    topics = dict(have.topics)
    for create in plan.topics_to_create:
        assert create.name not in topics
        topics[create.name] = LiveTopic(create.name, dict(create.assignment), 0)
        entities[EntityRef("topics", create.name)] = LiveEntity(
            EntityRef("topics", create.name), dict(create.config), 0
        )
    for inc in plan.partition_increases:
        old = topics[inc.name]
        assert old.version == inc.base_version and old.partitions == inc.current
        topics[inc.name] = LiveTopic(inc.name, {**old.assignment, **inc.new_assignment}, inc.base_version + 1)
    parents = {r.name for r in entities if r.entity_type == "users" and r.client is not None}
    for user in parents:  # ZooKeeper creates missing parents (empty), like Kafka's createRecursive
        ref = EntityRef("users", user)
        entities.setdefault(ref, LiveEntity(ref, {}, 0))
    entities = {
        r: replace(e, has_children=r.entity_type == "users" and r.client is None and r.name in parents)
        for r, e in entities.items()
    }
    return replace(have, entities=entities, topics=topics)


def _apply_change(config: dict[str, str], change: Change) -> dict[str, str]:
    if change.op == "-":
        del config[change.key]
    elif change.sensitive:
        assert change.secret is not None and change.secret.env is not None
        config[change.key] = f"enc:{change.secret.env}"
    else:
        assert change.after is not None
        config[change.key] = change.after
    return config


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_applying_the_plan_converges(case: tuple[DesiredState, LiveState]) -> None:
    want, have = case
    plan, diags = build_plan(want, have, secret_states=secret_states_of(want, have))
    assert not [d for d in diags if d.severity == "error"], diags
    after = apply_in_memory(plan, have)
    again, _ = build_plan(want, after, secret_states=secret_states_of(want, after))
    assert again.is_empty, (ops(again), again.topics_to_create, again.partition_increases)
    assert plan_from_json(plan_to_json(plan)) == plan


def test_an_entity_in_sync_takes_the_short_way_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """ConfigDiffer._in_sync skips the key-by-key diff only when it would find nothing: same answers
    (changes, ignored count, diagnostics) with and without it, for configs in sync and nearly in sync."""
    from reconciler.catalog import load_catalog
    from reconciler.diff.config import Comparer, ConfigDiffer
    from reconciler.model import SecretRef

    secret = SecretRef(env="PW")
    cases: list[tuple[EntityRef, dict[str, Any], dict[str, str]]] = [
        (EntityRef("topics", "t"), {"retention.ms": "1", "cleanup.policy": "delete"},
         {"retention.ms": "1", "cleanup.policy": "delete"}),
        (EntityRef("topics", "t"), {}, {}),
        (EntityRef("topics", "t"), {"retention.ms": "1"}, {"retention.ms": "2"}),
        (EntityRef("topics", "t"), {"retention.ms": "86400000"}, {"retention.ms": "86400000 "}),
        (EntityRef("topics", "t"), {"retention.ms": "1", "ignored.key": "x"},
         {"retention.ms": "1", "ignored.key": "x"}),
        (EntityRef("brokers", "1"), {"ssl.keystore.password": "plain"}, {"ssl.keystore.password": "plain"}),
        (EntityRef("brokers", "1"), {"ssl.keystore.password": secret}, {"ssl.keystore.password": "enc"}),
        (EntityRef("clients", "a"), {"producer_byte_rate": "10"}, {"producer_byte_rate": "10"}),
    ]

    def run(ref: EntityRef, want: dict[str, Any], have: dict[str, str]) -> tuple[Any, ...]:
        differ = ConfigDiffer(Comparer(load_catalog(), "3.6"), frozenset({"ignored.key"}), {})
        result = differ.diff(ref, {k: DesiredValue(v) for k, v in want.items()}, have, None)
        return result.changes, result.ignored, result.empty_after, differ.diagnostics, differ.warnings

    short = [run(*case) for case in cases]
    assert short[0] == ([], 0, False, [], []) and short[1] == ([], 0, True, [], [])
    monkeypatch.setattr(ConfigDiffer, "_in_sync", lambda *_: False)
    assert [run(*case) for case in cases] == short
