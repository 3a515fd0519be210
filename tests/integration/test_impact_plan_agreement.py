"""The impact job rates every effective change as `reconciler plan` does, reasons included (issue 30, item 4).

One cluster, `policies`, planned with the plan command's own pure step (`workflow.plan_against`, which rates with
`risk.annotate`) and assessed by the impact job (real local Spark) from the same live state (`live_rows`) and
manifests (`after_rows`). Worked out by hand:

  brokers/<default>  log.retention.ms 7d -> 1h (every topic without its own retention.ms inherits it)
  events        undeclared, no overrides: 7d -> 1h, policy delete (Kafka's default): destructive
  state         undeclared, cleanup.policy=compact: 7d -> 1h deletes nothing: safe
  both          undeclared, cleanup.policy=compact,delete: destructive
  compacted     declared compact; retention.ms 1d -> 1h and retention.bytes + 1 GiB: safe (nothing deleted)
  deleted       declared delete; the same two changes: destructive
  to-delete     live compact, declared delete; retention.ms 1d -> 1h: the policy after the change decides,
                destructive (and cleanup.policy changed: destructive)
  to-compact    live delete, declared compact; retention.ms 1d -> 1h: safe (cleanup.policy changed: destructive)
  dropped       declared without its live retention.ms=30d: falls back to the new 1h (a `-`): destructive
  uncompacted   live compact with retention.ms=1d, declared with retention.ms=1h only: its policy after apply is
                Kafka's delete, whatever the live override says: destructive (cleanup.policy removed: destructive)

A topic change the plan lists itself (the topic's own override) must carry the plan's risk and reasons exactly.
A change the topic only inherits (the broker side) is in the plan as the broker change; the topic's rating is what
the plan's rules give that topic (`risk.assess` with the topic's cleanup.policy, as `annotate` calls it), and each
broker's row carries the plan's rating of the broker change.

A second cluster, `perbroker`, has broker 1 set log.cleanup.policy=compact for itself (an undeclared per-broker
entity: kept): topic m's replica on broker 1 deletes nothing, the one on broker 2 does.

A third, `deleting`, opts into policy.deleteTopics [scratch-*, legacy.events, __*]: the undeclared scratch-1 (with
partition sizes in the inventory) and legacy.events (none) are deleted; scratch-keep is declared, __consumer_offsets
internal, legacy-events not the name. The job lists exactly the plan's TopicDeletes, with its reasons. Its
<default> log.retention.ms also goes 7d -> 1h: the three topics that stay change (destructive), the two deleted
ones are not config changes (apply deletes them: no value after).
"""

from __future__ import annotations

from typing import Any

import pytest

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
    ZooKeeperSpec,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

H1, D1, D7, D30, GIB = "3600000", "86400000", "604800000", "2592000000", "1073741824"
DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)
LIVE_TOPICS: dict[str, dict[str, str]] = {  # topic -> live overrides
    "events": {}, "state": {"cleanup.policy": "compact"}, "both": {"cleanup.policy": "compact,delete"},
    "compacted": {"cleanup.policy": "compact", "retention.ms": D1},
    "deleted": {"cleanup.policy": "delete", "retention.ms": D1},
    "to-delete": {"cleanup.policy": "compact", "retention.ms": D1},
    "to-compact": {"cleanup.policy": "delete", "retention.ms": D1},
    "dropped": {"retention.ms": D30},
    "uncompacted": {"cleanup.policy": "compact", "retention.ms": D1},
}
DECLARED: dict[str, dict[str, str]] = {  # topic -> declared config
    "compacted": {"cleanup.policy": "compact", "retention.ms": H1, "retention.bytes": GIB},
    "deleted": {"cleanup.policy": "delete", "retention.ms": H1, "retention.bytes": GIB},
    "to-delete": {"cleanup.policy": "delete", "retention.ms": H1},
    "to-compact": {"cleanup.policy": "compact", "retention.ms": H1},
    "dropped": {},
    "uncompacted": {"retention.ms": H1},
}
# (topic, key) -> the topic's cleanup.policy after the change, for the changes it only inherits
INHERITED = {("events", "retention.ms"): "delete", ("state", "retention.ms"): "compact",
             ("both", "retention.ms"): "compact,delete"}


def _registration(broker: int) -> BrokerRegistration:
    return BrokerRegistration(broker, (f"PLAINTEXT://b{broker}:9092",), {"PLAINTEXT": "PLAINTEXT"})


