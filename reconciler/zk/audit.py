"""Audit trail of applies: one sequential znode under `<reconciler_path>/audit` and one JSON line in a log.

An entry says which plan was applied to which cluster, from which git revision, by whom, when, what it
wrote and how it ended. It is built from counts and identifiers only, so it can never carry a secret.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from reconciler.plan import Plan
from reconciler.zk.txn import Group

log = logging.getLogger(__name__)

AUDIT_NODE = "audit"
ENTRY_PREFIX = "entry-"


@dataclass(frozen=True, slots=True)
class AuditInfo:
    """Who applies which plan: `time` is ISO-8601 UTC, `user` e.g. "alice@ops-host"."""

    plan_id: str
    cluster: str
    revision: str | None
    user: str
    time: str
    lock_takeovers: tuple[Mapping[str, Any], ...] = ()  # dead applies whose lock this one took over


def audit_record(info: AuditInfo, counts: Mapping[str, int], result: str) -> dict[str, Any]:
    """The entry's JSON object; `result` is "applied" or a short failure description (never a value)."""
    record: dict[str, Any] = {
        "planId": info.plan_id,
        "cluster": info.cluster,
        "revision": info.revision,
        "user": info.user,
        "time": info.time,
        "counts": dict(counts),
        "result": result,
    }
    if info.lock_takeovers:  # who held the lock, which process, which plan, since when, why it was dead
        record["lockTakeovers"] = [dict(t) for t in info.lock_takeovers]
    return record


def write_audit(
    client: KazooClient,
    reconciler_path: str,
    record: Mapping[str, Any],
    acl_for: Callable[[str], list[Any]],
    audit_log: Path | None,
) -> str:
    """Create `<reconciler_path>/audit/entry-NNNNNNNNNN` and append the same JSON to `audit_log` (if given;
    also when the znode cannot be written, e.g. ZooKeeper went down during the apply).

    Returns the created znode path (relative to the chroot).
    """
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    parent = f"{reconciler_path.rstrip('/')}/{AUDIT_NODE}"
    # kazoo's makepath gives the parents the child's ACL; every level here is "everything else" for
    # Kafka's defaultAcls, so that is the ACL Kafka would choose for them too.
    try:
        path: str = client.create(
            f"{parent}/{ENTRY_PREFIX}",
            text.encode("utf-8"),
            acl=acl_for(parent),
            sequence=True,
            makepath=True,
        )
    finally:  # the local line is written even when ZooKeeper is gone: that is when it matters most
        if audit_log is not None:
            audit_log.parent.mkdir(parents=True, exist_ok=True)
            with audit_log.open("a", encoding="utf-8") as fh:
                fh.write(text + "\n")
    log.info("audit entry %s written", path)
    return path


@dataclass(slots=True)
class Written:
    """What the committed batches wrote (for the result and the audit entry)."""

    entities: int = 0
    notifications: int = 0
    topics: int = 0
    partitions: int = 0
    batches: int = 0

    def add(self, batch: Iterable[Group]) -> None:
        for group in batch:
            self.entities += group.entities
            self.notifications += group.notifications
            self.topics += group.topics
            self.partitions += group.partitions
        self.batches += 1


def counts(plan: Plan, done: Written) -> dict[str, int]:
    """The plan's key-level counts and what the committed batches wrote."""
    planned = plan.counts
    return {
        "add": planned.add, "change": planned.change, "remove": planned.remove,
        "topicsCreated": done.topics, "partitionsAdded": done.partitions,
        "entitiesWritten": done.entities, "notifications": done.notifications,
        "batches": done.batches,
    }


def record_failure(
    client: KazooClient, root: str, audit: AuditInfo, plan: Plan, done: Written, exc: BaseException,
    acls: Callable[[str], list[Any]], audit_log: Path | None,
) -> None:
    """Record what a failed apply committed; only the error's class (a message might quote anything)."""
    try:
        record = audit_record(audit, counts(plan, done), f"failed: {type(exc).__name__}")
        write_audit(client, root, record, acls, audit_log)
    except Exception as audit_exc:  # never hide the original error
        local = audit_log is not None and not isinstance(audit_exc, OSError)  # the finally clause wrote it
        where = f"ZooKeeper's audit trail (the entry is in {audit_log})" if local else "the audit trail"
        log.warning("could not record the failed apply in %s: %r", where, audit_exc)
