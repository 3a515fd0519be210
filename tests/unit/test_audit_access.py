"""An audit entry's access section stays within what one znode or state-topic record holds (issue 44): the
patterns where a principal loses access are detailed first, up to ACCESS_SHOWN, and the counts stay complete."""

from __future__ import annotations

import json

from reconciler.backend import ACCESS_SHOWN, AuditInfo, access_changes, audit_entry
from reconciler.model import AclEntry, AclResource
from reconciler.plan import AclPlan, Plan

READ = AclEntry("User:app", "*", "Read", "Allow")


def acl_plan(i: int, removes: bool) -> AclPlan:
    resource = AclResource("Topic", "LITERAL", f"orders-{i:05d}")
    added = AclEntry(f"User:reader-{i}", "*", "Describe", "Allow")
    if removes:
        return AclPlan(resource, 3, (), (READ,), ())
    return AclPlan(resource, 3, (added,), (), (READ, added))


def test_a_large_access_change_is_detailed_up_to_a_bound_losses_first_with_complete_counts() -> None:
    plans = tuple(acl_plan(i, removes=i in (7, 9_000)) for i in range(10_000))
    access = access_changes(Plan("c1", acls=plans))
    assert [a["resource"] for a in access["acls"][:2]] == ["Topic:LITERAL:orders-00007", "Topic:LITERAL:orders-09000"]
    assert len(access["acls"]) == ACCESS_SHOWN
    assert access["aclsCounted"] == {"patterns": 10_000, "detailed": ACCESS_SHOWN, "added": 9_998, "removed": 2,
                                     "losing": 2}
    entry = audit_entry(AuditInfo("p1", "c1", None, "me@host", "2024-01-01T00:00:00Z"), {}, "applied",
                        access=access)
    assert len(json.dumps(entry).encode()) < 256 * 1024  # every pattern detailed took 1.1 MB


def test_a_small_access_change_is_detailed_whole() -> None:
    plans = tuple(acl_plan(i, removes=i == 1) for i in range(3))
    access = access_changes(Plan("c1", acls=plans))
    assert [a["resource"] for a in access["acls"]] == [f"Topic:LITERAL:orders-{i:05d}" for i in (0, 1, 2)]
    assert "aclsCounted" not in access
