"""The impact job's driver side (pure Python): broker-side precedence, the declared topics' overrides, and the
candidate changes with their values and risk, which must agree with the plan's rules."""

from __future__ import annotations

import itertools

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.brokerside import broker_side, same
from reconciler.impact.candidates import NO_RF, candidates, rf_keys
from reconciler.impact.keys import topic_keys
from reconciler.impact.overrides import declared_overrides
from reconciler.impact.riskexpr import rules_of
from reconciler.model import RISK_ORDER, EntityRef
from reconciler.risk import assess, fired_rules

D = "<default>"


def after(**kw: object) -> AfterRows:
    base: dict[str, object] = {"clusters": ["c"], "policies": [("c", False, [])]}
    return AfterRows(**(base | kw))  # type: ignore[arg-type]


def test_dynamic_beats_static_and_synonyms_scale() -> None:
    """KIP-226 precedence (DynamicBrokerConfig): per-broker > <default> > static broker > static <default>;
    within a layer `log.retention.ms` > `.minutes` > `.hours` (scaled to ms). `log.retention.minutes` is not
    dynamic (DynamicLogConfig reconfigures only the first synonym), so brokers ignore it in ZooKeeper."""
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", "2", "log.retention.ms", "5"),
           ("c", "3", "log.retention.minutes", "5")]
    bs = broker_side([("c", 1), ("c", 2), ("c", 3)], dyn, [], after(), {"c": 3})
    assert [bs.values[("c", b, "retention.ms")][0] for b in (1, 2, 3)] == ["1000", "5", "1000"]
    static = [("c", "1", "log.retention.hours", "72"), ("c", D, "log.retention.hours", "1"),
              ("c", "2", "log.retention.minutes", "2")]
    bs = broker_side([("c", 1), ("c", 2), ("c", 3)], [], static, after(static=static), {"c": 3})
    assert [bs.values[("c", b, "retention.ms")][0] for b in (1, 2, 3)] == ["259200000", "120000", "3600000"]
    assert not bs.rows  # nothing changes


def test_after_state_drops_undeclared_keys_of_declared_entities() -> None:
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", D, "leader.replication.throttled.rate", "10")]
    a = after(configs=[("c", "brokers", D, "num.io.threads", "4")], declared=[("c", "brokers", D)])
    bs = broker_side([("c", 1)], dyn, [], a, {"c": 3})
    before, after_ = bs.values[("c", 1, "retention.ms")]
    assert (before, after_) == ("1000", "604800000")  # removed: Kafka's default applies
    assert bs.values[("c", 1, "leader.replication.throttled.rate")] == ("10", "10")  # throttles are kept
    uniform, changed, vb, va = bs.topic_keys[("c", "retention.ms")]
    assert uniform and changed and (vb, va) == ("1000", "604800000")
    rows = {r[2]: r for r in bs.rows}
    assert rows["log.retention.ms"][6] == [] and rows["log.retention.ms"][7] == "safe"  # raised
    assert rows["num.io.threads"][6] == ["threads-reduced"]  # 8 (Kafka's default) -> 4


def test_read_only_synonym_in_zookeeper_is_ignored() -> None:
    """Brokers ignore read-only keys found in /config/brokers (DynamicBrokerConfig): `log.dirs` changes nothing."""
    bs = broker_side([("c", 1)], [("c", D, "log.dirs", "/x")], [], after(), {"c": 1})
    assert not bs.rows and not any(k[2] == "log.dirs" for k in bs.values)


def test_uneven_broker_side_is_mixed() -> None:
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", "1", "log.retention.ms", "5")]
    a = after(configs=[("c", "brokers", D, "log.retention.ms", "10")], declared=[("c", "brokers", D)])
    bs = broker_side([("c", 1), ("c", 2)], dyn, [], a, {"c": 1})
    assert bs.topic_keys[("c", "retention.ms")][:2] == (False, True)
    assert sorted(r[1] for r in bs.mixed_values()) == [1, 2]
    assert bs.hits() == {("c", "retention.ms", 2)}  # broker 1 keeps its own override


