"""Drift: what changed live since the last apply, and by whom when that can be known.

The last apply is the newest `applied` entry under `<reconciler path>/audit`; it names the git revision that
was applied. The manifests of that revision, planned against the live state read now, give exactly the keys
that moved since: a `+` is a key removed live, `~` a value changed live, `-` a key added live. For each
drifted entity: its znode's mtime and, while Kafka still keeps it (15 minutes by default), the change
notification written after the apply. ZooKeeper does not record who wrote a znode; an audit entry does, so a
later (failed, partial) apply is named when the change is its.

Without the manifests of that revision (no git history, a dirty apply, a revision that is gone) the report
falls back to the entities whose znode was modified after the apply, without key detail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from reconciler.errors import ReconcilerError
from reconciler.model import LiveState
from reconciler.plan import Plan
from reconciler.zk.acls import resource_path
from reconciler.zk.audit import AUDIT_NODE
from reconciler.zk.bulkread import read_all
from reconciler.zk.layout import CONFIG_CHANGES_PATH, decode_notification, entity_path, topic_path

MAX_ENTRIES_READ = 50  # audit entries looked at, newest first, to find the last successful apply
READ_TIMEOUT_S = 30.0
OUTSIDE = "outside the reconciler (ZooKeeper does not record who)"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    path: str
    record: Mapping[str, Any]
    created_ms: int  # the entry znode's ctime: written after the apply's last write

    @property
    def revision(self) -> str | None:
        value = self.record.get("revision")
        return str(value) if value else None

    @property
    def user(self) -> str:
        return str(self.record.get("user") or "unknown")

    @property
    def time(self) -> str:
        return iso(self.created_ms)


@dataclass(frozen=True, slots=True)
class DriftItem:
    entity: str  # "brokers/<default>", "topics/orders", "acls/Topic:PREFIXED:app-"
    key: str  # a config key, "(topic)", "(partitions)", an ACL entry; "*" when only the znode's mtime is known
    expected: str | None  # at the last apply (None: the key was not there)
    live: str | None  # now (None: the key is gone)
    modified: str | None = None  # the znode's mtime, ISO-8601 UTC
    notified: str | None = None  # a change notification for the entity written after the apply
    by: str = OUTSIDE


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


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_audit(client: KazooClient, reconciler_path: str) -> list[AuditEntry]:
    """The newest audit entries (up to MAX_ENTRIES_READ), oldest first; unreadable ones are skipped."""
    parent = f"/{reconciler_path.strip('/')}/{AUDIT_NODE}"
    try:
        names = sorted(client.get_children(parent))[-MAX_ENTRIES_READ:]
    except NoNodeError:
        return []
    # one multiRead for the lot (pipelined gets on an older server), not one kazoo request per entry
    found = read_all(client, [f"{parent}/{n}" for n in names], READ_TIMEOUT_S)
    entries: list[AuditEntry] = []
    for path, item in found.items():
        if item is None:  # deleted since the listing
            continue
        try:
            record = json.loads(item[0] or b"")
        except ValueError:
            continue
        if isinstance(record, dict):
            entries.append(AuditEntry(path, record, int(item[1].ctime)))
    return entries


def last_apply(entries: Sequence[AuditEntry]) -> AuditEntry | None:
    return next((e for e in reversed(entries) if e.record.get("result") == "applied"), None)


def _items_from_plan(plan: Plan) -> list[tuple[str, DriftItem]]:
    """(znode dating the change, item) from the plan last-applied manifests -> live, read backwards: the
    plan's `before` is the live value now, its `after` the value applied."""
    items: list[tuple[str, DriftItem]] = []
    for entity in plan.entities:
        path = entity_path(entity.ref)
        for c in entity.changes:
            expected = None if c.op == "-" else ("(sensitive)" if c.sensitive else c.after)
            live = None if c.op == "+" else ("(sensitive)" if c.sensitive else c.before)
            items.append((path, DriftItem(entity.ref.display, c.key, expected, live)))
    for t in plan.topics_to_create:  # deleted live
        items.append((topic_path(t.name), DriftItem(f"topics/{t.name}", "(topic)", "exists", None)))
    for p in plan.partition_increases:  # recreated with fewer partitions
        items.append((topic_path(p.name), DriftItem(f"topics/{p.name}", "(partitions)", str(p.target),
                                                    str(p.current))))
    for a in plan.acls:  # an entry the plan adds was removed live; one it removes was added live
        path, name = resource_path(a.resource), f"acls/{a.resource.display}"
        items += [(path, DriftItem(name, e.display, "present", None)) for e in a.add]
        items += [(path, DriftItem(name, e.display, None, "present")) for e in a.remove]
    return items