def _entity(ref: EntityRef, config: dict[str, str]) -> LiveEntity:
    return LiveEntity(ref, dict(config), 0)


def _states() -> dict[str, tuple[DesiredState, LiveState]]:
    out = {}
    live = LiveState(
        cluster="policies",
        brokers={b: _registration(b) for b in (1, 2, 3)},
        topics={t: LiveTopic(t, {0: (1, 2, 3), 1: (2, 3, 1)}) for t in LIVE_TOPICS},
        entities={DEFAULT: _entity(DEFAULT, {"log.retention.ms": D7}),
                  **{EntityRef("topics", t): _entity(EntityRef("topics", t), c) for t, c in LIVE_TOPICS.items()}},
    )
    desired = DesiredState(
        cluster=ClusterSpec("policies", "3.6", ZooKeeperSpec("zk:2181"), (1, 2, 3)),
        entities={DEFAULT: DesiredEntity(DEFAULT, {"log.retention.ms": DesiredValue(H1)})},
        topics={t: DesiredTopic(t, None, None, {k: DesiredValue(v) for k, v in c.items()})
                for t, c in DECLARED.items()},
    )
    out["policies"] = (desired, live)
    b1 = EntityRef("brokers", "1")
    live = LiveState(
        cluster="perbroker",
        brokers={b: _registration(b) for b in (1, 2)},
        topics={"m": LiveTopic("m", {0: (1,), 1: (2,)})},
        entities={DEFAULT: _entity(DEFAULT, {"log.retention.ms": D7}),
                  b1: _entity(b1, {"log.cleanup.policy": "compact"})},
    )
    desired = DesiredState(
        cluster=ClusterSpec("perbroker", "3.6", ZooKeeperSpec("zk:2181"), (1, 2)),
        entities={DEFAULT: DesiredEntity(DEFAULT, {"log.retention.ms": DesiredValue(H1)})},
        topics={},
    )
    out["perbroker"] = (desired, live)
    names: dict[str, dict[int, tuple[int, ...]]] = {
        "scratch-1": {0: (1, 2), 1: (2, 1), 2: (1, 2)}, "legacy.events": {0: (1,), 1: (2,)},
        "scratch-keep": {0: (1, 2)}, "__consumer_offsets": {0: (1, 2)}, "legacy-events": {0: (2,)}}
    live = LiveState(
        cluster="deleting",
        brokers={b: _registration(b) for b in (1, 2)},
        topics={t: LiveTopic(t, a, version=4) for t, a in names.items()},
        entities={DEFAULT: _entity(DEFAULT, {"log.retention.ms": D7})},
    )
    desired = DesiredState(
        cluster=ClusterSpec("deleting", "3.6", ZooKeeperSpec("zk:2181"), (1, 2),
                            policy=Policy(delete_topics=("scratch-*", "legacy.events", "__*"))),
        entities={DEFAULT: DesiredEntity(DEFAULT, {"log.retention.ms": DesiredValue(H1)})},
        topics={"scratch-keep": DesiredTopic("scratch-keep", None, None, {})},
    )
    out["deleting"] = (desired, live)
    return out


SIZES = [("deleting", "scratch-1", p, n) for p, n in ((0, 4096), (1, 4096), (2, 8192))]  # 16 KiB; none for legacy


@pytest.fixture(scope="module")
def assessed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from reconciler.impact.afterstate import after_rows
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.html import render_html
    from reconciler.impact.inventory import live_rows, read_inventory, write_tables
    from reconciler.impact.job import compute_changes
    from reconciler.impact.report import render_markdown
    from reconciler.workflow import plan_against

    states = _states()
    root = tmp_path_factory.mktemp("repo")
    plans = {name: plan_against(desired, live, root, None).plan for name, (desired, live) in states.items()}
    rows: dict[str, list[Any]] = {}
    for _, live in states.values():
        for table, found in live_rows(live).items():
            rows.setdefault(table, []).extend(found)
    rows["static"] = []
    rows["sizes"] = list(SIZES)
    inventory = tmp_path_factory.mktemp("inventory")
    write_tables(spark, rows, inventory)
    changes = compute_changes(spark, read_inventory(spark, inventory),
                              after_rows({name: desired for name, (desired, _) in states.items()}))
    summary = summarize(spark, changes, sample=100)
    return {
        "plans": plans,
        "topics": {(r["cluster"], r["topic"], r["key"]): r.asDict() for r in changes.topics.collect()},
        "brokers": {(r["cluster"], r["broker"], r["key"]): r.asDict() for r in changes.brokers.collect()},
        "summary": summary, "html": render_html(summary), "markdown": render_markdown(summary),
    }


