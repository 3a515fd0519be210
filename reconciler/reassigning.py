"""The reassignment use case: run a plan's replica moves (reconciler/reassign/) as `kafka-reassign-partitions.sh`
runs them, through the brokers' Admin API (brokers/reassign.py), after the plan's config writes.

Why the Admin API for both backends: Kafka's own tool has reassigned through AlterPartitionReassignments since 2.4
(KIP-455) and only so since 3.0 (its `--zookeeper` path, which wrote `/admin/reassign_partitions`, was removed);
a ZooKeeper-mode controller then records the target in `/brokers/topics/<t>` (adding/removing replicas) itself. The
znode path would need cancellation (KIP-455 has none for it) and its own ISR tracking, for brokers older than
2.4: not offered (the plan says so).

A pass, exactly once per apply:
1. reads where each move stands (`reassign.progress.classify`): a stale plan (a partition that moved since) or a
   reassignment someone else runs refuses to start anything, as `--execute` refuses without `--additional`;
2. writes the record first (which moves it starts, where it throttles: kept by the backend), then the throttles
   (`reassign.throttles`: `--execute --throttle`'s configs, on the moving replicas only), then starts the moves
   (at most `maxMovingPartitions` / `maxMovingBytes` at once), starting more as earlier ones finish;
3. reports progress (partitions done, new replicas in sync, bytes copied) until every move is done, the wait
   allowed ends (`--reassign-wait`) or a signal stops it: then the moves stay in flight with their throttles, and
   the next pass continues;
4. when every move is done, removes the throttles it set (`--verify`'s `clearAllThrottles`, only where the record
   says the reconciler set them) and then the record.
`verify_reassignment` is `--verify`: every moved partition at its target with all replicas in sync, and no
throttle the reconciler set left behind. `cancel` is `--cancel` (KIP-455).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.backend import Connection, Notify
from reconciler.brokers.admin import BrokerAdminError
from reconciler.brokers.reassign import BROKER, DELETE, SET, TOPIC, PartitionState, ReassignAdmin
from reconciler.errors import ConflictError, ReconcilerError, RefusedError, printable
from reconciler.model import ClusterSpec, DesiredState, InFlightMove
from reconciler.plan import PartitionMove, Plan, Reassignment
from reconciler.reassign.outcome import Outcome, Verification
from reconciler.reassign.progress import Status, classify, next_moves
from reconciler.reassign.record import Record, extended, parse, to_json
from reconciler.reassign.throttles import BROKER_KEYS, TOPIC_KEYS, throttles
from reconciler.reassign.traffic import bytes_text, moving_bytes, rate_text
from reconciler.units import counted

SHOWN = 5
REPORT_EVERY_S = 15.0


@dataclass(frozen=True)
class MoveOptions:
    """The operator's pacing of an apply's moves: bounds per step (None: the plan's), how long to wait for them
    (None: until done; 0: start them and return), how often to look."""

    max_partitions: int | None = None
    max_bytes: int | None = None
    wait_s: float | None = None
    poll_s: float = 2.0


def _names(moves: Sequence[PartitionMove]) -> str:
    names = [m.name for m in moves[:SHOWN]]
    return ", ".join(names) + (f" and {len(moves) - SHOWN} more" if len(moves) > SHOWN else "")


def _size(n: int) -> str:
    return bytes_text(n)


class _Run:
    """One pass over a plan's reassignment."""

    def __init__(self, plan: Plan, admin: ReassignAdmin, connection: Connection, *, user: str, now: str,
                 options: MoveOptions, notify: Notify | None, stop: Callable[[], bool] | None,
                 clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
        assert plan.reassignment is not None
        self.plan, self.r, self.admin, self.connection = plan, plan.reassignment, admin, connection
        self.user, self.now, self.options = user, now, options
        self.notify, self.stop, self.clock, self.sleep = notify, stop, clock, sleep
        self.max_partitions = options.max_partitions or self.r.max_partitions
        self.max_bytes = options.max_bytes if options.max_bytes is not None else self.r.max_bytes
        self.topics = sorted({m.topic for m in self.r.moves})
        self.started: set[tuple[str, int]] = set()
        self._said = ("", 0.0)

    def say(self, line: str, *, every: float = 0.0) -> None:
        """A progress line on stderr (`notify`): always when it changed, else at most every `every` seconds."""
        if self.notify is None:
            return
        last, at = self._said
        if line != last or (every and self.clock() - at >= every):
            self.notify(printable(f"{self.plan.cluster}: {line}"))
            self._said = (line, self.clock())

    def status(self, record: Record | None) -> tuple[Status, Mapping[tuple[str, int], PartitionState]]:
        in_flight = self.admin.reassignments()
        states = self.admin.partitions(self.topics)
        status = classify(self.r.moves, {tp: s.replicas for tp, s in states.items()}, in_flight, record)
        if self.started:  # moves this pass started: finished but not yet in every broker's metadata -> moving
            settling = [m for m in status.pending if (m.topic, m.partition) in self.started]
            status.pending = [m for m in status.pending if m not in settling]
            status.moving += settling
        return status, states

    def run(self) -> Outcome:
        deadline = None if self.options.wait_s is None else self.clock() + self.options.wait_s
        record = parse(self.connection.reassignment_record())
        status, states = self.status(record)
        if status.stale:
            raise ConflictError(f"cluster {self.plan.cluster}: stale plan: {status.stale[0]}"
                                + (f" (and {len(status.stale) - 1} more)" if len(status.stale) > 1 else "")
                                + "; no move was started: run `reconciler plan` again")
        if status.pending and status.foreign:
            raise RefusedError(
                f"cluster {self.plan.cluster}: {counted(len(status.foreign), 'partition is', 'partitions are')} "
                f"being reassigned by someone else ({', '.join(f'{f.topic}-{f.partition}' for f in status.foreign[:5])}"
                "); no move was started, as kafka-reassign-partitions.sh --execute refuses while another "
                "reassignment runs: wait for it, or cancel it (kafka-reassign-partitions.sh --cancel)")
        if status.moving and not self.started:
            self.say(f"reassignment in flight: {_names(status.moving)} moving since an earlier pass; continuing")
        while True:
            start = next_moves(status.pending, status.moving, self.max_partitions, self.max_bytes)
            if start:
                record = self.start(record, status.moving, start)
                status, states = self.status(record)
                continue
            if not status.moving and not status.pending:
                self.clear(record)
                return Outcome(len(status.done), 0, 0, True)
            self.report(status, states)
            if self.stop is not None and self.stop():
                return Outcome(len(status.done), len(status.moving), len(status.pending), False, "interrupted")
            if deadline is not None and self.clock() >= deadline:
                waited = self.options.wait_s or 0
                return Outcome(len(status.done), len(status.moving), len(status.pending), False,
                               f"waited {waited:g} s" if waited else "not waiting")
            self.sleep(self.options.poll_s)
            status, states = self.status(record)

    def start(self, record: Record | None, moving: Sequence[PartitionMove], start: Sequence[PartitionMove]) -> Record:
        """The record, then the throttles of every moving replica, then the moves."""
        th = throttles([*moving, *start], self.r.throttle)
        record = extended(record, plan_id=self.plan.plan_id, user=self.user, time=self.now, throttle=self.r.throttle,
                          brokers=th.brokers, topics=th.topics, moves=start)
        self.connection.keep_reassignment_record(to_json(record))
        for broker, configs in th.broker_configs().items():
            self.admin.alter_configs(BROKER, str(broker), [(k, SET, v) for k, v in configs.items()])
        for topic, configs in th.topic_configs().items():
            self.admin.alter_configs(TOPIC, topic, [(k, SET, v) for k, v in configs.items()])
        refused = self.admin.alter({(m.topic, m.partition): m.target for m in start})
        self.started |= {(m.topic, m.partition) for m in start if (m.topic, m.partition) not in refused}
        if refused:
            lines = "".join(f"\n  {t}-{p}: {error}" for (t, p), error in sorted(refused.items()))
            raise ReconcilerError(f"cluster {self.plan.cluster}: the cluster refused to reassign "
                                  f"{counted(len(refused), 'partition', 'partitions')} (AlterPartitionReassignments); "
                                  "the throttles stay recorded: the next pass removes them once nothing moves" + lines)
        copied = sum(moving_bytes(m) for m in start)
        self.say(f"started moving {_names(start)} ({_size(copied)} to copy, throttled at "
                 f"{rate_text(self.r.throttle)} on brokers "
                 f"{','.join(map(str, th.brokers))})")
        return record

    def report(self, status: Status, states: Mapping[tuple[str, int], PartitionState]) -> None:
        adding = [(m, b) for m in status.moving for b in m.adding]
        in_sync = sum(b in states[(m.topic, m.partition)].isr for m, b in adding if (m.topic, m.partition) in states)
        total = sum(moving_bytes(m) for m in status.moving)
        copied = ""
        if total:
            sizes = self.admin.replica_sizes({b for _, b in adding}, {m.topic for m in status.moving})
            have = sum(min(sizes.get((m.topic, m.partition, b), 0), m.size_bytes or 0) for m, b in adding)
            copied = f", {_size(have)} of {_size(total)} copied"
        self.say(f"reassignment: {len(status.done)} of {len(self.r.moves)} done, {len(status.moving)} moving (new "
                 f"replicas in sync {in_sync}/{len(adding)}{copied}), {len(status.pending)} waiting",
                 every=REPORT_EVERY_S)

    def clear(self, record: Record | None) -> None:
        """Every move done: the throttles the reconciler set removed, then its record."""
        brokers = set(record.brokers) if record is not None else set()
        topics = set(record.topics) if record is not None else set()
        if not brokers and not topics:
            return
        failed = clear_throttles(self.admin, brokers, topics)
        if failed:
            raise ReconcilerError(f"cluster {self.plan.cluster}: every move is done, but the replication throttles "
                                  "could not all be removed (the record stays: the next pass removes them)"
                                  + "".join(f"\n  {line}" for line in failed))
        self.connection.keep_reassignment_record(None)
        self.say(f"replication throttles removed from {counted(len(brokers), 'broker', 'brokers')} and "
                 f"{counted(len(topics), 'topic', 'topics')}")


def clear_throttles(admin: ReassignAdmin, brokers: set[int], topics: set[str]) -> list[str]:
    """DELETE the two rates on `brokers` and the two replica lists on `topics` (a topic deleted since is fine);
    what could not be removed."""
    failed = []
    for broker in sorted(brokers):
        try:
            admin.alter_configs(BROKER, str(broker), [(k, DELETE, None) for k in BROKER_KEYS])
        except BrokerAdminError as exc:
            failed.append(f"broker {broker}: {exc.message}")
        except Exception as exc:  # a broker down: kafka-python's errors, by type
            failed.append(f"broker {broker}: no answer ({type(exc).__name__})")
    for topic in sorted(topics):
        try:
            admin.alter_configs(TOPIC, topic, [(k, DELETE, None) for k in TOPIC_KEYS])
        except BrokerAdminError as exc:
            if "UnknownTopicOrPartition" not in exc.message:
                failed.append(f"topic {topic}: {exc.message}")
    return failed


def run_reassignment(plan: Plan, cluster: ClusterSpec, connection: Connection, admin: ReassignAdmin, *,
                     user: str, now: str, options: MoveOptions | None = None, notify: Notify | None = None,
                     stop: Callable[[], bool] | None = None, clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep) -> Outcome:
    """One pass over `plan`'s reassignment (see the module's docstring)."""
    return _Run(plan, admin, connection, user=user, now=now, options=options or MoveOptions(), notify=notify,
                stop=stop, clock=clock, sleep=sleep).run()


def verify_reassignment(r: Reassignment, desired: DesiredState | None, connection: Connection,
                        admin: ReassignAdmin) -> Verification:
    """`--verify`: every moved partition has its target replicas, is not being reassigned and has them all in its
    ISR; no throttle the reconciler set is left (the rates on the brokers the moves involved, the lists on their
    topics, unless the manifests declare them)."""
    problems: list[str] = []
    in_flight = admin.reassignments()
    states = admin.partitions({m.topic for m in r.moves})
    for m in r.moves:
        tp = (m.topic, m.partition)
        state = states.get(tp)
        if tp in in_flight:
            problems.append(f"{m.name} is still being reassigned (adding {list(in_flight[tp].adding)})")
        elif state is None:
            problems.append(f"{m.name}: not reported by the brokers")
        elif state.replicas != m.target:
            problems.append(f"{m.name} has replicas {list(state.replicas)}, not {list(m.target)}")
        elif not set(m.target) <= set(state.isr):
            problems.append(f"{m.name}: replicas {sorted(set(m.target) - set(state.isr))} not in sync "
                            f"(ISR {list(state.isr)})")
    th = throttles(r.moves, r.throttle)
    record = parse(connection.reassignment_record())
    brokers = set(th.brokers) | (record.brokers if record else set())
    brokers |= {int(e.split("/", 1)[1]) for e in r.leftover if e.startswith("brokers/")}
    topics = set(th.topics) | (record.topics if record else set())
    topics |= {e.split("/", 1)[1] for e in r.leftover if e.startswith("topics/")}
    declared = _declared_throttles(desired)
    for kind, names, keys in ((BROKER, sorted(map(str, brokers)), BROKER_KEYS), (TOPIC, sorted(topics), TOPIC_KEYS)):
        what = "broker" if kind == BROKER else "topic"
        for name, found in admin.dynamic_configs(kind, names, keys).items():
            left = sorted(k for k in found if (f"{what}s/{name}", k) not in declared)
            if left:
                problems.append(f"{what} {name}: throttle left behind: {', '.join(f'{k}={found[k]}' for k in left)}")
    if record is not None:
        problems.append(f"the record of the reassignment of plan {record.plan_id} is still kept (its throttles are "
                        "removed by the next pass once nothing moves)")
    return Verification(len(r.moves), tuple(problems))


def _declared_throttles(desired: DesiredState | None) -> set[tuple[str, str]]:
    if desired is None:
        return set()
    keys = {*BROKER_KEYS, *TOPIC_KEYS}
    out = {(ref.display, k) for ref, e in desired.entities.items() for k in e.config if k in keys}
    out |= {(f"topics/{name}", k) for name, t in desired.topics.items() for k in t.config if k in keys}
    return out


def cancel(admin: ReassignAdmin, connection: Connection, cluster: str,
           partitions: Sequence[tuple[str, int]] | None = None) -> tuple[list[InFlightMove], list[str]]:
    """`--cancel` (KIP-455): every reassignment the reconciler started (or those of `partitions`) reverted to its
    original replicas (AlterPartitionReassignments with no target), then, once none of its own moves remains, its
    throttles removed, as `kafka-reassign-partitions.sh --cancel` does without `--preserve-throttles`. Returns the
    moves cancelled and what could not be done."""
    record = parse(connection.reassignment_record())
    in_flight = admin.reassignments()
    ours = [m for tp, m in sorted(in_flight.items())
            if record is not None and record.started(m.topic, m.partition, m.target)]
    chosen = [m for m in ours if partitions is None or (m.topic, m.partition) in set(partitions)]
    problems = [f"{t}-{p}: {error}" for (t, p), error in
                sorted(admin.alter({(m.topic, m.partition): None for m in chosen}).items())]
    still = [m for tp, m in admin.reassignments().items()
             if record is not None and record.started(m.topic, m.partition, m.target)]
    if record is not None and not still and not problems:
        problems += clear_throttles(admin, set(record.brokers), set(record.topics))
        if not problems:
            connection.keep_reassignment_record(None)
    return chosen, problems
