"""Partition reassignments through the brokers' Admin API, the requests Kafka's own `ReassignPartitionsCommand`
(`kafka-reassign-partitions.sh`, 3.x) sends through `Admin`: `listPartitionReassignments`
(ListPartitionReassignments), `alterPartitionReassignments` (AlterPartitionReassignments, KIP-455: a target, or
none to cancel), `incrementalAlterConfigs` for the throttles (to the broker itself for a broker resource),
`describeTopics` (Metadata: replicas and ISR), `describeLogDirs` (DescribeLogDirs: each replica's size) and
`describeConfigs` (what throttles are set).

The connection is `BrokerAdmin`'s (spec.adminClient of a ZooKeeper-mode cluster, spec.kraft of a KRaft one: its
bootstrap servers allow-listed, TLS and SASL from the manifests' checked files and secret references). Errors
name the servers and Kafka's error, never a credential."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler.brokers.admin import BrokerAdmin, BrokerAdminError
from reconciler.brokers.verify import admin_security
from reconciler.errors import ReconcilerError
from reconciler.model import ClusterSpec, InFlightMove

TP = tuple[str, int]
TOPIC, BROKER = 2, 4  # ConfigResource.Type
SET, DELETE = 0, 1  # AlterConfigOp.OpType
DYNAMIC_TOPIC, DYNAMIC_BROKER = 1, 2  # DescribeConfigsResponse.ConfigSource


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition as Metadata reports it: its replicas (the whole set while it moves), leader and ISR."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int


def _error_name(code: int) -> str:
    import kafka.errors as errors

    return str(errors.for_code(code).__name__)


class ReassignAdmin(BrokerAdmin):
    """One Admin API connection for a reassignment: reading its state, starting, cancelling, throttling."""

    def _send(self, request: Any, node: int | None = None) -> Any:
        manager = self._admin._manager

        async def ask() -> Any:
            return await (manager.send(request, node_id=node) if node is not None else manager.send(request))

        return manager.run(ask)

    def reassignments(self) -> dict[TP, InFlightMove]:
        """Every partition being reassigned (ListPartitionReassignments, all partitions)."""
        answer = self._admin.list_partition_reassignments()
        return {(tp.topic, tp.partition): InFlightMove(tp.topic, tp.partition, tuple(r["replicas"]),
                                                      tuple(r["adding_replicas"]), tuple(r["removing_replicas"]))
                for tp, r in answer.items()}

    def alter(self, targets: Mapping[TP, Sequence[int] | None]) -> dict[TP, str]:
        """AlterPartitionReassignments: each partition to its target (None cancels its reassignment, KIP-455);
        the refused ones with Kafka's error name (e.g. NoReassignmentInProgressError)."""
        from kafka.structs import TopicPartition

        if not targets:
            return {}
        answer = self._admin.alter_partition_reassignments(
            {TopicPartition(t, p): (list(r) if r is not None else None) for (t, p), r in targets.items()})
        return {(tp.topic, tp.partition): err.__name__ for tp, err in answer.items() if err is not None}

    def partitions(self, topics: Iterable[str]) -> dict[TP, PartitionState]:
        """Replicas, leader and ISR of every partition of `topics` (Metadata)."""
        names = sorted(set(topics))
        if not names:
            return {}
        out: dict[TP, PartitionState] = {}
        for topic in self._admin.describe_topics(names):
            if topic.get("error_code", 0) != 0:
                continue
            name = str(topic.get("name") if "name" in topic else topic["topic"])
            for p in topic.get("partitions") or ():
                index = int(p.get("partition_index", p.get("partition", 0)))
                out[(name, index)] = PartitionState(
                    tuple(int(b) for b in (p.get("replica_nodes") or p.get("replicas") or ())),
                    tuple(int(b) for b in (p.get("isr_nodes") or p.get("isr") or ())),
                    int(p.get("leader_id", p.get("leader", -1))))
        return out

    def replica_sizes(self, brokers: Iterable[int], topics: Iterable[str]) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) -> the replica's size on that broker (DescribeLogDirs to each broker, for
        `topics`); a future replica (a log dir move) left out; a broker that does not answer, too."""
        from kafka.protocol.admin import DescribeLogDirsRequest

        names = sorted(set(topics))
        out: dict[tuple[str, int, int], int] = {}
        if not names:
            return out
        for broker in sorted(set(brokers)):
            try:  # every log dir of the broker (a request naming partitions must list each one)
                response = self._send(DescribeLogDirsRequest(topics=None), broker)
            except Exception:  # a broker down: its replicas are not counted
                continue
            for result in response.results:
                if result.error_code != 0:
                    continue
                for topic in result.topics:
                    if topic.name not in names:
                        continue
                    for p in topic.partitions:
                        if not p.is_future_key:
                            key = (topic.name, p.partition_index, broker)
                            out[key] = out.get(key, 0) + int(p.partition_size)
        return out

    def leader_sizes(self, topics: Iterable[str]) -> dict[TP, int]:
        """Each partition's size on its leader: what a new replica copies."""
        states = self.partitions(topics)
        sizes = self.replica_sizes({s.leader for s in states.values() if s.leader >= 0}, topics)
        return {tp: sizes[(tp[0], tp[1], s.leader)] for tp, s in states.items() if (tp[0], tp[1], s.leader) in sizes}

    def alter_configs(self, resource_type: int, name: str, ops: Sequence[tuple[str, int, str | None]]) -> None:
        """IncrementalAlterConfigs of one resource, sent as Kafka's client sends it (a broker's to that broker);
        BrokerAdminError with Kafka's error when refused."""
        from kafka.protocol.admin import IncrementalAlterConfigsRequest

        node = int(name) if resource_type == BROKER and name else None
        response = self._send(IncrementalAlterConfigsRequest(resources=[(resource_type, name, list(ops))],
                                                             validate_only=False), node)
        for result in response.responses:
            if result.error_code != 0:
                kind = "broker" if resource_type == BROKER else "topic"
                raise BrokerAdminError(f"the {self.where} refused to set throttles of {kind} {name} "
                                       f"({_error_name(result.error_code)}: {result.error_message or ''})")

    def dynamic_configs(self, resource_type: int, names: Iterable[str],
                        keys: Iterable[str]) -> dict[str, dict[str, str]]:
        """For each resource, the `keys` set on it dynamically (per broker or per topic: not a cluster default),
        as its DescribeConfigs answer says (a broker resource asked of that broker)."""
        from kafka.protocol.admin import DescribeConfigsRequest

        wanted = sorted(set(keys))
        source = DYNAMIC_BROKER if resource_type == BROKER else DYNAMIC_TOPIC
        out: dict[str, dict[str, str]] = {}
        for name in sorted(set(names)):
            node = int(name) if resource_type == BROKER else None
            response = self._send(DescribeConfigsRequest(resources=[(resource_type, name, wanted)],
                                                         include_synonyms=True), node)
            for result in response.results:
                if result.error_code != 0:
                    if resource_type == TOPIC and _error_name(result.error_code) == "UnknownTopicOrPartitionError":
                        continue
                    raise BrokerAdminError(f"the {self.where} refused DescribeConfigs for {name!r} "
                                           f"({_error_name(result.error_code)})")
                found: dict[str, str] = {}
                for c in result.configs:
                    for syn_name, value, src in ((s.name, s.value, int(s.source)) for s in c.synonyms or ()):
                        if syn_name == c.name and src == source and value is not None:
                            found[c.name] = value
                out[name] = found
        return out


def admin_spec_of(cluster: ClusterSpec) -> Any:
    """The Admin API a cluster's reassignments go through: spec.kraft's brokers, else spec.adminClient."""
    return cluster.kraft.admin if cluster.kraft is not None else cluster.admin


@contextmanager
def reassign_admin(cluster: ClusterSpec, root: Path, *, request_timeout_s: float = 30.0) -> Iterator[ReassignAdmin]:
    """An Admin API connection to the cluster's brokers for its reassignments."""
    spec = admin_spec_of(cluster)
    if spec is None:
        raise ReconcilerError(f"cluster {cluster.name}: replica moves need the brokers' Admin API (Kafka 2.4+ "
                              "reassigns through AlterPartitionReassignments, as kafka-reassign-partitions.sh does): "
                              "add spec.adminClient")
    admin = ReassignAdmin(spec, admin_security(replace(cluster, admin=spec), root), request_timeout_s=request_timeout_s)
    try:
        yield admin
    finally:
        admin.close()
