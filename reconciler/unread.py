"""Unread records a retention change makes eligible for deletion, per consumer group (PURE).

What the brokers answered (`brokers/offsets.py`) is a `ClusterOffsets`: per partition its log start and end (the
high watermark a consumer reads up to), its size where known (DescribeLogDirs), and for a set of ages `a` the
offset ListOffsets gives for the timestamp `read_at − a`: the first offset whose record is at least that new
(`UnifiedLog.fetchOffsetByTimestamp`), stored as the log end where no record is. Every record before it is older
than `a`. Per group: its committed offset on each partition (OffsetFetch), its state and members' client ids.

Time retention `R` keeps the records newer than `R`, so the records it makes eligible on a partition are
`[log start, at[R])`. Kafka deletes whole segments whose newest record is older than `R`
(`UnifiedLog.deleteRetentionMsBreachedSegments`), so what a retention check really deletes ends at the start of the
segment holding `at[R]`: the estimate here is **per record**, an upper bound that the broker reaches segment by
segment as the segment holding the boundary ages out; it may overstate by at most one segment per partition. Size
retention `B` (`deleteRetentionSizeBreachedSegments`) deletes the oldest segments while the log stays at least `B`
bytes: per record, the first `(size − B) ÷ size` of the records (their mean size standing for each). Where the
ages read do not include `R` (a snapshot taken before the change was written), `at[R]` is bracketed by the ages
around it and every count is a range, never a guess.

A group's records at risk on a partition are those it has not read (from its committed offset), that the brokers
keep today and that the new settings make eligible: `[max(committed, old boundary), new boundary)`. Records already
eligible under the old settings (still on disk only because segments go whole) are not the change's doing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
# The ages (ms) every snapshot reads besides the retentions in use: the lag in time is bracketed by them, and a
# retention the snapshot did not foresee is bracketed by its neighbours.
LADDER_MS = (5 * 60_000, 15 * 60_000, 30 * 60_000, HOUR_MS, 2 * HOUR_MS, 3 * HOUR_MS, 6 * HOUR_MS, 12 * HOUR_MS,
             DAY_MS, 2 * DAY_MS, 3 * DAY_MS, 4 * DAY_MS, 5 * DAY_MS, 7 * DAY_MS, 10 * DAY_MS, 14 * DAY_MS,
             21 * DAY_MS, 30 * DAY_MS, 60 * DAY_MS, 90 * DAY_MS, 180 * DAY_MS, 365 * DAY_MS)
# ConsumerGroupState / GroupState names of a group with members (Kafka 4.x adds Assigning and Reconciling)
ACTIVE_STATES = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})


@dataclass(frozen=True, slots=True)
class PartitionLog:
    topic: str
    partition: int
    log_start: int
    log_end: int
    size_bytes: int | None = None  # the leader replica's (DescribeLogDirs); None when not known
    at: Mapping[int, int] = field(default_factory=dict)  # age ms -> first offset at least that new (log end: none)

    def clamp(self, offset: int) -> int:
        return min(max(offset, self.log_start), self.log_end)


@dataclass(frozen=True, slots=True)
class GroupState:
    group: str
    state: str  # Stable, Empty, Dead, … as the brokers name it; "" when not known
    protocol_type: str = "consumer"
    members: int | None = None  # None: not known (a group DescribeGroups cannot describe)
    client_ids: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.members) or self.state in ACTIVE_STATES


@dataclass(frozen=True, slots=True)
class ClusterOffsets:
    """One cluster's offsets as read at `read_at_ms` (epoch ms)."""

    cluster: str
    read_at_ms: int
    partitions: tuple[PartitionLog, ...] = ()
    groups: tuple[GroupState, ...] = ()
    committed: tuple[tuple[str, str, int, int], ...] = ()  # (group, topic, partition, committed offset)
    notes: tuple[str, ...] = ()  # what could not be read, said in the report


Bound = tuple[int, int]  # (lowest, highest) first offset a setting keeps: equal when known exactly


def time_boundary(log: PartitionLog, retention_ms: int | None) -> Bound:
    """The first offset time retention keeps: `at[R]`, or the bracket of the ages read around R. Unlimited
    (None, negative): the log start (nothing eligible)."""
    if retention_ms is None or retention_ms < 0:
        return log.log_start, log.log_start
    exact = log.at.get(retention_ms)
    if exact is not None:
        return log.clamp(exact), log.clamp(exact)
    younger = max((a for a in log.at if a < retention_ms), default=None)  # a later cutoff: more records eligible
    older = min((a for a in log.at if a > retention_ms), default=None)
    high = log.clamp(log.at[younger]) if younger is not None else log.log_end
    low = log.clamp(log.at[older]) if older is not None else log.log_start
    return low, high


