"""Drift dating in ZooKeeper mode: the audit entries under `<reconciler path>/audit`, and for each drifted
entity its znode's mtime and, while Kafka still keeps it (15 minutes by default), the change notification
written after the last apply. ZooKeeper does not record who wrote a znode; an audit entry does, so a later
(failed, partial) apply is named when a change is its (`gitops/drift.py` builds the report).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from reconciler.backend import AuditEntry, DriftItem, DriftSubject, iso
from reconciler.errors import ReconcilerError
from reconciler.model import EntityRef, LiveState
from reconciler.zk.acls import resource_path
from reconciler.zk.audit import AUDIT_NODE
from reconciler.zk.bulkread import read_all
from reconciler.zk.layout import CONFIG_CHANGES_PATH, decode_notification, entity_path, topic_path

MAX_ENTRIES_READ = 50  # audit entries looked at, newest first, to find the last successful apply
READ_TIMEOUT_S = 30.0
OUTSIDE = "outside the reconciler (ZooKeeper does not record who)"


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


def subject_path(subject: DriftSubject) -> str:
    """The znode whose mtime dates a change of `subject`."""
    if isinstance(subject, EntityRef):
        return entity_path(subject)
    if isinstance(subject, str):
        return topic_path(subject)
    return resource_path(subject)


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


def date_drift(client: KazooClient, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
               later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
    """Each item with its znode's mtime, a notification after `since`, and who wrote it when an audit entry
    says so; without key detail (`detailed` False) only the entities modified after `since`."""
    located = [(subject_path(subject), item) for subject, item in items]
    # the live read already holds every config znode's mtime: ask ZooKeeper only for the other paths
    known = {entity_path(ref): e.mtime_ms for ref, e in live.entities.items() if e.mtime_ms is not None}
    stats = _stats(client, (path for path, _ in located if path not in known))
    notified = _notifications(client, since.created_ms) if located else {}
    out: list[DriftItem] = []
    for path, item in located:
        stat = stats.get(path)
        mtime = known[path] if path in known else int(stat.mtime) if stat is not None else None
        if not detailed and (mtime is None or mtime <= since.created_ms):
            continue
        note_ms = notified.get(path)
        out.append(replace(
            item,
            modified=iso(mtime) if mtime is not None else None,
            notified=iso(note_ms) if note_ms is not None else None,
            by=_who(mtime, since, later),
        ))
    return out