def _stats(client: KazooClient, paths: Iterable[str]) -> dict[str, Any]:
    futures = {p: client.exists_async(p) for p in set(paths)}
    out: dict[str, Any] = {}
    for path, future in futures.items():
        try:
            out[path] = future.get(timeout=READ_TIMEOUT_S)
        except KazooException:
            out[path] = None
    return out


def _notifications(client: KazooClient, after_ms: int) -> dict[str, int]:
    """Entity path -> ctime of its newest change notification created after `after_ms`."""
    try:
        names = client.get_children(CONFIG_CHANGES_PATH)
    except NoNodeError:
        return {}
    futures = [(n, client.get_async(f"{CONFIG_CHANGES_PATH}/{n}")) for n in names]
    newest: dict[str, int] = {}
    for name, future in futures:
        try:
            data, stat = future.get(timeout=READ_TIMEOUT_S)
            if stat.ctime > after_ms:
                path = entity_path(decode_notification(data, f"{CONFIG_CHANGES_PATH}/{name}"))
                newest[path] = max(newest.get(path, 0), int(stat.ctime))
        except (KazooException, ReconcilerError, ValueError):
            continue  # gone meanwhile, or not a notification we can read
    return newest


def _who(modified_ms: int | None, since: AuditEntry, later: Sequence[AuditEntry]) -> str:
    if modified_ms is None:
        return OUTSIDE
    if modified_ms <= since.created_ms:
        return "unknown: before the last apply (not converged then?)"
    for entry in later:  # a failed apply after the last good one may have written part of its plan
        if entry.created_ms >= modified_ms:
            return f"the reconciler: {entry.record.get('result')} apply by {entry.user} at {entry.time}"
    return OUTSIDE


def drift_report(
    client: KazooClient,
    cluster: str,
    entries: Sequence[AuditEntry],
    live: LiveState,
    plan_since: Callable[[AuditEntry], Plan | None],
) -> DriftReport:
    """`plan_since(entry)`: the plan from the manifests of the entry's revision to `live`, None when those
    manifests cannot be read (then only znode mtimes are compared)."""
    since = last_apply(entries)
    if since is None:
        return DriftReport(cluster, None, note="no successful apply recorded yet: nothing to compare with")
    later = [e for e in entries if e.created_ms > since.created_ms]
    plan = plan_since(since)
    note = None
    if plan is not None:
        items = _items_from_plan(plan)
    else:
        note = (f"the manifests of revision {since.revision or '(none recorded)'} cannot be read: entities "
                "modified since the last apply are listed without key detail")
        refs = sorted(live.entities, key=str)
        items = [(entity_path(ref), DriftItem(ref.display, "*", None, None)) for ref in refs]
    # the live read already holds every config znode's mtime: ask ZooKeeper only for the other paths
    known = {entity_path(ref): e.mtime_ms for ref, e in live.entities.items() if e.mtime_ms is not None}
    stats = _stats(client, (path for path, _ in items if path not in known))
    notified = _notifications(client, since.created_ms) if items else {}
    out: list[DriftItem] = []
    for path, item in items:
        stat = stats.get(path)
        mtime = known[path] if path in known else int(stat.mtime) if stat is not None else None
        if plan is None and (mtime is None or mtime <= since.created_ms):
            continue
        note_ms = notified.get(path)
        out.append(replace(
            item,
            modified=iso(mtime) if mtime is not None else None,
            notified=iso(note_ms) if note_ms is not None else None,
            by=_who(mtime, since, later),
        ))
    return DriftReport(cluster, since, tuple(out), note)
