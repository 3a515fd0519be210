"""ACLs: manifests (expansion, Kafka's rules at the line, all at once), Kafka's bytes, plan JSON, risk, rendering."""

from __future__ import annotations

import json
from pathlib import Path

from reconciler.diff.acls import plan_acls
from reconciler.manifests.planfile import read_plans
from reconciler.manifests.validate import load_and_validate
from reconciler.model import AclEntry, AclResource, DesiredAcls, LiveAcls
from reconciler.plan import AclPlan, Plan, plan_from_json, plan_to_json
from reconciler.render.json import render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from reconciler.zk.acls import decode_acls, encode_acls, encode_change, resource_path
from tests.unit.test_validate import errors, write_repo


def _state(tmp_path: Path, acls: str):  # type: ignore[no-untyped-def]
    write_repo(tmp_path, {"clusters/c1/acls.yaml": "apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec:\n" + acls})
    _, states, diags = load_and_validate(tmp_path)
    return states.get("c1"), errors(diags)


def _entries(state, rtype: str, pattern: str, name: str) -> set[tuple[str, str, str, str]]:  # type: ignore[no-untyped-def]
    found = state.acls[AclResource(rtype, pattern, name)].entries
    return {(e.principal, e.host, e.operation, e.permission) for e in found}


def test_compact_forms_expand_as_kafka_acls_does(tmp_path: Path) -> None:
    state, errs = _state(tmp_path, """\
  consumers:
    - {principals: [User:alice], topicPrefix: app-, group: app-readers}
  producers:
    - {principals: [User:bob], topic: orders, transactionalId: tx-orders, idempotent: true}
  resources:
    - type: Topic
      name: orders
      entries:
        - {principal: User:eve, host: 10.0.0.7, operations: [Read, Describe], permission: Deny}
""")
    assert errs == []
    assert _entries(state, "Topic", "PREFIXED", "app-") == {("User:alice", "*", "Read", "Allow"),
                                                           ("User:alice", "*", "Describe", "Allow")}
    assert _entries(state, "Group", "LITERAL", "app-readers") == {("User:alice", "*", "Read", "Allow")}
    assert _entries(state, "Topic", "LITERAL", "orders") == {
        ("User:bob", "*", "Write", "Allow"), ("User:bob", "*", "Describe", "Allow"),
        ("User:bob", "*", "Create", "Allow"),
        ("User:eve", "10.0.0.7", "Read", "Deny"), ("User:eve", "10.0.0.7", "Describe", "Deny")}
    assert _entries(state, "TransactionalId", "LITERAL", "tx-orders") == {("User:bob", "*", "Write", "Allow"),
                                                                         ("User:bob", "*", "Describe", "Allow")}
    assert _entries(state, "Cluster", "LITERAL", "kafka-cluster") == {("User:bob", "*", "IdempotentWrite", "Allow")}


def test_kafka_rules_reported_at_their_lines_all_at_once(tmp_path: Path) -> None:
    _, errs = _state(tmp_path, """\
  resources:
    - type: Group
      name: g
      entries:
        - {principal: User:alice, operation: Write}
    - type: Cluster
      name: my-cluster
      entries:
        - {principal: User:alice, operation: Alter}
    - type: Topic
      name: "*"
      pattern: PREFIXED
      entries:
        - {principal: User:alice, operation: Read}
    - type: Topic
      name: t
      entries:
        - {principal: User:bob, host: broker-1.example.com, operation: Read}
""")
    where = sorted((e.source.line if e.source else 0, e.key) for e in errs)
    assert where == [(9, "operation"), (11, "name"), (15, "name"), (22, "host")], [e.render() for e in errs]


def test_principal_without_type_refused_at_its_line(tmp_path: Path) -> None:
    _, errs = _state(tmp_path, """\
  consumers:
    - {principals: [alice], topic: t}
""")
    assert [e.source.line for e in errs if e.source] == [6], [e.render() for e in errs]


def test_schema_refuses_unknown_operation_at_its_line(tmp_path: Path) -> None:
    _, errs = _state(tmp_path, """\
  resources:
    - type: Topic
      name: t
      entries:
        - {principal: User:alice, operation: Reed}
""")
    assert errs and errs[0].source is not None and errs[0].source.line == 9


# What Kafka 3.9's AclCommand wrote into ZooKeeper (captured from /kafka-acl/... and the change nodes)
KAFKA_LITERAL = (b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"}],'
                 b'"version":1}')
KAFKA_DENY = (b'{"acls":[{"principal":"User:eve","permissionType":"Deny","host":"*","operation":"Read"}],'
              b'"version":1}')
KAFKA_EXTENDED_CHANGE = b'{"version":1,"resourceType":"TOPIC","name":"app-","patternType":"PREFIXED"}'


