"""Apply's ACL writes (only the apply path loads this, with the transaction module): per resource pattern one
transaction group of the version-guarded write and its change notification, as `zk/acls.py` describes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reconciler.plan import AclPlan
from reconciler.zk.acls import encode_acls, encode_change, resource_path
from reconciler.zk.txn import Group, Op


def acl_groups(plans: Sequence[AclPlan], acl_for: Callable[[str], list[Any]]) -> list[Group]:
    """One transaction group per resource: the guarded write (create / set / delete) and its notification."""
    groups: list[Group] = []
    for a in plans:
        path = resource_path(a.resource)
        if not a.after:
            if a.base_version is None:
                continue
            op = Op("delete", path, version=a.base_version)
        elif a.base_version is None:
            op = Op("create", path, encode_acls(a.after), acl=acl_for(path))
        else:
            op = Op("set", path, encode_acls(a.after), version=a.base_version)
        prefix, data = encode_change(a.resource)
        notify = Op("create", prefix, data, acl=acl_for(prefix), sequential=True)
        groups.append(Group(f"acls/{a.resource.display}", [op, notify], entities=1, notifications=1))
    return groups


__all__ = ["acl_groups"]
