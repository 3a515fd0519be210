"""What the replica-placement tests share (tests/integration/test_reassign_*.py): a producer and a consumer
running through a reassignment (every record acknowledged must be read back), a watcher of the throttles and
reassignments the brokers report while it runs, and the brokers' own answers (kafka-python's Admin API: Metadata,
ListPartitionReassignments, DescribeConfigs), never the reconciler's read-back."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from kafka import KafkaConsumer, KafkaProducer

BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_LISTS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=15000)


def layout(bootstrap: str, topic: str) -> dict[int, tuple[tuple[int, ...], tuple[int, ...], int]]:
    """partition -> (replicas, ISR, leader), as Metadata reports them."""
    client = admin(bootstrap)
    try:
        (found,) = client.describe_topics([topic])
    finally:
        client.close()
    return {int(p["partition_index"] if "partition_index" in p else p["partition"]):
            (tuple(p.get("replica_nodes") or p.get("replicas")), tuple(p.get("isr_nodes") or p.get("isr")),
             int(p.get("leader_id", p.get("leader", -1))))
            for p in found["partitions"]}


def in_flight(bootstrap: str) -> dict[tuple[str, int], dict[str, Any]]:
    client = admin(bootstrap)
    try:
        return {(tp.topic, tp.partition): r for tp, r in client.list_partition_reassignments().items()}
    finally:
        client.close()


def dynamic(bootstrap: str, kind: str, names: Iterable[object], keys: Iterable[str]) -> dict[str, dict[str, str]]:
    """The `keys` each broker or topic has set dynamically (its own DescribeConfigs answer: source
    DYNAMIC_BROKER_CONFIG / DYNAMIC_TOPIC_CONFIG)."""
    rtype = ConfigResourceType.BROKER if kind == "broker" else ConfigResourceType.TOPIC
    wanted = ("DYNAMIC_BROKER_CONFIG", "DYNAMIC_TOPIC_CONFIG", "2", "1")
    client = admin(bootstrap)
    out: dict[str, dict[str, str]] = {}
    try:
        for name in names:
            answer = client.describe_configs([ConfigResource(rtype, str(name), configs=dict.fromkeys(keys))],
                                             include_synonyms=True, config_filter="all")
            entries = answer.get(kind, {}).get(str(name), {})
            out[str(name)] = {k: e["value"] for k, e in entries.items()
                              if k in keys and str(e.get("config_source")) in wanted and e.get("value")}
    finally:
        client.close()
    return out


def preload(bootstrap: str, topic: str, partitions: int, mib_per_partition: float) -> int:
    """Incompressible records, `mib_per_partition` MiB in each partition; the count written."""
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=20,
                             compression_type=None, max_request_size=2 << 20)
    count = int(mib_per_partition * 1024 / 16)
    try:
        for p in range(partitions):
            for i in range(count):
                producer.send(topic, key=f"pre-{p}-{i}".encode(), value=os.urandom(16 * 1024), partition=p)
        producer.flush(60)
    finally:
        producer.close()
    return count * partitions


@dataclass
class Traffic:
    """A producer (acks=all) writing numbered records to every partition and a consumer reading the topic from the
    start, both running until `finish`; `lost()` is every acknowledged record never read."""

    bootstrap: str
    topic: str
    partitions: int
    acked: set[str] = field(default_factory=set)
    read: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _done_reading: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Traffic:
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]
        for t in self._threads:
            t.start()
        return self

    def _produce(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap.split(","), acks="all", retries=50,
                                 max_in_flight_requests_per_connection=1, request_timeout_ms=20000)
        try:
            i = 0
            while not self._stop.is_set():
                key = f"live-{i}"
                value = (key + ":" + "0123456789abcdef" * 32).encode()
                future = producer.send(self.topic, key=key.encode(), value=value, partition=i % self.partitions)
                future.add_callback(lambda _md, k=key: self.acked.add(k))
                future.add_errback(lambda exc, k=key: self.failures.append(f"{k}: {exc!r}"))
                i += 1
                time.sleep(0.01)
            producer.flush(60)
        finally:
            producer.close()

    def _consume(self) -> None:
        consumer = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap.split(","),
                                 auto_offset_reset="earliest", enable_auto_commit=False, group_id=None,
                                 max_partition_fetch_bytes=4 << 20)
        try:
            while not self._done_reading.is_set():
                for records in consumer.poll(timeout_ms=200).values():
                    self.read.update(r.key.decode() for r in records if r.key and r.key.startswith(b"live-"))
                if self._stop.is_set() and self.acked <= self.read and not self._threads[0].is_alive():
                    return
        finally:
            consumer.close()

    def finish(self, timeout_s: float = 90.0) -> None:
        self._stop.set()
        self._threads[0].join(timeout_s)
        self._threads[1].join(timeout_s)
        self._done_reading.set()

    def lost(self) -> set[str]:
        return self.acked - self.read


@dataclass
class Watcher:
    """Polls, while a reassignment runs, what the brokers report: the throttles set on `brokers` and `topic`, and
    the partitions being reassigned. Everything seen is kept."""

    bootstrap: str
    brokers: tuple[int, ...]
    topic: str
    broker_rates: dict[str, set[str]] = field(default_factory=dict)  # broker -> rates seen
    topic_lists: list[dict[str, str]] = field(default_factory=list)
    moving: set[tuple[str, int]] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Watcher:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:  # the moves first, and alone: a partition's move can end within one slow round of all three
                self.moving |= {tp for tp in in_flight(self.bootstrap) if tp[0] == self.topic}
                for b, found in dynamic(self.bootstrap, "broker", self.brokers, BROKER_RATES).items():
                    self.broker_rates.setdefault(b, set()).update(f"{k}={v}" for k, v in found.items())
                self.moving |= {tp for tp in in_flight(self.bootstrap) if tp[0] == self.topic}
                lists = dynamic(self.bootstrap, "topic", [self.topic], TOPIC_LISTS).get(self.topic, {})
                if lists:
                    self.topic_lists.append(lists)
            except Exception:  # a broker busy or restarting: the next round asks again
                pass
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def delete_topics(bootstrap: str, keep: Iterable[str] = ()) -> None:
    """Every topic but the internal ones and `keep` deleted (a test's topics, so that the next test's drain does
    not meet them), waited for."""
    client = admin(bootstrap)
    try:
        names = [t for t in client.list_topics() if not t.startswith("__") and t not in set(keep)]
        if names:
            client.delete_topics(names)
    finally:
        client.close()
    if names:
        wait_for("the topics deleted", lambda: not set(names) & set(_topics(bootstrap)), timeout_s=60)


def _topics(bootstrap: str) -> list[str]:
    client = admin(bootstrap)
    try:
        return list(client.list_topics())
    finally:
        client.close()


def wait_for(what: str, check: Any, timeout_s: float = 60.0, every: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
