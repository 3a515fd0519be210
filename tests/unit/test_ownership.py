"""ownership.py: who may apply to a target, and what a first apply may write (issue 38, finding 1). Pure."""

from __future__ import annotations

from dataclasses import replace

from reconciler.model import AclEntry, AclResource, ClusterSpec, EntityRef, ZooKeeperSpec
from reconciler.ownership import beyond_empty, decide
from reconciler.plan import AclPlan, Change, EntityPlan, PartitionIncrease, Plan, TopicCreate, TopicDelete

CLUSTER = ClusterSpec("sandbox", "3.9", ZooKeeperSpec("h:2181/k"), (1,))
DEFAULTS = EntityRef("brokers", "<default>")
GRANT = AclEntry("User:*", "*", "All", "Allow")
TOPICS = AclResource("Topic", "LITERAL", "*")


def test_the_owner_applies_and_a_stranger_is_refused() -> None:
    assert decide(CLUSTER, "sandbox", None, None).action == "apply"
    refused = decide(CLUSTER, "prod", None, None)
    assert refused.action == "refuse" and "managed by cluster prod (its owner record)" in refused.reason
    assert "meta.renamedFrom: prod" in refused.reason


def test_a_declared_rename_transfers_once() -> None:
    renamed = replace(CLUSTER, renamed_from="prod")
    assert decide(renamed, "prod", None, None).action == "transfer"
    assert decide(renamed, "sandbox", None, None).action == "apply"  # after the transfer, renamedFrom is inert
    assert decide(renamed, "other", None, None).action == "refuse"


def test_the_audit_trail_names_the_owner_of_a_target_managed_before_owner_records() -> None:
    assert decide(CLUSTER, None, "sandbox", None).action == "claim"
    legacy = decide(CLUSTER, None, "prod", ["anything"])
    assert legacy.action == "refuse" and "its audit trail" in legacy.reason


def test_a_first_apply_writes_only_what_an_empty_cluster_plan_shows() -> None:
    assert decide(CLUSTER, None, None, []).action == "claim"
    refused = decide(CLUSTER, None, None, ["topics/orders retention.ms removed"])
    assert refused.action == "refuse" and "reconciler import" in refused.reason
    assert "reconciler apply CLUSTER" in refused.reason and "reconcile never does" in refused.reason
    assert decide(CLUSTER, None, None, ["x"], adopt=True).action == "claim"


def _plan(**fields: object) -> Plan:
    return replace(Plan(cluster="sandbox"), **fields)  # type: ignore[arg-type]


def test_beyond_empty_names_every_write_the_empty_plan_did_not_show() -> None:
    empty = _plan(entities=(EntityPlan(DEFAULTS, None, (Change("num.io.threads", "+", None, "16"),)),),
                  topics_to_create=(TopicCreate("orders", 3, 1, {}, {0: (1,), 1: (1,), 2: (1,)}),),
                  acls=(AclPlan(TOPICS, None, (GRANT,), (), (GRANT,)),))
    same_values = _plan(entities=(EntityPlan(DEFAULTS, 3, (Change("num.io.threads", "~", "8", "16"),)),),
                        topics_to_create=empty.topics_to_create, acls=(AclPlan(TOPICS, 0, (GRANT,), (), (GRANT,)),))
    assert beyond_empty(same_values, empty) == []  # overwriting with the values shown: what the PR showed
    assert beyond_empty(empty, empty) == []
    hidden = _plan(
        entities=(EntityPlan(DEFAULTS, 3, (Change("num.io.threads", "~", "8", "32"), Change("x.y", "-", "1", None))),
                  EntityPlan(EntityRef("clients", "app"), 1, (Change("producer_byte_rate", "-", "1", None),),
                             delete_entity=True)),
        topics_to_create=(TopicCreate("orders", 6, 1, {}, {}),),
        partition_increases=(PartitionIncrease("events", 1, 3, 0, {}),),
        topics_to_delete=(TopicDelete("legacy", 1, 1, 0, "*"),),
        acls=(AclPlan(TOPICS, 0, (AclEntry("User:mallory", "*", "All", "Allow"),), (GRANT,), ()),))
    assert beyond_empty(hidden, empty) == [
        "brokers/<default> num.io.threads set", "brokers/<default> x.y removed", "clients/app deleted",
        "clients/app producer_byte_rate removed", "topic orders created", "topic events grown to 3 partitions",
        "topic legacy deleted", "ACL Topic:LITERAL:*: Allow User:* All from * removed",
        "ACL Topic:LITERAL:*: Allow User:mallory All from * added"]


def test_what_the_target_holds_already_is_beyond_an_empty_cluster() -> None:
    """Another name for a managed host must not pass as a new cluster: a topic the manifests declare that exists
    already, undeclared topics, entities and ACLs at the target all count; Kafka's internal topics do not. A topic
    config written with the values its creation showed is no extra write of its own."""
    empty = _plan(topics_to_create=(TopicCreate("orders", 3, 1, {"retention.ms": "86400000"}, {}),))
    orders = EntityRef("topics", "orders")
    same = _plan(entities=(EntityPlan(orders, 0, (Change("retention.ms", "~", "1000", "86400000"),)),),
                 unmanaged=("topics/__consumer_offsets",))
    assert beyond_empty(same, empty) == ["topics/orders exists"]
    other = _plan(entities=(EntityPlan(orders, 0, (Change("retention.ms", "~", "1000", "60000"),
                                                    Change("cleanup.policy", "-", "compact", None))),),
                  unmanaged=("topics/payments", "clients/app"), unmanaged_acls=("Topic:LITERAL:payments",))
    assert beyond_empty(other, empty) == [
        "topics/payments exists", "clients/app exists", "ACL Topic:LITERAL:payments exists", "topics/orders exists",
        "topics/orders retention.ms set", "topics/orders cleanup.policy removed"]
