"""Which live topics a plan deletes: only undeclared ones that policy.deleteTopics names, never Kafka's
internal topics, never one the controller is already deleting."""

from __future__ import annotations

from dataclasses import replace

from reconciler.diff.topics import plan_deletions
from reconciler.model import ClusterSpec, DesiredState, DesiredTopic, LiveState, LiveTopic, Policy, ZooKeeperSpec


def states(entries: tuple[str, ...], declared: tuple[str, ...] = ()) -> tuple[DesiredState, LiveState]:
    cluster = ClusterSpec("c1", "3.9", ZooKeeperSpec("127.0.0.1:2181/c1"), (1, 2), policy=Policy(delete_topics=entries))
    desired = DesiredState(cluster, {}, {n: DesiredTopic(n, 1, 1, {}) for n in declared})
    names = ("orders", "tmp-1", "tmp-2", "old", "__consumer_offsets", "__transaction_state")
    live = LiveState("c1", {}, {n: LiveTopic(n, {0: (1, 2), 1: (2, 1)}, version=7) for n in names}, {})
    return desired, live


def test_nothing_is_deleted_without_the_policy() -> None:
    assert plan_deletions(*states(())) == ([], [])


def test_names_and_patterns_select_undeclared_topics_only() -> None:
    deletions, problems = plan_deletions(*states(("old", "tmp-*"), declared=("tmp-2",)))
    assert [(d.name, d.partitions, d.replication_factor, d.base_version, d.matched) for d in deletions] == [
        ("old", 2, 2, 7, "old"), ("tmp-1", 2, 2, 7, "tmp-*")]
    assert problems == [] and all(d.risk == "destructive" for d in deletions)


def test_internal_topics_are_never_deleted() -> None:
    deletions, problems = plan_deletions(*states(("__consumer_offsets", "__*")))
    assert deletions == []
    # named exactly: an error (reported once); matched by the pattern only: a warning for that topic
    assert [(p.severity, p.key) for p in problems] == [("error", "deleteTopics"), ("warning", "deleteTopics")]
    assert "__transaction_state" in problems[1].message


def test_a_topic_being_deleted_is_not_planned_again() -> None:
    desired, live = states(("old",))
    assert plan_deletions(desired, replace(live, topics_being_deleted=frozenset({"old"}))) == ([], [])