def size_boundary(log: PartitionLog, retention_bytes: int | None) -> Bound:
    """The first offset size retention keeps, the records' mean size standing for each; unlimited: the log start;
    unknown size: anything between the log start and end."""
    if retention_bytes is None or retention_bytes < 0:
        return log.log_start, log.log_start
    records = log.log_end - log.log_start
    if log.size_bytes is None:
        return log.log_start, log.log_end
    if records <= 0 or log.size_bytes <= retention_bytes:
        return log.log_start, log.log_start
    cut = log.log_start + records * (log.size_bytes - retention_bytes) // log.size_bytes
    return cut, cut


def boundary(log: PartitionLog, retention_ms: int | None, retention_bytes: int | None) -> Bound:
    """Whichever of time and size retention lets go of more: the later of their boundaries."""
    t, s = time_boundary(log, retention_ms), size_boundary(log, retention_bytes)
    return max(t[0], s[0]), max(t[1], s[1])


def at_risk(committed: int, old: Bound, new: Bound) -> Bound:
    """Records at or after `committed` that `old` keeps and `new` does not: (fewest, most)."""
    return max(0, new[0] - max(committed, old[1])), max(0, new[1] - max(committed, old[0]))


def lag_age(log: PartitionLog, committed: int) -> tuple[int, int | None]:
    """How old the oldest record the group has not read is, bracketed by the ages read: [low, high) in ms
    (high None: older than every age read); (0, 0) when it has read everything."""
    position = max(committed, log.log_start)
    if position >= log.log_end:
        return 0, 0
    low = max((a for a, o in log.at.items() if position < o), default=0)
    high = min((a for a, o in log.at.items() if o <= position), default=None)
    return low, high


@dataclass(frozen=True, slots=True)
class GroupRisk:
    """What one group loses on one topic: sums over its partitions."""

    cluster: str
    topic: str
    group: str
    records: Bound
    bytes: Bound | None  # None: some partition's size is not known
    lag_records: int
    lag_ms: tuple[int, int | None]
    partitions: int  # partitions where it loses records
    behind_start: int  # partitions where it is already behind the log start (records lost before the change)
    state: GroupState

    @property
    def at_risk(self) -> bool:
        return self.records[1] > 0


def _bytes(log: PartitionLog, records: Bound) -> Bound | None:
    n = log.log_end - log.log_start
    if log.size_bytes is None or n <= 0:
        return None if log.size_bytes is None else (0, 0)
    return records[0] * log.size_bytes // n, records[1] * log.size_bytes // n


def topic_risks(offsets: ClusterOffsets, topic: str, before: tuple[int | None, int | None],
                after: tuple[int | None, int | None]) -> list[GroupRisk]:
    """Every group with committed offsets on `topic`: what (retention.ms, retention.bytes) `before` → `after`
    makes it lose, most records first. The same arithmetic as the Spark job (`impact/consumers.py`)."""
    logs = {p.partition: p for p in offsets.partitions if p.topic == topic}
    states = {g.group: g for g in offsets.groups}
    per_group: dict[str, list[tuple[PartitionLog, int]]] = {}
    for group, t, partition, committed in offsets.committed:
        if t == topic and partition in logs and committed >= 0:
            per_group.setdefault(group, []).append((logs[partition], committed))
    out = []
    for group, parts in per_group.items():
        records, size, lag, hit, behind = (0, 0), (0, 0), 0, 0, 0
        size_known = True
        age_low = 0  # the group's lag in time: its oldest unread record, over its partitions
        age_high_known: int | None = 0
        for log, committed in parts:
            r = at_risk(committed, boundary(log, *before), boundary(log, *after))
            records = (records[0] + r[0], records[1] + r[1])
            b = _bytes(log, r)
            size_known = size_known and b is not None
            size = (size[0] + b[0], size[1] + b[1]) if b is not None else size
            lag += max(0, log.log_end - max(committed, log.log_start))
            low, high = lag_age(log, committed)
            age_low = max(age_low, low)
            age_high_known = None if high is None or age_high_known is None else max(age_high_known, high)
            hit += r[1] > 0
            behind += committed < log.log_start
        out.append(GroupRisk(offsets.cluster, topic, group, records, size if size_known else None, lag,
                             (age_low, age_high_known), hit, behind, states.get(group, GroupState(group, ""))))
    return sorted(out, key=lambda g: (-g.records[1], g.group))


def retention_ages(values: Iterable[str | None], factor: int = 1) -> set[int]:
    """Positive whole retentions among config values (ms, or `factor` × for minutes/hours synonyms)."""
    out = set()
    for value in values:
        try:
            number = int(str(value).strip())
        except ValueError:
            continue
        if number >= 0:
            out.add(number * factor)
    return out
