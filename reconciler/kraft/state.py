"""Where a KRaft cluster's reconciler state lives: a compacted topic in the cluster itself (`spec.kraft.
stateTopic`, default `_kafka-reconciler`), so that any runner with the cluster's credentials sees what the last
apply recorded (kraft/statedata.py), the way Kafka Connect keeps its configs in `connect-configs`.

The topic has one partition (one order for every record), `cleanup.policy=compact` (the newest value of each
key survives), `message.timestamp.type=LogAppendTime` (the brokers' clock dates every record, not the writer's)
and is created by the first apply that needs it. With an authorizer that denies by default, only the
reconciler's principal (or a super user) reads it; `read` warns when an ACL lets another principal read it.

Every write is a compare-and-set, made safe by producer fencing (KIP-98): each write opens a transactional
producer with this cluster's `transactional.id` (`kafka-reconciler.<topic>`) and calls `initTransactions`, which
fences every earlier producer of that id and completes its open transaction; the writer then reads the topic
to its end (read_committed), decides from what it sees, and commits. A commit succeeds only if no other writer
initialised in between (else ProducerFencedException: read and decide again), so two appliers can never both
take the lock or both record the same lease.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from reconciler.brokers.admin import BrokerAdminError
from reconciler.errors import Diagnostic, ReconcilerError, printable
from reconciler.kraft.admin import KraftAdmin
from reconciler.kraft.statedata import Record, State, fold
from reconciler.model import ClusterSpec, LiveState

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 30.0
ATTEMPTS = 6  # compare-and-set attempts when another writer fenced this one
Decide = Callable[[State], Sequence[Record]]


class StateError(ReconcilerError):
    """The state topic cannot be read or written (names the topic and the error type, never a credential)."""


class TopicStore:
    """The state topic of one cluster, through the admin connection's servers and security."""

    def __init__(self, admin: KraftAdmin, topic: str, cluster: str) -> None:
        self.admin, self.topic, self.cluster = admin, topic, cluster
        self.transactional_id = f"kafka-reconciler.{topic}"
        self.where = f"state topic {topic}"
        self._mutex = threading.Lock()  # one compare-and-set at a time in this process (a lease's heartbeat)
        # the records read so far and the offset after them: a later read fetches only what came since (an apply
        # reads the topic five times: lock, state, record, release; one holding 10,000s of records took seconds)
        self._read_lock = threading.Lock()
        self._seen: list[Record] = []
        self._next = 0

    def exists(self) -> bool:
        return self.admin.topic_exists(self.topic)

    def ensure(self) -> None:
        """Create the topic when it does not exist (one partition, compacted, dated by the brokers)."""
        if self.exists():
            return
        brokers = len(self.admin.cluster()[2]) or 1
        rf = min(3, brokers)
        configs = {"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime",
                   "min.insync.replicas": str(min(2, rf))}
        refused = self.admin.create_topics({self.topic: {"num_partitions": 1, "replication_factor": rf,
                                                         "configs": configs}}, validate_only=False)
        if refused and refused[0].error != "TopicAlreadyExistsError":
            raise StateError(f"cluster {self.cluster}: cannot create the {self.where} ({refused[0].error}: "
                             f"{refused[0].message}); create it (1 partition, cleanup.policy=compact) or grant "
                             "the reconciler's principal Create on it")
        deadline = time.monotonic() + READ_TIMEOUT_S
        while not self.exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    def read(self) -> State:
        """Every record to the end of the log (read_committed: aborted writes are never seen)."""
        if not self.exists():
            return State()
        return fold(self._records())

    def _records(self) -> list[Record]:
        """Every committed record; the ones read before kept, the rest fetched. Folding the records kept and those
        since gives the state the compacted log gives: compaction drops only records a newer one of its key
        replaces, and `fold` keeps the newest of each key."""
        with self._read_lock:
            fetched = self._fetch()  # may start again from the beginning (it empties `_seen` first)
            self._seen.extend(fetched)
            return list(self._seen)

    def _fetch(self) -> list[Record]:
        from kafka.consumer import KafkaConsumer
        from kafka.structs import TopicPartition

        try:
            consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, isolation_level="read_committed",
                                     client_id="kafka-reconciler-state", request_timeout_ms=30000,
                                     **self.admin.client_config)
        except Exception as exc:
            raise StateError(f"cluster {self.cluster}: cannot read the {self.where} ({type(exc).__name__})") from None
        try:
            tp = TopicPartition(self.topic, 0)
            consumer.assign([tp])
            if self._next and consumer.beginning_offsets([tp])[tp] <= self._next:
                consumer.seek(tp, self._next)
            else:  # the first read, or the log no longer holds where the last one ended: everything again
                self._seen, self._next = [], 0
                consumer.seek_to_beginning(tp)
            end = consumer.end_offsets([tp])[tp]  # the last stable offset (read_committed)
            records: list[Record] = []
            deadline = time.monotonic() + READ_TIMEOUT_S
            while consumer.position(tp) < end:
                if time.monotonic() > deadline:
                    raise StateError(f"cluster {self.cluster}: reading the {self.where} timed out at offset "
                                     f"{consumer.position(tp)} of {end}")
                for batch in consumer.poll(timeout_ms=500).values():
                    records += [_record(self.topic, m) for m in batch if m.offset < end]
            self._next = max(self._next, end)
            return records
        except ReconcilerError:
            raise
        except Exception as exc:
            raise StateError(f"cluster {self.cluster}: cannot read the {self.where} ({type(exc).__name__})") from None
        finally:
            consumer.close()

    def transact(self, decide: Decide) -> State:
        """Compare-and-set: fence every other writer, read to the end, write what `decide` returns for what it
        sees (nothing when it returns nothing), committed only if no other writer came in between. `decide`
        may raise (a lock held by another): nothing is written. Returns the state decided on."""
        from kafka.errors import ConcurrentTransactionsError, InvalidProducerEpochError, ProducerFencedError

        self.ensure()
        with self._mutex:
            for attempt in range(ATTEMPTS):
                producer = self._producer()
                try:
                    producer.init_transactions()
                    state = self.read()
                    records = decide(state)
                    if records:
                        producer.begin_transaction()
                        for r in records:
                            producer.send(self.topic, key=r.key.encode("utf-8"), partition=0,
                                          value=None if r.value is None else json.dumps(
                                              r.value, separators=(",", ":"), sort_keys=True).encode("utf-8"))
                        producer.commit_transaction()
                    return state
                except (ProducerFencedError, InvalidProducerEpochError, ConcurrentTransactionsError):
                    log.info("state topic %s: another writer came in between (attempt %d)", self.topic, attempt + 1)
                    time.sleep(random.uniform(0.05, 0.3) * (attempt + 1))
                except ReconcilerError:
                    raise
                except Exception as exc:
                    raise StateError(f"cluster {self.cluster}: cannot write the {self.where} "
                                     f"({type(exc).__name__})") from None
                finally:
                    producer.close(timeout=5)
        raise StateError(f"cluster {self.cluster}: the {self.where} kept changing under {ATTEMPTS} attempts to "
                         "write it")

    def _producer(self) -> Any:
        from kafka.producer import KafkaProducer

        try:
            return KafkaProducer(transactional_id=self.transactional_id, enable_idempotence=True, acks="all",
                                 client_id="kafka-reconciler-state", request_timeout_ms=30000,
                                 max_block_ms=30000, **self.admin.client_config)
        except Exception as exc:
            raise BrokerAdminError(f"cluster {self.cluster}: cannot open a producer for the {self.where} "
                                   f"({type(exc).__name__})") from None


