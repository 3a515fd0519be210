"""Drift: what changed live since the last apply, and by whom when that can be known.

The last apply is the newest `applied` audit entry the cluster's backend keeps (ZooKeeper: znodes under
`<reconciler path>/audit`; KRaft: the state topic); it names the git revision that was applied. The manifests
of that revision, planned against the live state read now, give exactly the keys that moved since: a `+` is a
key removed live, `~` a value changed live, `-` a key added live. The backend dates each item
(`Connection.date_drift`): ZooKeeper from znode mtimes, change notifications and later audit entries
(zk/drift.py); KRaft from the value each apply recorded it wrote (kraft/state.py).

Without the manifests of that revision (no git history, a dirty apply, a revision that is gone) the report
falls back to the entities modified after the apply, without key detail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.backend import AuditEntry, Connection, DriftItem, DriftSubject, last_apply
from reconciler.model import LiveState
from reconciler.plan import Plan

__all__ = ["AuditEntry", "DriftItem", "DriftReport", "drift_report", "last_apply"]


@dataclass(frozen=True, slots=True)
class DriftReport:
    cluster: str
    since: AuditEntry | None  # the last successful apply
    items: tuple[DriftItem, ...] = ()
    note: str | None = None  # why the report is partial or empty

    def to_json(self) -> dict[str, Any]:
        return {
            "since": None if self.since is None else {
                "revision": self.since.revision, "user": self.since.user, "time": self.since.time,
                "planId": self.since.record.get("planId"), "entry": self.since.path,
            },
            "items": [
                {"entity": i.entity, "key": i.key, "expected": i.expected, "live": i.live,
                 "modified": i.modified, "notified": i.notified, "by": i.by}
                for i in self.items
            ],
            "note": self.note,
        }


def _items_from_plan(plan: Plan) -> list[tuple[DriftSubject, DriftItem]]:
    """(what dates the change, item) from the plan last-applied manifests -> live, read backwards: the plan's
    `before` is the live value now, its `after` the value applied."""
    items: list[tuple[DriftSubject, DriftItem]] = []
    for entity in plan.entities:
        for c in entity.changes:
            expected = None if c.op == "-" else ("(sensitive)" if c.sensitive else c.after)
            live = None if c.op == "+" else ("(sensitive)" if c.sensitive else c.before)
            items.append((entity.ref, DriftItem(entity.ref.display, c.key, expected, live)))
    for t in plan.topics_to_create:  # deleted live
        items.append((t.name, DriftItem(f"topics/{t.name}", "(topic)", "exists", None)))
    for p in plan.partition_increases:  # recreated with fewer partitions
        items.append((p.name, DriftItem(f"topics/{p.name}", "(partitions)", str(p.target), str(p.current))))
    for a in plan.acls:  # an entry the plan adds was removed live; one it removes was added live
        name = f"acls/{a.resource.display}"
        items += [(a.resource, DriftItem(name, e.display, "present", None)) for e in a.add]
        items += [(a.resource, DriftItem(name, e.display, None, "present")) for e in a.remove]
    return items


def drift_report(
    connection: Connection,
    cluster: str,
    entries: Sequence[AuditEntry] | None,
    live: LiveState,
    plan_since: Callable[[AuditEntry], Plan | None],
) -> DriftReport:
    """`plan_since(entry)`: the plan from the manifests of the entry's revision to `live`, None when those
    manifests cannot be read (then only what the backend knows was modified since is listed). `entries` None:
    the cluster keeps no audit trail to date drift by."""
    if entries is None:
        return DriftReport(cluster, None, note="this cluster keeps no audit trail to date drift by (the plan "
                                               "shows every difference)")
    since = last_apply(entries)
    if since is None:
        return DriftReport(cluster, None, note="no successful apply recorded yet: nothing to compare with")
    later = [e for e in entries if e.created_ms > since.created_ms]
    plan = plan_since(since)
    note = None
    items: list[tuple[DriftSubject, DriftItem]]
    if plan is not None:
        items = _items_from_plan(plan)
    else:
        note = (f"the manifests of revision {since.revision or '(none recorded)'} cannot be read: entities "
                "modified since the last apply are listed without key detail")
        items = [(ref, DriftItem(ref.display, "*", None, None)) for ref in sorted(live.entities, key=str)]
    dated = connection.date_drift(items, since, later, live, plan is not None)
    return DriftReport(cluster, since, tuple(dated), note)