def test_topic_deletions_are_the_plans(assessed: dict[str, Any]) -> None:
    """The topics the job reports deleted are the plan's TopicDeletes over the same live state (names, sizes,
    the entry that names them, the plan's reasons), plus the inventory's bytes where it has them."""
    plan = assessed["plans"]["deleting"]
    deleted = assessed["summary"]["topicsDeleted"]
    assert [(r["topic"], r["partitions"], r["replicationFactor"], r["matched"], r["risk"]) for r in deleted["rows"]] \
        == [(t.name, t.partitions, t.replication_factor, t.matched, t.risk) for t in plan.topics_to_delete] \
        == [("legacy.events", 2, 1, "legacy.events", "destructive"), ("scratch-1", 3, 2, "scratch-*", "destructive")]
    by_name = {t.name: t for t in plan.topics_to_delete}
    for r in deleted["rows"]:
        assert r["reasons"][:1] == list(by_name[r["topic"]].reasons)
    legacy, scratch = deleted["rows"]
    assert (legacy["bytes"], len(legacy["reasons"])) == (None, 1)
    assert scratch["bytes"] == 16384 and "16.0 KiB" in scratch["reasons"][1]
    assert {r["cluster"] for r in deleted["rows"]} == {"deleting"}  # no other cluster opts in
    assert (deleted["replicas"], deleted["bytes"], deleted["bytesUnknown"]) == (2 + 6, 16384, 1)
    cluster = next(c for c in assessed["summary"]["byCluster"] if c["cluster"] == "deleting")
    assert (cluster["risk"], cluster["topicsDeleted"], cluster["topicBytesDeleted"]) == ("destructive", 2, 16384)
    # the topics apply deletes are no config change (no value after), the others inherit the lowered retention
    changed = {t for c, t, _ in assessed["topics"] if c == "deleting"}
    assert changed == {"scratch-keep", "__consumer_offsets", "legacy-events"}
    assert (cluster["topics"], cluster["partitions"], cluster["bytes"]) == (3, 3, 0)
    md = assessed["markdown"]
    assert md.index("Topics to DELETE") < md.index("### By key")
    assert "| `deleting` | `scratch-1` | 3 | 6 | 16.0 KiB |" in md


def _plan_changes(plan: Any) -> dict[tuple[str, str, str], Any]:
    return {(ref.entity_type, ref.name, change.key): change
            for ref, change in ((e.ref, c) for e in plan.entities for c in e.changes)}


def test_every_topic_rating_is_the_plans(assessed: dict[str, Any]) -> None:
    from reconciler.risk import assess

    topics = assessed["topics"]
    changes = _plan_changes(assessed["plans"]["policies"])
    rated = {k: (r["risk"], tuple(r["reasons"])) for k, r in topics.items() if k[0] == "policies"}
    expected = {}
    for _, topic, key in rated:
        change = changes.get(("topics", topic, key))
        if change is not None:  # the topic's own change, as the plan lists it
            expected[("policies", topic, key)] = (change.risk, change.reasons)
        else:  # inherited from the broker change: the plan's rules for this topic
            r = topics[("policies", topic, key)]
            policy = frozenset(INHERITED[(topic, key)].split(","))
            expected[("policies", topic, key)] = assess(key, "~", r["before"], r["after"],
                                                        entity=EntityRef("topics", topic), cleanup_policy=policy)
    assert rated == expected
    # every topic change of the plan is in the job's rows (none lost), and the hand-worked ratings
    own = {(t, k) for (kind, t, k) in changes if kind == "topics"}
    assert own == {(t, k) for (_, t, k) in rated if (t, k) not in INHERITED}
    risks = {(t, k): r[0] for (_, t, k), r in rated.items()}
    assert risks == {
        ("events", "retention.ms"): "destructive", ("state", "retention.ms"): "safe",
        ("both", "retention.ms"): "destructive",
        ("compacted", "retention.ms"): "safe", ("compacted", "retention.bytes"): "safe",
        ("deleted", "retention.ms"): "destructive", ("deleted", "retention.bytes"): "destructive",
        ("to-delete", "retention.ms"): "destructive", ("to-delete", "cleanup.policy"): "destructive",
        ("to-compact", "retention.ms"): "safe", ("to-compact", "cleanup.policy"): "destructive",
        ("dropped", "retention.ms"): "destructive",
        ("uncompacted", "retention.ms"): "destructive", ("uncompacted", "cleanup.policy"): "destructive",
    }
    assert all(r[1] for (t, k), r in ((x[1:], y) for x, y in rated.items()) if risks[(t, k)] != "safe")
    assert "key removed" in " ".join(rated[("policies", "dropped", "retention.ms")][1])  # the plan's `-` wording


