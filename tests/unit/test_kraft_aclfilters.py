"""kraft/operations.py's ACL request shape and kraft/aclfilters.py's choice of one filter per principal, with a
scripted admin (pure logic; the real node judges them in tests/integration/test_kraft_batches.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from reconciler.kraft import operations as ops_module
from reconciler.kraft.aclfilters import coalesced
from reconciler.kraft.admin import Refusal
from reconciler.kraft.operations import operations
from reconciler.kraft.write import write
from reconciler.model import AclEntry, AclResource
from reconciler.plan import AclPlan, Plan


def removal_plan(principals: dict[str, int], added: int = 0) -> Plan:
    acls = []
    for i in range(max([*principals.values(), added])):
        resource = AclResource("Topic", "LITERAL", f"t{i}")
        remove = tuple(AclEntry(p, "*", "Read", "Allow") for p, n in principals.items() if i < n)
        add = (AclEntry("User:new", "*", "Write", "Allow"),) if i < added else ()
        acls.append(AclPlan(resource, None, add=add, remove=remove, after=add))
    return Plan("k1", acls=tuple(acls))


def key(principal: str, i: int, operation: str = "Read") -> tuple[str, ...]:
    return ("Topic", "LITERAL", f"t{i}", principal, "*", operation, "Allow")


class Admin:
    def __init__(self, live: dict[str, list[tuple[str, ...]]], deleted_extra: Sequence[tuple[str, ...]] = (),
                 refuse_create: bool = False) -> None:
        self.live, self.extra, self.refuse_create = live, list(deleted_extra), refuse_create
        self.sent: list[tuple[str, Any]] = []

    def acl_bindings(self, principal: str | None = None) -> list[tuple[str, str, str, list[tuple[str, ...]]]]:
        return [(k[0], k[1], k[2], [k[3:]]) for k in self.live.get(principal or "", [])]

    def delete_acls(self, filters: Sequence[Any]) -> list[Refusal]:
        self.sent.append(("DeleteAcls", len(filters)))
        return []

    def delete_acls_matching(self, acl_filter: Any) -> tuple[Refusal | None, list[tuple[str, ...]]]:
        self.sent.append(("DeleteAcls principal", acl_filter.principal))
        return None, [*self.live.get(acl_filter.principal, []), *self.extra]

    def create_acls(self, acls: Sequence[Any]) -> list[Refusal]:
        self.sent.append(("CreateAcls", len(acls)))
        return [Refusal("x", "SecurityDisabledError", "no", i) for i in range(len(acls))] if self.refuse_create else []


def test_acl_requests_stay_within_kafkas_record_bound_and_group_a_principals_removals(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops_module, "ACL_CREATE_BATCH", 4)
    monkeypatch.setattr(ops_module, "ACL_DELETE_BATCH", 3)
    monkeypatch.setattr(ops_module, "PRINCIPAL_FILTER_MIN", 5)
    steps = operations(removal_plan({"User:a": 7, "User:b": 2, "User:c": 1}, added=9), None).steps
    assert [(s.request, len(s.units), s.principal) for s in steps] == [
        ("CreateAcls", 4, None), ("CreateAcls", 4, None), ("CreateAcls", 1, None),
        ("DeleteAcls", 3, "User:a"), ("DeleteAcls", 3, "User:a"), ("DeleteAcls", 1, "User:a"),
        ("DeleteAcls", 3, None)]  # b's 2 and c's 1 share a request
    assert steps[3].what == "ACL entries of User:a removed (request 1 of 3)"
    assert ops_module.ACL_CREATE_BATCH <= 10_000 and ops_module.ACL_DELETE_BATCH <= 10_000


def test_one_filter_only_when_the_principal_holds_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops_module, "PRINCIPAL_FILTER_MIN", 2)
    plan = removal_plan({"User:a": 3, "User:b": 3})
    admin = Admin({"User:a": [key("User:a", i) for i in range(3)],
                   "User:b": [key("User:b", i) for i in range(3)] + [key("User:b", 9, "Write")]})
    steps = coalesced(admin, operations(plan, None)).steps  # type: ignore[arg-type]
    assert [(s.principal, s.broad, len(s.payloads)) for s in steps] == [("User:a", True, 1), ("User:b", False, 3)]
    report = write(admin, coalesced(admin, operations(plan, None)))  # type: ignore[arg-type]
    assert report.complete and len(report.written) == 6 and not report.restored
    assert admin.sent == [("DeleteAcls principal", "User:a"), ("DeleteAcls", 3)]


def test_an_entry_the_filter_deleted_but_could_not_restore_fails_the_apply_and_stops_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops_module, "PRINCIPAL_FILTER_MIN", 2)
    plan = removal_plan({"User:a": 3, "User:b": 1})
    late = key("User:a", 7, "Describe")
    admin = Admin({"User:a": [key("User:a", i) for i in range(3)]}, deleted_extra=[late], refuse_create=True)
    report = write(admin, coalesced(admin, operations(plan, None)))  # type: ignore[arg-type]
    assert not report.complete and report.lost and "t7" in report.lost[0] and "SecurityDisabledError" in report.lost[0]
    assert [u.label for u in report.not_sent] == ["ACL Topic:LITERAL:t0: Allow User:b Read from * (removed)"]
    assert any("NOT created again" in line for line in report.lines())
    restored = Admin({"User:a": [key("User:a", i) for i in range(3)]}, deleted_extra=[late])
    report = write(restored, coalesced(restored, operations(plan, None)))  # type: ignore[arg-type]
    assert report.complete and report.restored == ["Topic:LITERAL:t7 User:a * Describe Allow"]
    assert ("CreateAcls", 1) in restored.sent
