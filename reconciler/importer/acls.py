"""Import's `Acls` document: every live ACL resource pattern as a `resources` item, its entries grouped by
(principal, host, permission) into one entry with its operations, so that a plan on it shows no ACL change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.model import AclResource, LiveAcls


def acls_doc(live: Mapping[AclResource, LiveAcls] | None) -> dict[str, Any] | None:
    if not live:
        return None
    resources: list[dict[str, Any]] = []
    for resource in sorted(live):
        grouped: dict[tuple[str, str, str], set[str]] = {}
        for e in live[resource].entries:
            grouped.setdefault((e.principal, e.host, e.permission), set()).add(e.operation)
        if not grouped:
            continue  # a resource znode without entries: nothing to declare (Kafka deletes such nodes)
        entries: list[dict[str, Any]] = []
        for (principal, host, permission), ops in sorted(grouped.items()):
            entry: dict[str, Any] = {"principal": principal}
            if host != "*":
                entry["host"] = host
            entry["operations"] = sorted(ops)
            if permission != "Allow":
                entry["permission"] = permission
            entries.append(entry)
        item: dict[str, Any] = {"type": resource.resource_type, "name": resource.name}
        if resource.pattern != "LITERAL":
            item["pattern"] = resource.pattern
        item["entries"] = entries
        resources.append(item)
    if not resources:
        return None
    return {"apiVersion": "reconciler/v1", "kind": "Acls", "meta": {}, "spec": {"resources": resources}}


__all__ = ["acls_doc"]
