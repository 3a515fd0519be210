"""Audit trail of applies: one sequential znode under `<reconciler_path>/audit` and one JSON line in a log.

An entry says which plan was applied to which cluster, from which git revision, by whom, when, what it
wrote and how it ended. It is built from counts and identifiers only, so it can never carry a secret.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reconciler.backend import AuditInfo, access_changes, audit_entry
from reconciler.errors import RefusedError
from reconciler.model import DesiredState, LiveState, SecretRef
from reconciler.plan import Plan
from reconciler.rules.cluster import kafka_namespace_problem

if TYPE_CHECKING:  # apply's batches; a plan reads the audit trail without importing the writer
    from reconciler.zk.txn import Group

__all__ = ["AuditInfo", "access_changes", "audit_record", "write_audit"]

log = logging.getLogger(__name__)

AUDIT_NODE = "audit"
ENTRY_PREFIX = "entry-"


def audit_record(
    info: AuditInfo, counts: Mapping[str, int], result: str,
    passwords: Mapping[str, Mapping[str, str]] | None = None,
    interruption: Interruption | None = None,
    access: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The entry's JSON object (`backend.audit_entry`); `interruption`: what an interrupted apply committed and
    did not (counts and first units)."""
    return audit_entry(info, counts, result, passwords=passwords, access=access,
                       interruption=None if interruption is None else interruption.record())


def write_audit(
    client: KazooClient,
    reconciler_path: str,
    record: Mapping[str, Any],
    acl_for: Callable[[str], list[Any]],
    audit_log: Path | None,
    timeout_s: float | None = None,
) -> str:
    """Create `<reconciler_path>/audit/entry-NNNNNNNNNN` and append the same JSON to `audit_log` (if given;
    also when the znode cannot be written, e.g. ZooKeeper went down during the apply). `timeout_s` bounds the
    wait for ZooKeeper (after a second signal the operator wants out: the local line is written regardless).

    Returns the created znode path (relative to the chroot).
    """
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    parent = f"{reconciler_path.rstrip('/')}/{AUDIT_NODE}"
    problem = kafka_namespace_problem(parent, client.chroot or "")  # never in any chroot's Kafka namespace
    if problem is not None:
        raise RefusedError(f"refusing to create {client.chroot or ''}{parent}: {problem}")
    # kazoo's makepath gives the parents the child's ACL; every level here is "everything else" for
    # Kafka's defaultAcls, so that is the ACL Kafka would choose for them too.
    try:
        created = client.create_async(
            f"{parent}/{ENTRY_PREFIX}",
            text.encode("utf-8"),
            acl=acl_for(parent),
            sequence=True,
            makepath=True,
        )
        path: str = created.get(timeout=timeout_s)
    finally:  # the local line is written even when ZooKeeper is gone: that is when it matters most
        if audit_log is not None:
            audit_log.parent.mkdir(parents=True, exist_ok=True)
            with audit_log.open("a", encoding="utf-8") as fh:
                fh.write(text + "\n")
    log.info("audit entry %s written", path)
    return path


FIRST_UNITS = 5  # how many committed / not committed units (entities, topics) an interrupted apply names


@dataclass(slots=True)
class Written:
    """What the committed batches wrote (for the result and the audit entry), with the labels of the first
    FIRST_UNITS units (an entity or users family, a topic) in plan order."""

    entities: int = 0
    notifications: int = 0
    topics: int = 0
    partitions: int = 0
    batches: int = 0
    units: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, batch: Iterable[Group]) -> None:
        for group in batch:
            self.entities += group.entities
            self.notifications += group.notifications
            self.topics += group.topics
            self.partitions += group.partitions
            self.units += 1
            if len(self.first) < FIRST_UNITS:
                self.first.append(group.label)
        self.batches += 1

    @classmethod
    def of(cls, batches: Iterable[Iterable[Group]]) -> Written:
        out = cls()
        for batch in batches:
            out.add(batch)
        return out

    def summary(self) -> dict[str, Any]:
        """Counts and first units, as the audit entry and the operator's message both state them."""
        return {
            "entitiesWritten": self.entities, "notifications": self.notifications,
            "topicsCreated": self.topics, "partitionsAdded": self.partitions,
            "batches": self.batches, "units": self.units, "first": list(self.first),
        }