def _record(topic: str, message: Any) -> Record:
    try:
        value = None if message.value is None else json.loads(message.value)
    except ValueError:
        value = None
    key = message.key.decode("utf-8", "replace") if message.key else ""
    return Record(key, value if isinstance(value, dict) else None, int(message.timestamp or 0),
                  f"{topic}@{message.offset}")


_READING = {"Read", "All"}


def state_exposure(live: LiveState, cluster: ClusterSpec) -> list[Diagnostic]:
    """A warning per ACL entry that lets a principal other than the reconciler's read the state topic (its
    fingerprints are salted digests, but they are the reconciler's alone), as Kafka's authorizer would match
    it: a LITERAL pattern of the topic or `*`, or a PREFIXED pattern the name starts with."""
    kraft = cluster.kraft
    if kraft is None or kraft.local_state or live.acls is None:
        return []
    topic = kraft.state_topic
    ours = f"User:{kraft.admin.sasl.username}" if kraft.admin.sasl else None
    found = []
    for resource, acls in live.acls.items():
        if resource.resource_type != "Topic" or not (
                resource.name in (topic, "*") if resource.pattern == "LITERAL" else topic.startswith(resource.name)):
            continue
        found += [f"{e.display} on Topic:{resource.pattern}:{resource.name}" for e in sorted(acls.entries)
                  if e.permission == "Allow" and e.operation in _READING and e.principal != ours]
    if not found:
        return []
    return [Diagnostic("warning", printable(
        f"cluster {cluster.name}: the reconciler's state topic {topic} (lock, audit entries, password "
        f"fingerprints) is readable by others than the reconciler: {'; '.join(found[:10])}"),
        kraft.source or cluster.source, "stateTopic")]