def test_declared_overrides_follow_ownership() -> None:
    live = [("c", "t", "retention.ms", "1"), ("c", "t", "min.insync.replicas", "2"),
            ("c", "t", "follower.replication.throttled.replicas", "*"), ("c", "t", "segment.ms", "9")]
    a = after(configs=[("c", "topics", "t", "retention.ms", "2")], declared=[("c", "topics", "t")],
              policies=[("c", False, ["min.insync.replicas"])])
    d = declared_overrides(live, a)
    assert {(k, ob, oa) for _, _, k, ob, oa in d.changed} == {("retention.ms", "1", "2"), ("segment.ms", "9", None)}
    assert ("c", "t", "min.insync.replicas", "2") in d.after_values  # ignoreKeys: the live value stays


def test_candidates_resolve_values_and_ratings_on_the_driver() -> None:
    """Every candidate change carries its values before and after (overrides, broker side, Kafka's default) and
    its rating per replication factor, with the same rules `risk.assess` gives that topic change."""
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", D, "min.insync.replicas", "1")]
    a = after(configs=[("c", "brokers", D, "log.retention.ms", "10"), ("c", "brokers", D, "min.insync.replicas", "3"),
                       ("c", "topics", "t", "cleanup.policy", "compact")],
              declared=[("c", "brokers", D), ("c", "topics", "t")])
    live = [("c", "t", "retention.ms", "50"), ("c", "t", "cleanup.policy", "delete")]
    bs = broker_side([("c", 1)], dyn, [], a, {"c": 2})
    got = candidates(bs, declared_overrides(live, a), ["c"], {"c": {2, 3}})
    undeclared = {x["key"]: x for x in got.by_cluster["c"]}
    assert {k: (x["vb"], x["va"], x["idx"] >= 0) for k, x in undeclared.items()} == {
        "retention.ms": ("1000", "10", True), "min.insync.replicas": ("1", "3", True)}
    assert undeclared["min.insync.replicas"]["rrf"] == [NO_RF, 2, 3] and "min.insync.replicas" in rf_keys()
    assert undeclared["retention.ms"]["rrf"] == [NO_RF]  # no rule of it depends on the replication factor
    # the declared topic: its overrides are applied (retention.ms dropped: the broker side's after value)
    declared = {x["key"]: x for x in got.by_topic[("c", "t")]}
    assert {k: (x["vb"], x["va"], x["src"], x["own"]) for k, x in declared.items()} == {
        "retention.ms": ("50", "10", "broker", False), "min.insync.replicas": ("1", "3", "broker", False),
        "cleanup.policy": ("delete", "compact", "override", True)}
    assert got.pairs == [("c", "min.insync.replicas"), ("c", "retention.ms")] and got.replica_topics == [("c", "t")]
    topic = EntityRef("topics", "t")
    for x in undeclared.values():  # both cleanup-policy cases: a topic row picks by its own policy
        for rf, rating in zip(x["rrf"], x["rv"], strict=True):
            topic_rf = None if rf == NO_RF else rf
            for prefix, policy in (("", {"delete"}), ("n", {"compact"})):
                expected = assess(x["key"], "~", x["vb"], x["va"], entity=topic, topic_rf=topic_rf,
                                  cleanup_policy=frozenset(policy))
                assert (rating[prefix + "level"], got.reasons[rating[prefix + "why"]]) == (
                    RISK_ORDER[expected[0]], expected[1]), (x["key"], rf, policy)
            assert rules_of(rating["mask"]) == list(fired_rules(x["key"], x["vb"], x["va"], topic=True, rf=topic_rf))
    assert rules_of(undeclared["retention.ms"]["rv"][0]["mask"]) == ["retention-lowered"]
    assert undeclared["retention.ms"]["rv"][0]["nmask"] == 0  # compact-only: nothing deleted
    assert rules_of(undeclared["min.insync.replicas"]["rv"][1]["mask"]) == ["min-isr-above-rf", "min-isr-raised"]
    # the declared topic is rated as the plan rates its changes: compact after apply, its retention.ms override
    # removed (a `-` falling back to the broker side's 10), min.insync.replicas inherited (`~`)
    plan_cases = {"retention.ms": ("-", "50", None, "10"), "min.insync.replicas": ("~", "1", "3", None),
                  "cleanup.policy": ("~", "delete", "compact", None)}
    for key, (op, before, after_, inherited) in plan_cases.items():
        x = declared[key]
        for rf, rating in zip(x["rrf"], x["rv"], strict=True):
            expected = assess(key, op, before, after_, entity=topic, topic_rf=None if rf == NO_RF else rf,
                              inherited=inherited, cleanup_policy=frozenset({"compact"}))
            for prefix in ("", "n"):  # fixed: the same whatever the topic's live override
                assert (rating[prefix + "level"], got.reasons[rating[prefix + "why"]]) == (
                    RISK_ORDER[expected[0]], expected[1]), (key, rf)
    assert declared["retention.ms"]["fixed"] and declared["retention.ms"]["rv"][0]["mask"] == 0
    assert declared["retention.ms"]["rv"][0]["level"] == RISK_ORDER["disruptive"]  # the plan's fallback rule