@dataclass(frozen=True, slots=True)
class Interruption:
    """What an interrupted apply committed, what it did not, and the batches whose outcome is unknown (only when
    a second signal ended the wait for their replies and ZooKeeper did not say in time which committed)."""

    total_batches: int
    committed: Written
    not_committed: Written
    # those batches (from committed.batches + 1): each committed entirely or not at all, a prefix of them
    in_flight: Written | None = None

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "batches": self.total_batches,
            "committed": self.committed.summary(),
            "notCommitted": self.not_committed.summary(),
        }
        if self.in_flight is not None:
            out["unknown"] = {**self.in_flight.summary(), "batch": self.committed.batches + 1}  # the first
        return out


def counts(plan: Plan, done: Written) -> dict[str, int]:
    """The plan's key-level counts and what the committed batches wrote."""
    planned = plan.counts
    return {
        "add": planned.add, "change": planned.change, "remove": planned.remove,
        "topicsCreated": done.topics, "partitionsAdded": done.partitions,
        "entitiesWritten": done.entities, "notifications": done.notifications,
        "batches": done.batches,
        **({"aclEntries": planned.acl_entries} if planned.acl_entries else {}),
    }


def record_failure(
    client: KazooClient, root: str, audit: AuditInfo, plan: Plan, done: Written, exc: BaseException | None,
    acls: Callable[[str], list[Any]], audit_log: Path | None, interruption: Interruption | None = None,
    timeout_s: float | None = None,
) -> str | None:
    """Record what a failed (or, with `interruption`, an interrupted) apply committed; of an error only its
    class (a message might quote anything). Returns the entry's znode, None when ZooKeeper did not take it."""
    result = "interrupted" if interruption is not None else f"failed: {type(exc).__name__}"
    try:
        record = audit_record(audit, counts(plan, done), result, interruption=interruption,
                              access=access_changes(plan))
        return write_audit(client, root, record, acls, audit_log, timeout_s)
    except Exception as audit_exc:  # never hide the original error
        local = audit_log is not None and not isinstance(audit_exc, OSError)  # the finally clause wrote it
        where = f"ZooKeeper's audit trail (the entry is in {audit_log})" if local else "the audit trail"
        log.warning("could not record the %s apply in %s: %s", "interrupted" if interruption else "failed",
                    where, type(audit_exc).__name__)
        return None


AUDIT_ENTRIES_FOR_PASSWORDS = 100  # the newest entries searched for password fingerprints


def applied_passwords(client: KazooClient, reconciler_path: str) -> dict[str, dict[str, str]]:
    """Per password key, the fingerprints the newest successful apply that wrote it recorded (an empty dict:
    that apply removed it). Reads the newest AUDIT_ENTRIES_FOR_PASSWORDS entries, pipelined."""
    parent = f"/{reconciler_path.strip('/')}/{AUDIT_NODE}"
    try:
        names = sorted(client.get_children(parent), reverse=True)[:AUDIT_ENTRIES_FOR_PASSWORDS]
    except NoNodeError:
        return {}
    futures = [client.get_async(f"{parent}/{name}") for name in names]
    found: dict[str, dict[str, str]] = {}
    for future in futures:  # newest first: the first entry naming a key wins
        try:
            data, _ = future.get(timeout=30)
            record = json.loads(data)
        except (NoNodeError, ValueError):
            continue
        passwords = record.get("passwords") if isinstance(record, dict) and record.get("result") == "applied" else None
        if not isinstance(passwords, dict):
            continue
        for key, prints in passwords.items():
            if isinstance(key, str) and isinstance(prints, dict) and key not in found:
                found[key] = {k: v for k, v in prints.items() if isinstance(k, str) and isinstance(v, str)}
    return found


def with_applied_passwords(client: KazooClient, desired: DesiredState, live: LiveState) -> LiveState:
    """`live` with the fingerprints of applied passwords, read only when the manifests name a secret for a
    key that holds a Kafka-encoded value live (otherwise no comparison can need them)."""
    wanted = {(ref, key) for ref, e in desired.entities.items() for key, v in e.config.items()
              if isinstance(v.value, SecretRef)}
    if not any(key in live.entities[ref].config for ref, key in wanted if ref in live.entities):
        return live
    return replace(live, applied_passwords=applied_passwords(client, desired.cluster.zookeeper.reconciler_path))
