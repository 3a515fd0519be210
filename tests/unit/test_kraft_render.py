"""A KRaft cluster's plan names no znodes (it has none): the renderers say new / exists / no key left, the plan
file carries `backend: kraft` (valid against the plan-file schema, read back equal), and a ZooKeeper plan's JSON
and id are unchanged (no `backend` key)."""

from __future__ import annotations

import json

from reconciler.manifests.planfile import schema_problem
from reconciler.model import AclEntry, AclResource, EntityRef
from reconciler.plan import AclPlan, Change, EntityPlan, Plan, plan_from_json, plan_to_json
from reconciler.render.json import render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text


def _plan(backend: str) -> Plan:
    topic = EntityPlan(EntityRef("topics", "orders"), 0, (Change("retention.ms", "~", "1", "2"),))
    user = EntityPlan(EntityRef("users", "alice"), None, (Change("producer_byte_rate", "+", None, "1024"),))
    gone = EntityPlan(EntityRef("clients", "app"), 0, (Change("consumer_byte_rate", "-", "5", None),), True)
    acl = AclPlan(AclResource("Topic", "LITERAL", "orders"), None, (AclEntry("User:a", "*", "Read", "Allow"),), (),
                  (AclEntry("User:a", "*", "Read", "Allow"),))
    return Plan("c1", entities=(topic, user, gone), acls=(acl,), backend=backend).with_id()


def test_a_kraft_plan_names_no_znode_and_round_trips() -> None:
    kraft = _plan("kraft")
    for text in (render_text([kraft]), render_markdown([kraft])):
        assert "znode" not in text
        assert "topics/orders (exists)" in text.replace("  (", " (")
        assert "users/alice (new)" in text.replace("  (", " (")
        assert "clients/app (no key left)" in text.replace("  (", " (")
    raw = json.loads(render_json([kraft]))
    assert raw["plans"][0]["backend"] == "kraft" and schema_problem(raw) is None
    assert plan_from_json(plan_to_json(kraft)) == kraft

    zk = _plan("zookeeper")
    assert "backend" not in json.loads(plan_to_json(zk))
    assert "topics/orders (znode version 0)" in render_text([zk]).replace("  (", " (")
    assert zk.plan_id != kraft.plan_id