def test_every_broker_rating_is_the_plans(assessed: dict[str, Any]) -> None:
    changes = _plan_changes(assessed["plans"]["policies"])
    plan = changes[("brokers", DEFAULT_ENTITY, "log.retention.ms")]
    rows = {k: r for k, r in assessed["brokers"].items() if k[0] == "policies"}
    assert set(rows) == {("policies", b, "log.retention.ms") for b in (1, 2, 3)}
    assert all((r["risk"], tuple(r["reasons"])) == (plan.risk, plan.reasons) for r in rows.values())
    assert plan.risk == "destructive"


def test_a_per_broker_policy_rates_each_replica(assessed: dict[str, Any]) -> None:
    """Broker 1's own log.cleanup.policy=compact: m's partition 0 (on broker 1) deletes nothing, partition 1
    (broker 2) does; the row shows broker 2's change, the most at risk, with the plan's reasons for it."""
    from reconciler.risk import assess

    m = assessed["topics"][("perbroker", "m", "retention.ms")]
    risk, reasons = assess("retention.ms", "~", D7, H1, entity=EntityRef("topics", "m"),
                           cleanup_policy=frozenset({"delete"}))
    assert (m["risk"], tuple(m["reasons"]), m["brokers"], m["before"], m["after"]) == (
        risk, reasons, [1, 2], D7, H1)
    assert m["rules"] == ["retention-lowered"]
    by_rule = {r["rule"]: r for r in assessed["summary"]["byRule"]}
    by_key = {r["key"]: r for r in assessed["summary"]["byKey"]}
    # brokers: policies 1-3 (their own value); perbroker 1-2 (their own value lowered: a broker change is rated
    # as the plan rates it, whatever its topics' policies); deleting 1-2
    assert by_rule["retention-lowered"]["brokers"] == by_key["retention.ms"]["brokers"] == 5 + 2


def test_counts_follow_the_ratings(assessed: dict[str, Any]) -> None:
    """Safe topics are counted as safe; the per-rule broker counts match the per-key ones: cleanup.policy changes
    on the replica hosts of to-delete, to-compact and uncompacted (brokers 1-3), as its rule does."""
    s = assessed["summary"]
    # destructive: events, both, deleted, to-delete, to-compact (cleanup.policy), dropped, uncompacted, m;
    # deleting's scratch-keep, __consumer_offsets, legacy-events; safe: state, compacted
    assert s["topicsByRisk"] == {"destructive": 8 + 3, "disruptive": 0, "safe": 2}
    by_rule = {r["rule"]: r for r in s["byRule"]}
    by_key = {r["key"]: r for r in s["byKey"]}
    assert by_key["cleanup.policy"]["brokers"] == by_rule["cleanup-policy-changed"]["brokers"] == 3
    # events, both, deleted, to-delete, dropped, uncompacted, m; deleting's three kept topics
    assert by_rule["retention-lowered"]["topics"] == 7 + 3
    assert by_rule["retention-bytes-lowered"]["topics"] == 1  # deleted only; compacted's deletes nothing


def test_reports_show_the_reasons(assessed: dict[str, Any]) -> None:
    """Every example row of the HTML and the Markdown carries its reasons (HTML-escaped by the template)."""
    from html import escape

    html, markdown, s = assessed["html"], assessed["markdown"], assessed["summary"]
    reasons = {r for row in s["topicChanges"] + s["brokerChanges"] for r in row["reasons"]}
    assert reasons  # destructive rows have reasons
    for reason in reasons:
        assert escape(reason, quote=False) in html or escape(reason) in html, reason
    deleted = next(r for r in s["topicChanges"] if r["topic"] == "deleted" and r["key"] == "retention.ms")
    assert deleted["reasons"] and deleted["reasons"][0].split(" (")[0].split(":")[0] in markdown
