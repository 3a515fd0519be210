"""Log and consumer offsets through the brokers' Admin API, for the consumer-aware impact (`reconciler.unread` says
what they mean and how they are used).

The requests are those of Kafka's own `KafkaAdminClient`: `listOffsets` (ListOffsets to each partition's leader,
`OffsetSpec.earliest()` / `latest()` / `forTimestamp(t)`), `describeLogDirs` (DescribeLogDirs: each partition's size on
its leader), `listGroups` (ListGroups to every broker: every group with its state and type), `describeConsumerGroups`
for classic groups (DescribeGroups: members and their client ids) and `listConsumerGroupOffsets` (OffsetFetch, to
each group's coordinator). The connection is `BrokerAdmin`'s: spec.adminClient of a ZooKeeper-mode cluster or
spec.kraft of a KRaft one, its bootstrap servers checked against the operator's allow-list, TLS and SASL from the
manifests' checked files and secret references (`brokers.verify.admin_security`).

Bounded: at most `BATCH` partitions per ListOffsets request and one request per leader in flight per round (one
round for the log start, one for the end, one per age), `GROUP_BATCH` groups per DescribeGroups/OffsetFetch,
every request within the client's request timeout. What cannot be read (a leader down, a group the brokers refuse
to describe) is left out and named in `ClusterOffsets.notes`, never guessed.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from reconciler.brokers.admin import BrokerAdmin, BrokerAdminError
from reconciler.brokers.verify import admin_security
from reconciler.errors import ReconcilerError, printable
from reconciler.model import ClusterSpec
from reconciler.unread import ClusterOffsets, GroupState, PartitionLog

BATCH = 1000
GROUP_BATCH = 50
EARLIEST, LATEST = -2, -1  # ListOffsetsRequest timestamps (OffsetSpec.EARLIEST / LATEST)
Step = Callable[[int, int], None]  # (requests done, requests planned)
TP = tuple[str, int]


class NoAdminClient(ReconcilerError):
    """The cluster names no Admin API endpoint (spec.adminClient / spec.kraft)."""


def admin_spec_of(cluster: ClusterSpec) -> Any:
    return cluster.kraft.admin if cluster.kraft is not None else cluster.admin


@contextmanager
def offsets_admin(cluster: ClusterSpec, root: Path, *, request_timeout_s: float = 15.0) -> Iterator[OffsetAdmin]:
    """An Admin API connection to the cluster's brokers, or NoAdminClient when its manifests name none."""
    spec = admin_spec_of(cluster)
    if spec is None:
        raise NoAdminClient(f"cluster {cluster.name}: no spec.adminClient (the brokers' Admin API): consumer "
                            "offsets not read")
    admin = OffsetAdmin(spec, admin_security(replace(cluster, admin=spec), root), request_timeout_s=request_timeout_s)
    try:
        yield admin
    finally:
        admin.close()


