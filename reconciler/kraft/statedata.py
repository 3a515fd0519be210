"""The reconciler's own state on a KRaft cluster, as records (key -> JSON value) of a compacted log: the
newest value of a key is the one that counts, as Kafka Connect's config topic and Schema Registry's `_schemas`
work. Where the records live is `kraft/state.py` (a topic in the cluster) or `kraft/localstate.py` (a local
file, when the cluster opts out); what they mean is here:

* `["lock"]`: the apply lease — a token, the holder's claim (who, where, which process, which plan, since
  when: `holder.claim`), a heartbeat counter the holder bumps while it holds it, the lease's length; or
  `released`;
* `["owner"]`: the cluster directory that manages this cluster (`backend.Owner`);
* `["audit", time, planId, token]`: one audit entry per apply (`backend.audit_entry`), never compacted away;
* `["reassignment"]`: the record of the reassignment the reconciler runs (reconciler/reassign/record.py: the
  moves it started and where it set throttles), or a tombstone once its throttles are removed;
* `["written", entity, key]`: the last write of one key by an apply: the operation, a digest of the value
  (sha256 of a non-sensitive value; of a password or SCRAM credential only its fingerprints: the secret
  reference's and a salted PBKDF2 digest, `kraft/passwords.py`), which apply, by whom, when.

From them: the password fingerprints a plan compares against (`applied_passwords`), the audit entries drift
starts from, and when and by which apply each value was last written (drift dating, `kraft/drift.py`).
Nothing here holds a secret value.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reconciler.backend import AuditEntry, AuditInfo, Owner
from reconciler.kraft.operations import KeyWrite

LOCK_KEY = json.dumps(["lock"])
OWNER_KEY = json.dumps(["owner"])
REASSIGNMENT_KEY = json.dumps(["reassignment"])
MAX_ENTRIES = 50  # audit entries kept in a snapshot (newest), as zk/drift.py reads


@dataclass(frozen=True, slots=True)
class Record:
    key: str
    value: Mapping[str, Any] | None  # None: a tombstone
    timestamp_ms: int = 0  # when the log took it (LogAppendTime on the state topic)
    where: str = ""  # `topic@offset`, `file:line`


def value_digest(value: str) -> str:
    """A non-sensitive value's digest: compared with the live value to tell whether a write still holds."""
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class WrittenKey:
    """The last write of one key by an apply, as recorded."""

    entity: str
    key: str
    op: str  # "set" or "delete"
    digest: str | None  # value_digest of a non-sensitive value set
    fingerprint: Mapping[str, str] | None  # a password's or credential's {"ref", "stored"}
    sensitive: bool
    plan_id: str
    user: str
    time_ms: int

    def holds(self, live: str | None) -> bool:
        """Whether the live value is what this write left (a sensitive value: by presence only)."""
        if self.op == "delete":
            return live is None
        if live is None:
            return False
        return self.digest is None or self.digest == value_digest(live)


@dataclass(frozen=True, slots=True)
class LockRecord:
    token: str
    claim: Mapping[str, Any]
    beat: int
    lease_ms: int

    @property
    def version(self) -> tuple[str, int]:
        return (self.token, self.beat)


