"""Drift dating on KRaft, from what each apply recorded it wrote (kraft/statedata.py `written` records): a
drifted value that is the one an apply last wrote was changed by the reconciler — that apply, by whom, when
(the brokers' append time of its record); any other was changed outside the reconciler (`kafka-configs.sh`,
another tool): the cluster records no author, but it is certainly not an apply's value. ZooKeeper mode dates by
znode mtimes instead (zk/drift.py); both fill the same `DriftItem`s for `gitops/drift.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reconciler.backend import AuditEntry, DriftItem, DriftSubject, iso
from reconciler.kraft.statedata import State, WrittenKey
from reconciler.model import EntityRef, LiveState

OUTSIDE = "outside the reconciler"


def _live_value(live: LiveState, subject: DriftSubject, item: DriftItem) -> str | None:
    if isinstance(subject, EntityRef):
        entity = live.entities.get(subject)
        return None if entity is None else entity.config.get(item.key)
    return item.live  # topics and ACLs: the plan's reading of the live side ("present", a partition count)


def _who(written: WrittenKey, entries: Sequence[AuditEntry]) -> str:
    entry = next((e for e in reversed(entries) if e.record.get("planId") == written.plan_id), None)
    result = entry.record.get("result") if entry is not None else None
    return (f"the reconciler: {result + ' ' if result else ''}apply {written.plan_id[:12]} by {written.user} at "
            f"{iso(written.time_ms)}")


def date_drift(state: State, items: Sequence[tuple[DriftSubject, DriftItem]], since: AuditEntry,
               later: Sequence[AuditEntry], live: LiveState, detailed: bool) -> list[DriftItem]:
    """Each item with the apply that last wrote its live value, or OUTSIDE. Without the manifests of the last
    apply (`detailed` False) every key an apply recorded is looked at: those written after `since`, and those
    whose live value is no longer what the reconciler wrote."""
    if not detailed:
        return _undetailed(state, since, live)
    out = []
    for subject, item in items:
        written = state.written.get((item.entity, item.key))
        now = _live_value(live, subject, item)
        if written is not None and written.holds(now) and written.time_ms < since.created_ms:
            out.append(replace(item, modified=iso(written.time_ms), by=f"unknown: the value apply "
                               f"{written.plan_id[:12]} wrote before the last apply (not converged then?)"))
        elif written is not None and written.holds(now):
            out.append(replace(item, modified=iso(written.time_ms), by=_who(written, [since, *later])))
        else:
            out.append(replace(item, by=OUTSIDE + (f" (the last apply to write it: {written.plan_id[:12]} at "
                                                   f"{iso(written.time_ms)})" if written else "")))
    return out


def _undetailed(state: State, since: AuditEntry, live: LiveState) -> list[DriftItem]:
    by_display = {ref.display: ref for ref in live.entities}
    out = []
    for (entity, key), written in sorted(state.written.items()):
        ref = by_display.get(entity)
        if not entity.startswith(("brokers/", "topics/", "users/", "clients/", "ips/")):
            continue
        now = live.entities[ref].config.get(key) if ref is not None else None
        if not written.holds(now):
            out.append(DriftItem(entity, key, None if written.op == "delete" else "(as written)", now,
                                 by=OUTSIDE + f" (the last apply to write it: {written.plan_id[:12]} at "
                                              f"{iso(written.time_ms)})"))
        elif written.time_ms > since.created_ms:
            out.append(DriftItem(entity, key, None, now, modified=iso(written.time_ms),
                                 by=_who(written, state.entries)))
    return out