class OffsetAdmin(BrokerAdmin):
    """Reads of log offsets, sizes and consumer groups, batched per broker."""

    def _round(self, requests: Sequence[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """Send every (node, request) at once and wait for each answer (or the exception it failed with)."""
        manager = self._admin._manager
        timeout_ms = self._admin.config["request_timeout_ms"]

        async def ask() -> list[tuple[int, Any]]:
            futures = [(node, manager.send(request, node_id=node)) for node, request in requests]
            out: list[tuple[int, Any]] = []
            for node, future in futures:
                try:
                    out.append((node, await manager.wait_for(future, timeout_ms)))
                except Exception as exc:  # a broker down: its partitions are not read
                    out.append((node, exc))
            return out

        result: list[tuple[int, Any]] = manager.run(ask)
        return result

    def leaders(self, topics: Sequence[str] | None = None) -> dict[TP, int]:
        """Each partition's leader (Metadata), internal topics left out; a partition without a leader too."""
        out: dict[TP, int] = {}
        for topic in self._admin.describe_topics(list(topics) if topics is not None else None):
            if topic.get("error_code", 0) != 0 or topic.get("is_internal"):
                continue
            for p in topic.get("partitions") or ():
                if p.get("error_code", 0) == 0 and int(p.get("leader_id", -1)) >= 0:
                    out[(str(topic["name"]), int(p["partition_index"]))] = int(p["leader_id"])
        return out

    def list_offsets(self, leaders: dict[TP, int], timestamp: int) -> dict[TP, tuple[int, int]]:
        """ListOffsets for one timestamp (or EARLIEST / LATEST) on every partition: (offset, record timestamp);
        partitions whose leader did not answer or that answered an error are absent."""
        from kafka.protocol.consumer import ListOffsetsRequest

        topic_t = ListOffsetsRequest.ListOffsetsTopic
        part_t = topic_t.ListOffsetsPartition
        requests = []
        for leader, tps in _by_leader(leaders).items():
            for chunk in _chunks(tps, BATCH):
                by_topic: dict[str, list[int]] = defaultdict(list)
                for topic, partition in chunk:
                    by_topic[topic].append(partition)
                requests.append((leader, ListOffsetsRequest(
                    replica_id=-1, isolation_level=0, min_version=1,
                    topics=[topic_t(name=t, partitions=[part_t(partition_index=p, timestamp=timestamp) for p in ps])
                            for t, ps in by_topic.items()])))
        out: dict[TP, tuple[int, int]] = {}
        for _node, response in self._round(requests):
            if isinstance(response, Exception):
                continue
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code == 0:
                        out[(topic.name, p.partition_index)] = (int(p.offset), int(p.timestamp))
        return out

    def log_sizes(self, leaders: dict[TP, int]) -> dict[TP, int]:
        """Each partition's size on its leader (DescribeLogDirs to every leader; a future replica left out)."""
        from kafka.protocol.admin import DescribeLogDirsRequest

        requests = [(b, DescribeLogDirsRequest(topics=None)) for b in sorted(set(leaders.values()))]
        out: dict[TP, int] = {}
        for broker, response in self._round(requests):
            if isinstance(response, Exception):
                continue
            for result in response.results:
                if result.error_code != 0:
                    continue
                for topic in result.topics:
                    for p in topic.partitions:
                        tp = (topic.name, p.partition_index)
                        if leaders.get(tp) == broker and not p.is_future_key:
                            out[tp] = out.get(tp, 0) + int(p.partition_size)
        return out

    def groups(self) -> tuple[list[GroupState], list[str]]:
        """Every group the brokers coordinate (ListGroups to each), described where the classic protocol allows
        (DescribeGroups: members' client ids); notes for what could not be read."""
        from kafka.protocol.admin import ListGroupsRequest

        notes: list[str] = []
        brokers = sorted(int(b) for b in self.live_brokers())
        listed: dict[str, dict[str, Any]] = {}
        for broker, response in self._round([(b, ListGroupsRequest(min_version=0)) for b in brokers]):
            if isinstance(response, Exception) or response.error_code != 0:
                notes.append(f"broker {broker} did not list its groups")
                continue
            for g in response.groups:
                listed[str(g.group_id)] = {"protocol_type": str(g.protocol_type or ""),
                                           "state": str(getattr(g, "group_state", "") or "")}
        described: dict[str, dict[str, Any]] = {}
        for chunk in _chunks(sorted(listed), GROUP_BATCH):
            try:
                described.update(self._admin.describe_groups(chunk))
            except Exception as exc:
                notes.append(f"{len(chunk)} group(s) not described ({type(exc).__name__})")
        out = []
        for name, g in sorted(listed.items()):
            d = described.get(name) or {}
            ok = d and not d.get("error")
            members = d.get("members") or [] if ok else []
            out.append(GroupState(
                name, str(d.get("group_state") or g["state"]) if ok else g["state"], g["protocol_type"],
                len(members) if ok else None, tuple(sorted({str(m.get("client_id") or "") for m in members}))))
        return out, notes

    def committed(self, groups: Iterable[str], topics: set[str] | None = None
                  ) -> tuple[list[tuple[str, str, int, int]], list[str]]:
        """Every committed offset of `groups` (OffsetFetch, all partitions), those of `topics` when given."""
        out: list[tuple[str, str, int, int]] = []
        failed: list[str] = []

        def add(answer: dict[str, Any]) -> None:
            for group, offsets in answer.items():
                for tp, meta in offsets.items():
                    if meta.offset >= 0 and (topics is None or tp.topic in topics):
                        out.append((str(group), str(tp.topic), int(tp.partition), int(meta.offset)))

        for chunk in _chunks(sorted(groups), GROUP_BATCH):
            try:
                add(self._admin.list_group_offsets(dict.fromkeys(chunk)))
            except Exception:  # one group's error fails the batch in kafka-python: ask each alone
                for group in chunk:
                    try:
                        add(self._admin.list_group_offsets({group: None}))
                    except Exception:
                        failed.append(group)
        notes = [f"committed offsets of {len(failed)} group(s) not read: "
                 + printable(", ".join(failed[:5])) + (" …" if len(failed) > 5 else "")] if failed else []
        return out, notes


def read_offsets(admin: OffsetAdmin, cluster: str, ages: Iterable[int], *, topics: Sequence[str] | None = None,
                 clock: Callable[[], float] = time.time, step: Step | None = None) -> ClusterOffsets:
    """Everything `reconciler.unread` needs of one cluster: the partitions' log start and end, their sizes, the
    offsets at `read_at − age` for each age, every group and its committed offsets (of `topics` when given)."""
    ages = sorted({a for a in ages if a >= 0})
    try:
        leaders = admin.leaders(topics)
        total = len(ages) + 5
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if step is not None:
                step(done, total)

        read_at = int(clock() * 1000)
        start = admin.list_offsets(leaders, EARLIEST)
        tick()
        end = admin.list_offsets(leaders, LATEST)
        tick()
        at: dict[TP, dict[int, int]] = defaultdict(dict)
        for age in ages:
            for tp, (offset, _ts) in admin.list_offsets(leaders, read_at - age).items():
                if tp in end:
                    at[tp][age] = end[tp][0] if offset < 0 else offset  # -1: no record that new
            tick()
        sizes = admin.log_sizes(leaders)
        tick()
        groups, notes = admin.groups()
        tick()
        committed, more = admin.committed([g.group for g in groups], set(topics) if topics is not None else None)
        tick()
    except ReconcilerError:
        raise
    except Exception as exc:  # kafka-python's errors: by type, never with a credential
        raise BrokerAdminError(f"cluster {cluster}: reading offsets from the {admin.where} failed "
                               f"({type(exc).__name__})") from None
    logs = tuple(PartitionLog(t, p, start[(t, p)][0], end[(t, p)][0], sizes.get((t, p)), dict(at.get((t, p), {})))
                 for t, p in sorted(leaders) if (t, p) in start and (t, p) in end)
    unread = len(leaders) - len(logs)
    notes += [f"{unread:,} partition(s) not read (leader down or refused)"] if unread else []
    return ClusterOffsets(cluster, read_at, logs, tuple(groups), tuple(committed), tuple(notes + more))


def _by_leader(leaders: dict[TP, int]) -> dict[int, list[TP]]:
    out: dict[int, list[TP]] = defaultdict(list)
    for tp, leader in sorted(leaders.items()):
        out[leader].append(tp)
    return out


def _chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])
