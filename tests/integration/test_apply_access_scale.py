"""Issue 44: an apply that changes 12,000 ACL resource patterns on a real ZooKeeper. Every pattern's transaction
commits and so does the audit entry: detailing every pattern made it 1.3 MB, which ZooKeeper refuses (more than
jute.maxbuffer), so the apply ended with ConnectionLoss after writing every ACL."""

from __future__ import annotations

import json
from dataclasses import replace

from kazoo.client import KazooClient

from reconciler.backend import ACCESS_SHOWN
from reconciler.model import AclEntry, AclResource, DesiredAcls
from reconciler.zk.acls import decode_acls, resource_path
from tests.integration.test_apply import apply, desired, make_plan

PATTERNS = 12_000


def test_an_apply_of_12000_acl_patterns_commits_with_its_audit_entry(zk_client: KazooClient) -> None:
    entries = {AclResource("Topic", "LITERAL", f"orders-{i:05d}"):
               frozenset({AclEntry(f"User:reader-{i % 97}", "*", "Read", "Allow")}) for i in range(PATTERNS)}
    state = replace(desired(), acls={r: DesiredAcls(r, e) for r, e in entries.items()})
    plan = make_plan(zk_client, state)
    assert len(plan.acls) == PATTERNS
    result = apply(zk_client, plan)
    assert result.entities_written == PATTERNS
    for resource in (AclResource("Topic", "LITERAL", "orders-00000"), AclResource("Topic", "LITERAL", "orders-11999")):
        data, _ = zk_client.get(resource_path(resource))
        assert decode_acls(data, "test") == entries[resource]
    (entry,) = zk_client.get_children("/reconciler/audit")
    record = json.loads(zk_client.get(f"/reconciler/audit/{entry}")[0])
    assert record["result"] == "applied"
    assert record["access"]["aclsCounted"] == {"patterns": PATTERNS, "detailed": ACCESS_SHOWN, "added": PATTERNS,
                                               "removed": 0, "losing": 0}
