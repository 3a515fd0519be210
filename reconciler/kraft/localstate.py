"""A KRaft cluster's reconciler state in a local file, for a cluster that opts out of the state topic
(`spec.kraft.localState: true`): the same records as the topic (kraft/statedata.py), one JSON line each, in
`kraft-state-<cluster>.jsonl` beside the local audit log (RECONCILER_AUDIT_LOG's directory, by default
`~/.local/state/kafka-reconciler/`). A compare-and-set holds an exclusive `flock` on the file.

Only this machine sees it: a plan elsewhere does not know what was applied here (a password is then
`unknown`), and the apply lock serialises the applies of this machine only. That is the opt-out's price;
docs/kraft.md says so.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from reconciler.errors import ReconcilerError
from reconciler.kraft.passwords import applied_passwords, default_audit_log
from reconciler.kraft.statedata import Record, State, WrittenKey, fold


def state_file(cluster: str) -> Path:
    return default_audit_log().parent / f"kraft-state-{cluster}.jsonl"


class LocalStore:
    def __init__(self, cluster: str, path: Path | None = None) -> None:
        self.cluster = cluster
        self.path = path or state_file(cluster)
        self.where = f"local state file {self.path}"
        self._mutex = threading.Lock()

    def read(self) -> State:
        state = fold(self._records())
        # fingerprints an older version recorded in the audit log only (before this file existed)
        for key, prints in applied_passwords(default_audit_log(), self.cluster).items():
            entity, _, name = key.partition("|")
            if (entity, name) not in state.written:
                state.written[(entity, name)] = WrittenKey(entity, name, "set" if prints else "delete", None,
                                                           prints or None, True, "", "", 0)
        return state

    def _records(self) -> list[Record]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ReconcilerError(f"cluster {self.cluster}: cannot read the {self.where} "
                                  f"({type(exc).__name__})") from None
        out = []
        for number, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                value = item.get("value")
                out.append(Record(item["key"], value if isinstance(value, dict) else None, int(item.get("ms") or 0),
                                  f"{self.path}:{number}"))
        return out

    def transact(self, decide: Callable[[State], Sequence[Record]]) -> State:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._mutex, open(self.path, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                state = self.read()
                now = int(time.time() * 1000)
                for r in decide(state):
                    handle.write(json.dumps({"key": r.key, "value": r.value, "ms": now}, separators=(",", ":"),
                                            sort_keys=True) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
                return state
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
