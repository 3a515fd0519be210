"""Who may do what (reconciler/access.py) against the rules of Kafka 3.9's AclAuthorizer.authorizeAction, one
case each: which patterns match a name, wildcard principal and host, All, the Describe / DescribeConfigs
implications, a Deny winning over every Allow, and the ACLs a plan leaves. Real brokers agree in
tests/integration/test_brokers_acls.py (`describe` beside what a consumer is allowed)."""

from __future__ import annotations

from reconciler.access import access_of, decide, matching, planned_acls
from reconciler.model import AclEntry, AclResource
from reconciler.rules.acls import SUPPORTED_OPERATIONS

ORDERS = AclResource("Topic", "LITERAL", "orders")
WILD = AclResource("Topic", "LITERAL", "*")
ORD_PREFIX = AclResource("Topic", "PREFIXED", "ord")
OTHER_PREFIX = AclResource("Topic", "PREFIXED", "pay")
GROUP = AclResource("Group", "LITERAL", "orders")


def allow(principal: str, op: str, host: str = "*") -> AclEntry:
    return AclEntry(principal, host, op, "Allow")


def deny(principal: str, op: str, host: str = "*") -> AclEntry:
    return AclEntry(principal, host, op, "Deny")


def verdict(acls: dict[AclResource, list[AclEntry]], principal: str, op: str, host: str = "10.0.0.1",
            name: str = "orders") -> str | None:
    found = decide(matching(acls, "Topic", name), principal, host, op)
    return None if found is None else found.verdict


def test_literal_wildcard_and_matching_prefixes_apply_other_types_and_prefixes_do_not() -> None:
    acls = {ORDERS: [allow("User:a", "Read")], WILD: [allow("User:b", "Read")],
            ORD_PREFIX: [allow("User:c", "Read")], OTHER_PREFIX: [allow("User:d", "Read")],
            GROUP: [allow("User:e", "Read")]}
    assert {r.display for r, _ in matching(acls, "Topic", "orders")} == {
        "Topic:LITERAL:orders", "Topic:LITERAL:*", "Topic:PREFIXED:ord"}
    assert [verdict(acls, p, "Read") for p in ("User:a", "User:b", "User:c", "User:d", "User:e")] == [
        "allowed", "allowed", "allowed", None, None]
    # a literal pattern is the whole name: "ord" literal does not cover "orders"
    assert verdict({AclResource("Topic", "LITERAL", "ord"): [allow("User:a", "Read")]}, "User:a", "Read") is None


def test_wildcard_principal_host_and_all() -> None:
    acls = {ORDERS: [allow("User:*", "Write"), allow("User:a", "All", host="10.0.0.9")]}
    assert verdict(acls, "User:anyone", "Write") == "allowed"
    assert verdict(acls, "User:a", "Delete", host="10.0.0.9") == "allowed"  # All, from its host only
    assert verdict(acls, "User:a", "Delete", host="10.0.0.1") is None


def test_describe_and_describe_configs_are_implied_and_nothing_else_is() -> None:
    for op in ("Read", "Write", "Delete", "Alter"):
        assert verdict({ORDERS: [allow("User:a", op)]}, "User:a", "Describe") == "allowed", op
    assert verdict({ORDERS: [allow("User:a", "Create")]}, "User:a", "Describe") is None
    assert verdict({ORDERS: [allow("User:a", "AlterConfigs")]}, "User:a", "DescribeConfigs") == "allowed"
    assert verdict({ORDERS: [allow("User:a", "Describe")]}, "User:a", "Read") is None  # not the other way
    # a Deny is not implied: denying Read leaves Describe (allowed by Read's Allow elsewhere) allowed
    acls = {ORD_PREFIX: [allow("User:a", "Read")], ORDERS: [deny("User:a", "Read")]}
    assert (verdict(acls, "User:a", "Read"), verdict(acls, "User:a", "Describe")) == ("denied", "allowed")


def test_a_deny_anywhere_that_applies_wins_and_names_its_pattern() -> None:
    acls = {ORD_PREFIX: [allow("User:a", "Read")], WILD: [deny("User:*", "Read", host="10.0.0.1")]}
    found = decide(matching(acls, "Topic", "orders"), "User:a", "10.0.0.1", "Read")
    assert found is not None and (found.verdict, found.because) == ("denied", ("Topic:LITERAL:*",))
    assert verdict(acls, "User:a", "Read", host="10.0.0.2") == "allowed"  # the Deny is for one host


def test_access_of_lists_each_named_principal_with_what_is_decided_and_planned_acls_replace_live() -> None:
    acls = {ORDERS: [allow("User:a", "Read"), deny("User:b", "All")]}
    rows = access_of(acls, "Topic", "orders", SUPPORTED_OPERATIONS["Topic"])
    assert [(a.principal, a.operation, a.verdict) for a in rows if a.principal == "User:a"] == [
        ("User:a", "Describe", "allowed"), ("User:a", "Read", "allowed")]
    assert {a.verdict for a in rows if a.principal == "User:b"} == {"denied"}
    assert len([a for a in rows if a.principal == "User:b"]) == len(SUPPORTED_OPERATIONS["Topic"])
    after = planned_acls(acls, {ORDERS: (), ORD_PREFIX: (allow("User:c", "Write"),)})
    assert after == {ORD_PREFIX: frozenset({allow("User:c", "Write")})}