def test_a_policy_that_differs_between_brokers_makes_a_candidate_per_broker() -> None:
    """Broker 2 sets log.cleanup.policy=compact for itself: a uniform retention.ms change is rated per broker,
    each with that broker's policy (the topic's replica there deletes nothing); other keys stay uniform."""
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", "2", "log.cleanup.policy", "compact"),
           ("c", D, "num.io.threads", "8"), ("c", D, "segment.bytes", "1000")]
    a = after(configs=[("c", "brokers", D, "log.retention.ms", "10"), ("c", "brokers", D, "log.segment.bytes", "10")],
              declared=[("c", "brokers", D)])
    bs = broker_side([("c", 1), ("c", 2)], dyn, [], a, {"c": 1})
    got = candidates(bs, declared_overrides([], a), ["c"], {})
    cands = {x["key"]: x for x in got.by_cluster["c"]}
    retention = cands["retention.ms"]
    assert not retention["uniform"] and retention["hb"] == [1, 2]
    assert [h["ind"] for h in retention["hv"]] == [False, True]
    assert got.replica_clusters == ["c"] and got.policy_clusters == ["c"]
    assert cands["segment.bytes"]["uniform"]  # its rating does not depend on the policy


def test_mixed_broker_side_lists_the_brokers_where_a_value_changes() -> None:
    dyn = [("c", D, "log.retention.ms", "1000"), ("c", "1", "log.retention.ms", "5")]
    a = after(configs=[("c", "brokers", D, "log.retention.ms", "10")], declared=[("c", "brokers", D)])
    bs = broker_side([("c", 1), ("c", 2), ("c", 3)], dyn, [], a, {"c": 1})
    got = candidates(bs, declared_overrides([], a), ["c"], {})
    [x] = got.by_cluster["c"]
    assert not x["uniform"] and x["hb"] == [2, 3]  # broker 1 keeps its own 5
    assert [(v["vb"], v["va"]) for v in x["hv"]] == [("1000", "10"), ("1000", "10")]
    assert got.replica_clusters == ["c"]
    every = candidates(bs, declared_overrides([], a), ["c"], {}, full=True).by_cluster["c"]
    assert [x["key"] for x in every] == list(topic_keys())  # unchanged ones too: Spark drops them


def test_list_values_compare_as_sets() -> None:
    assert same("compact,delete", "delete, compact", True)
    assert not same("compact,delete", "delete", True)
    assert not same("a,b", "b,a", False)
    assert all(same(x, x, flag) for x, flag in itertools.product(["", "a", None], [True, False]))
