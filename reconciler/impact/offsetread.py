"""One cluster's log and consumer offsets for the inventory (`snapshot`, and `impact` without an inventory).

Which ages are read: the ladder (`unread.LADDER_MS`, for the lag in time and for retentions nobody foresaw) and
every time retention in use or planned in the cluster: the live topic overrides and broker configs, the manifests'
topics, broker configs and server.properties (`log.retention.minutes` / `.hours` as milliseconds). A pull
request's new value is then read exactly whenever the snapshot is taken from its branch (or `impact` reads live);
an inventory taken before it brackets it by the ages around it (`unread.time_boundary`).

A cluster whose manifests name no Admin API endpoint, or whose brokers cannot be reached, is snapshotted without
offsets: inventory.json says why (`offsets.<cluster>.notRead`), and the report says "not known" for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.impact.inventory import Rows, offset_rows
from reconciler.model import DesiredState, LiveState, SecretRef
from reconciler.progress import Progress
from reconciler.unread import LADDER_MS, GroupRisk, topic_risks

log = logging.getLogger(__name__)
# time retention keys and their factor to milliseconds (Kafka's synonyms of retention.ms, KafkaConfig)
RETENTION_KEYS = {"retention.ms": 1, "log.retention.ms": 1, "log.retention.minutes": 60_000,
                  "log.retention.hours": 3_600_000}


def _ages(pairs: Iterable[tuple[str, object]]) -> set[int]:
    out = set()
    for key, value in pairs:
        factor = RETENTION_KEYS.get(key)
        if factor is None or isinstance(value, SecretRef):
            continue
        try:
            number = int(str(value).strip())
        except ValueError:
            continue
        if 0 <= number <= (1 << 62) // factor:
            out.add(number * factor)
    return out


def retention_ages(desired: DesiredState, live: LiveState) -> list[int]:
    """The ladder and every time retention in the live configs and the manifests, ascending."""
    pairs: list[tuple[str, object]] = [(k, v) for e in live.entities.values() for k, v in e.config.items()]
    pairs += [(k, dv.value) for e in desired.entities.values() for k, dv in e.config.items()]
    pairs += [(k, dv.value) for t in desired.topics.values() for k, dv in t.config.items()]
    pairs += [(k, dv.value) for props in desired.static.values() for k, dv in props.items()]
    return sorted(set(LADDER_MS) | _ages(pairs))


def cluster_offsets(desired: DesiredState, live: LiveState, root: Path, progress: Progress
                    ) -> tuple[Rows, dict[str, Any]]:
    """The offset rows of one cluster and what inventory.json says of them; no rows (and why) when they cannot
    be read."""
    from reconciler.brokers.offsets import admin_spec_of, offsets_admin, read_offsets

    name = desired.cluster.name
    if admin_spec_of(desired.cluster) is None:
        return {}, {"notRead": "the manifests name no Admin API endpoint (spec.adminClient)"}
    try:
        with progress.phase(f"{name}: consumer offsets") as phase, offsets_admin(desired.cluster, root) as admin:
            found = read_offsets(admin, name, retention_ages(desired, live),
                                 step=lambda done, total: phase.update(done, total))
            phase.done(f"{len(found.partitions):,} partitions, {len(found.groups):,} groups, "
                       f"{len(found.committed):,} committed offsets")
    except ReconcilerError as exc:
        log.warning("snapshot %s: %s", name, exc.message)
        return {}, {"notRead": exc.message}
    read_at = datetime.fromtimestamp(found.read_at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return offset_rows(found), {"readAt": read_at, "readAtMs": found.read_at_ms, "notes": list(found.notes)}


@dataclass(frozen=True)
class TopicConsumers:
    """One topic's consumer groups and what a retention change makes them lose (`reconciler describe`)."""

    risks: tuple[GroupRisk, ...] = ()
    read_at_ms: int | None = None
    not_read: str | None = None  # why no offsets were read
    notes: tuple[str, ...] = ()


def topic_consumers(desired: DesiredState, topic: str, before: tuple[int | None, int | None],
                    after: tuple[int | None, int | None], root: Path, progress: Progress) -> TopicConsumers:
    """Read one topic's offsets live (the ladder and exactly the retention before and after) and every group's
    committed offsets on it; `before`/`after`: its effective (retention.ms, retention.bytes), None where unlimited
    or unchanged."""
    from reconciler.brokers.offsets import admin_spec_of, offsets_admin, read_offsets

    cluster = desired.cluster
    if admin_spec_of(cluster) is None:
        return TopicConsumers(not_read="the manifests name no Admin API endpoint (spec.adminClient)")
    ages = set(LADDER_MS) | {a for a in (before[0], after[0]) if a is not None and a >= 0}
    try:
        with progress.phase(f"{cluster.name}: consumer offsets of {topic}") as phase, \
                offsets_admin(cluster, root) as admin:
            found = read_offsets(admin, cluster.name, ages, topics=[topic],
                                 step=lambda done, total: phase.update(done, total))
            phase.done(f"{len(found.committed):,} committed offsets")
    except ReconcilerError as exc:
        return TopicConsumers(not_read=exc.message)
    return TopicConsumers(tuple(topic_risks(found, topic, before, after)), found.read_at_ms, notes=found.notes)