def test_bytes_as_kafka_writes_them() -> None:
    assert encode_acls([AclEntry("User:alice", "*", "Read", "Allow")]) == KAFKA_LITERAL
    assert encode_acls([AclEntry("User:eve", "*", "Read", "Deny")]) == KAFKA_DENY
    assert decode_acls(KAFKA_LITERAL, "x") == frozenset({AclEntry("User:alice", "*", "Read", "Allow")})
    assert encode_change(AclResource("Topic", "LITERAL", "t1")) == ("/kafka-acl-changes/acl_changes_", b"TOPIC:t1")
    assert encode_change(AclResource("TransactionalId", "LITERAL", "tx1"))[1] == b"TRANSACTIONAL_ID:tx1"
    assert encode_change(AclResource("Topic", "PREFIXED", "app-")) == (
        "/kafka-acl-extended-changes/acl_changes_", KAFKA_EXTENDED_CHANGE)
    assert resource_path(AclResource("Group", "PREFIXED", "g-")) == "/kafka-acl-extended/prefixed/Group/g-"
    assert resource_path(AclResource("Cluster", "LITERAL", "kafka-cluster")) == "/kafka-acl/Cluster/kafka-cluster"


def test_resource_bytes_are_what_json_dumps_writes_for_any_entries() -> None:
    odd = ["User:alice", "User:\u00e9\u2028\U0001f600", 'User:q"uote\\back', "User:\x01\x7f", "User:*", "Group:a/b"]
    entries = [AclEntry(p, h, op, perm) for p in odd for h in ("*", "10.0.0.1", "h\tost")
               for op, perm in (("Read", "Allow"), ("Write", "Deny"), ("All", "Allow"))]
    for chosen in (entries, entries[::-1], entries[5:9], entries[:1], []):
        body = {"acls": [{"principal": e.principal, "permissionType": e.permission, "host": e.host,
                          "operation": e.operation} for e in sorted(chosen)], "version": 1}
        assert encode_acls(chosen) == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        assert decode_acls(encode_acls(chosen), "x") == frozenset(chosen)


ALICE_READ = AclEntry("User:alice", "*", "Read", "Allow")
BOB_READ = AclEntry("User:bob", "*", "Read", "Allow")
EVE_DENY = AclEntry("User:eve", "*", "Read", "Deny")
TOPIC = AclResource("Topic", "PREFIXED", "app-")
OTHER = AclResource("Group", "LITERAL", "legacy")


def test_a_pattern_is_disruptive_exactly_when_a_principal_may_lose_access() -> None:
    allow, deny = ALICE_READ, EVE_DENY
    for add in ((), (allow,), (deny,), (allow, deny)):
        for remove in ((), (allow,), (deny,), (allow, deny)):
            for grant in ("safe", "disruptive", "destructive"):
                a = AclPlan(TOPIC, 1, add, remove, (), grant_risk=grant)
                order = ["safe", "disruptive", "destructive"]
                assert a.risk == max("disruptive" if a.losing else "safe", grant, key=order.index), (add, remove)


def _plan() -> Plan:
    desired = {TOPIC: DesiredAcls(TOPIC, frozenset({BOB_READ, EVE_DENY}))}
    live = {TOPIC: LiveAcls(TOPIC, frozenset({ALICE_READ}), 3), OTHER: LiveAcls(OTHER, frozenset({BOB_READ}), 0)}
    plans, unmanaged = plan_acls(desired, live, prune=False)
    return Plan("c1", acls=tuple(plans), unmanaged_acls=tuple(unmanaged)).with_id()


def test_diff_risk_and_unmanaged() -> None:
    plan = _plan()
    (change,) = plan.acls
    assert change.add == (BOB_READ, EVE_DENY) and change.remove == (ALICE_READ,) and change.base_version == 3
    assert change.risk == "disruptive" and change.losing == ("User:alice", "User:eve")
    assert plan.unmanaged_acls == ("Group:LITERAL:legacy",)
    only_allow = AclPlan(TOPIC, 3, (BOB_READ,), (), (ALICE_READ, BOB_READ))
    assert only_allow.risk == "safe"
    pruned, unmanaged = plan_acls({}, {OTHER: LiveAcls(OTHER, frozenset({BOB_READ}), 0)}, prune=True)
    assert unmanaged == [] and pruned[0].after == () and pruned[0].pruned and pruned[0].losing == ("User:bob",)


def test_plan_json_round_trip_and_schema() -> None:
    plan = _plan()
    again = plan_from_json(plan_to_json(plan))
    assert again == plan
    (read,) = read_plans(render_json([plan]))
    assert read == plan
    assert "acls" not in plan_to_json(Plan("c1").with_id())  # optional: older plans keep their ids


def test_removed_access_is_obvious_in_text_and_pr_comment() -> None:
    plan = _plan()
    text = render_text([plan])
    assert "- Allow User:alice Read from *" in text and "User:alice loses Read" in text
    comment = render_markdown([plan])
    top = comment[: comment.index("@@")]
    assert "Access removed" in top and "User:alice loses Read" in top and "User:eve is denied Read" in top
    assert "acl Group:LITERAL:legacy" in comment  # unmanaged, named