@dataclass
class State:
    entries: list[AuditEntry] = field(default_factory=list)  # oldest first, the newest MAX_ENTRIES
    written: dict[tuple[str, str], WrittenKey] = field(default_factory=dict)
    lock: LockRecord | None = None
    owner: Owner | None = None
    records: int = 0
    reassignment: Mapping[str, Any] | None = None  # reconciler/reassign/record.py

    def applied_passwords(self) -> dict[str, dict[str, str]]:
        """Per password key (`brokers/1|k.password`), the fingerprints of its last write (empty: removed)."""
        return {f"{w.entity}|{w.key}": dict(w.fingerprint or {}) for w in self.written.values() if w.sensitive}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def fold(records: Iterable[Record]) -> State:
    """The state the records say, read oldest first (a later record of a key replaces an earlier one)."""
    latest: dict[str, Record] = {}
    for record in records:
        latest.pop(record.key, None)  # re-inserted: dict order follows the newest write of each key
        latest[record.key] = record
    state = State(records=len(latest))
    for record in latest.values():
        try:
            key = json.loads(record.key)
        except ValueError:
            continue
        value = record.value
        if not isinstance(key, list) or not key or value is None:
            continue
        if key == ["lock"]:
            state.lock = _lock(value)
        elif key == ["owner"]:
            state.owner = Owner(_text(value.get("cluster")), _text(value.get("claimedBy")), _text(value.get("time")),
                                value.get("planId") if isinstance(value.get("planId"), str) else None)
        elif key == ["reassignment"]:
            state.reassignment = dict(value)
        elif key[0] == "audit":
            state.entries.append(AuditEntry(record.where, dict(value), record.timestamp_ms))
        elif key[0] == "written" and len(key) == 3:
            state.written[(str(key[1]), str(key[2]))] = _written(str(key[1]), str(key[2]), value,
                                                                 record.timestamp_ms)
    state.entries.sort(key=lambda e: e.created_ms)
    state.entries = state.entries[-MAX_ENTRIES:]
    return state


def _lock(value: Mapping[str, Any]) -> LockRecord | None:
    if value.get("released") or not isinstance(value.get("token"), str):
        return None
    claim = value.get("claim")
    beat, lease = value.get("beat"), value.get("leaseMs")
    return LockRecord(value["token"], claim if isinstance(claim, dict) else {},
                      beat if isinstance(beat, int) else 0, lease if isinstance(lease, int) else 30_000)


def _written(entity: str, key: str, value: Mapping[str, Any], ms: int) -> WrittenKey:
    prints = value.get("fingerprint")
    return WrittenKey(entity, key, "delete" if value.get("op") == "delete" else "set",
                      value.get("digest") if isinstance(value.get("digest"), str) else None,
                      {k: v for k, v in prints.items() if isinstance(v, str)} if isinstance(prints, dict) else None,
                      value.get("sensitive") is True, _text(value.get("planId")), _text(value.get("user")), ms)


# --- records an apply writes ----------------------------------------------------------------------------------

def lock_record(token: str, claim: Mapping[str, Any], beat: int, lease_ms: int) -> Record:
    return Record(LOCK_KEY, {"token": token, "claim": dict(claim), "beat": beat, "leaseMs": lease_ms})


def released_record(token: str) -> Record:
    return Record(LOCK_KEY, {"token": token, "released": True})


def owner_record(owner: Owner) -> Record:
    return Record(OWNER_KEY, {"cluster": owner.cluster, "claimedBy": owner.claimed_by, "time": owner.time,
                              "planId": owner.plan_id})


def reassignment_record(record: Mapping[str, Any] | None) -> Record:
    """The reassignment's record (None: a tombstone, it is done)."""
    return Record(REASSIGNMENT_KEY, dict(record) if record is not None else None)


def audit_record(entry: Mapping[str, Any], token: str) -> Record:
    return Record(json.dumps(["audit", entry.get("time"), entry.get("planId"), token]), dict(entry))


def written_records(writes: Sequence[KeyWrite], audit: AuditInfo) -> list[Record]:
    """One record per key written: its digest or fingerprints, never a value."""
    out = []
    for w in writes:
        value: dict[str, Any] = {"op": "delete" if w.removed else "set", "planId": audit.plan_id,
                                 "user": audit.user, "time": audit.time}
        if w.sensitive:
            value["sensitive"] = True
            if w.fingerprint and not w.removed:
                value["fingerprint"] = dict(w.fingerprint)
        elif w.value is not None:
            value["digest"] = value_digest(w.value)
        out.append(Record(json.dumps(["written", w.entity, w.key]), value))
    return out


class Store(Protocol):
    """Where the records live: the state topic (kraft/state.py) or a local file (kraft/localstate.py)."""

    where: str

    def read(self) -> State: ...

    def transact(self, decide: Callable[[State], Sequence[Record]]) -> State:
        """Compare-and-set: write what `decide` returns for the state it is given, with no other write between
        the read and the write; `decide` may raise, and then nothing is written."""
        ...
