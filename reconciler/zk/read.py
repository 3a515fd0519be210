"""Read a cluster's live state from ZooKeeper with pipelined requests.

Each level issues all of its requests before waiting for any answer, so a 10,000-topic cluster costs a
handful of round trips, not 20,000:
  1. list /config/<type>, /brokers/ids, /brokers/topics; get /controller and the extra entities;
  2. get every listed znode;
  3. list /config/users/<u>/clients of the users that have children;  4. get those user-client znodes.
Requests go out as ZooKeeper multiRead batches (3.6+, one request per ~1,000 znodes, ~20x cheaper in
Python than one kazoo request per znode); on an older server (UNIMPLEMENTED) the read falls back to kazoo
`get_async`/`get_children_async` per znode. A znode that vanishes between list and get is absent; corrupt
data raises `LiveStateError` naming the znode.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    EXCEPTIONS,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import (
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    write_string,
)
from kazoo.protocol.serialization import stat_struct as _stat_struct
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError

from reconciler.errors import LiveStateError
from reconciler.model import (
    ENTITY_TYPES,
    BrokerRegistration,
    ControllerInfo,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    desanitize,
    frozen_map,
    sanitize,
)
from reconciler.zk import layout
from reconciler.zk.session import ZooKeeperError

GET_DATA, GET_CHILDREN = 4, 8  # ZooDefs.OpCode
_BATCH_OPS, _BATCH_BYTES = 1000, 256 * 1024  # well below the server's 1 MB jute.maxbuffer for requests
_multi_read_support: weakref.WeakKeyDictionary[KazooClient, bool] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class ReadScope:
    """What to read: whole entity types, single declared entities of other types, brokers, topics."""

    entity_types: frozenset[str] = frozenset(ENTITY_TYPES)  # /config/<type> listed and read fully
    extra_entities: frozenset[EntityRef] = frozenset()  # read even if their type is not listed
    brokers: bool = True  # /brokers/ids/*
    topics: bool = True  # /brokers/topics/*

    def __post_init__(self) -> None:
        if unknown := set(self.entity_types) - set(ENTITY_TYPES):
            raise ValueError(f"unknown entity types {sorted(unknown)}")


class _MultiRead:
    """ZooKeeper's multiRead request (OpCode 22, 3.6+) in kazoo's request protocol: independent getData /
    getChildren sub-operations, each answered with its result or its own error code."""

    type = 22

    def __init__(self, ops: Sequence[tuple[int, str]]) -> None:
        self.ops = ops

    def serialize(self) -> bytearray:
        buf = bytearray()
        for op, path in self.ops:
            buf += multiheader_struct.pack(op, False, -1) + write_string(path) + b"\0"  # no watch
        buf += multiheader_struct.pack(-1, True, -1)
        return buf

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        while True:
            op, done, _ = multiheader_struct.unpack_from(buf, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op == GET_DATA:
                data, offset = read_buffer(buf, offset)
                results.append((data, ZnodeStat._make(_stat_struct.unpack_from(buf, offset))))
                offset += _stat_struct.size
            elif op == GET_CHILDREN:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            elif op == -1:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"unexpected multiRead result type {op}")

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG
        return f"MultiRead({len(self.ops)} ops)"


class _MultiReadUnsupported(Exception):
    pass


class _Pipeline:
    """Issues a batch of requests, then collects them against one deadline; NoNode -> None."""

    def __init__(self, client: KazooClient, deadline: float, multi_read: bool) -> None:
        self.client = client
        self.deadline = deadline
        self.multi_read = multi_read
        self.chroot: str = client.chroot or ""

    def where(self, path: str) -> str:
        return f"{self.chroot}{path}"  # the server-side path: chroot + Kafka's path

    def children(self, paths: Iterable[str]) -> dict[str, list[str] | None]:
        return {path: r for (_, path), r in self.run([(GET_CHILDREN, p) for p in paths]).items()}

    def data(self, paths: Iterable[str]) -> dict[str, tuple[bytes | None, Any] | None]:
        return {path: r for (_, path), r in self.run([(GET_DATA, p) for p in paths]).items()}

    def run(self, ops: list[tuple[int, str]]) -> dict[tuple[int, str], Any]:
        if not ops:
            return {}
        pending = self._issue_multi(ops) if self.multi_read else self._issue_single(ops)
        results: dict[tuple[int, str], Any] = {}
        for batch, future in pending:
            try:
                value = future.get(timeout=max(0.0, self.deadline - time.monotonic()))
                replies = value if self.multi_read else [value]
            except UnimplementedError:
                raise _MultiReadUnsupported() from None
            except KazooTimeoutError:
                raise ZooKeeperError(f"timed out reading {self.where(batch[0][1])} from ZooKeeper") from None
            except (NoNodeError, NoAuthError) as exc:
                if self.multi_read:  # multiRead reports these per operation, never for the request
                    raise
                replies = [exc]
            if len(replies) != len(batch):
                raise ZooKeeperError(
                    f"malformed multiRead response ({len(replies)} results for {len(batch)})"
                )
            for op, reply in zip(batch, replies, strict=True):
                results[op] = self._result(op[1], reply)
        return results

    def _result(self, path: str, reply: Any) -> Any:
        if isinstance(reply, NoNodeError):
            return None
        if isinstance(reply, NoAuthError):
            raise LiveStateError(
                f"znode {self.where(path)}: not readable (NoAuth): authenticate as the brokers' "
                "ZooKeeper identity"
            )
        if isinstance(reply, KazooException):
            raise reply
        return reply

    def _issue_multi(self, ops: list[tuple[int, str]]) -> list[tuple[list[tuple[int, str]], Any]]:
        pending = []
        batch: list[tuple[int, str]] = []
        size = 0
        for op in [*ops, (0, "")]:  # sentinel flushes the last batch
            if batch and (op[0] == 0 or len(batch) >= _BATCH_OPS or size >= _BATCH_BYTES):
                future = self.client.handler.async_result()
                # kazoo has no public multiRead; _call queues any request object with type/serialize
                self.client._call(_MultiRead([(code, self.chroot + path) for code, path in batch]), future)
                pending.append((batch, future))
                batch, size = [], 0
            if op[0]:
                batch.append(op)
                size += len(op[1]) + len(self.chroot) + 17
        return pending

    def _issue_single(self, ops: list[tuple[int, str]]) -> list[tuple[list[tuple[int, str]], Any]]:
        get = {GET_DATA: self.client.get_async, GET_CHILDREN: self.client.get_children_async}
        return [([op], get[op[0]](op[1])) for op in ops]


def read_live_state(
    client: KazooClient,
    cluster: str,
    scope: ReadScope = ReadScope(),
    *,
    timeout_s: float = 120.0,
    multi_read: bool = True,
) -> LiveState:
    """The live state of one cluster.

    `multi_read`: batch the gets into multiRead requests when the server supports them (learnt once per
    client), else one kazoo request per znode. The whole (idempotent) read is retried a few times on
    connection loss; an expired session is not retried.
    """
    retry = KazooRetry(max_tries=3, delay=0.5, backoff=2, max_delay=4.0, ignore_expire=False)
    use_multi = multi_read and _multi_read_support.get(client, True)
    try:
        try:
            state: LiveState = retry(_read_once, client, cluster, scope, timeout_s, use_multi)
        except _MultiReadUnsupported:
            # ZooKeeper < 3.6 answers UNIMPLEMENTED and drops the connection (not the session): kazoo
            # reconnects, and the connection-loss retry covers requests caught in between.
            _multi_read_support[client] = False
            state = retry(_read_once, client, cluster, scope, timeout_s, False)
    except RetryFailedError as exc:
        raise ZooKeeperError(f"lost the ZooKeeper connection while reading cluster {cluster}") from exc
    except (SessionExpiredError, ConnectionClosedError, ConnectionLoss, OperationTimeoutError) as exc:
        raise ZooKeeperError(f"ZooKeeper session unusable while reading cluster {cluster}: {exc!r}") from exc
    except KazooException as exc:
        raise ZooKeeperError(f"ZooKeeper error while reading cluster {cluster}: {exc!r}") from exc
    return state


def _read_once(
    client: KazooClient, cluster: str, scope: ReadScope, timeout_s: float, multi: bool
) -> LiveState:
    zk = _Pipeline(client, time.monotonic() + timeout_s, multi)
    types = sorted(scope.entity_types)
    extras = sorted((r for r in scope.extra_entities if r.entity_type not in scope.entity_types), key=str)

    # level 1: listings, the controller and the individually requested entities (one request with multiRead)
    lists = [layout.entity_type_path(t) for t in types]
    lists += [layout.BROKER_IDS_PATH] if scope.brokers else []
    lists += [layout.TOPICS_PATH] if scope.topics else []
    singles = [layout.CONTROLLER_PATH, *(layout.entity_path(r) for r in extras)]
    level1 = zk.run([(GET_CHILDREN, p) for p in lists] + [(GET_DATA, p) for p in singles])
    listed: dict[str, list[str] | None] = {p: level1[GET_CHILDREN, p] for p in lists}
    got: dict[str, Any] = {p: level1[GET_DATA, p] for p in singles}

    # level 2: every listed znode
    entity_paths: dict[str, EntityRef] = {layout.entity_path(r): r for r in extras}
    for entity_type in types:
        for child in listed[layout.entity_type_path(entity_type)] or ():
            ref = _ref(zk, entity_type, child)
            entity_paths[layout.entity_path(ref)] = ref
    broker_ids = sorted(_broker_id(zk, c) for c in listed.get(layout.BROKER_IDS_PATH) or ())
    topic_names = sorted(listed.get(layout.TOPICS_PATH) or ())
    got.update(
        zk.data(
            [p for p in entity_paths if p not in got]
            + [layout.broker_path(b) for b in broker_ids]
            + [layout.topic_path(t) for t in topic_names]
        )
    )

    # levels 3 and 4: <user, client-id> entities, only under users whose znode has children
    if "users" in scope.entity_types:
        users = {
            path + "/clients": ref
            for path, ref in entity_paths.items()
            if ref.entity_type == "users" and ref.client is None and _has_children(got.get(path))
        }
        user_clients: dict[str, EntityRef] = {}
        for clients_path, children in zk.children(users).items():
            for child in children or ():
                ref = _ref(zk, "users", child, user=users[clients_path].name)
                user_clients[layout.entity_path(ref)] = ref
        got.update(zk.data(user_clients))
        entity_paths.update(user_clients)

    return _decode(zk, cluster, got, entity_paths, broker_ids, topic_names)


def _decode(
    zk: _Pipeline,
    cluster: str,
    got: dict[str, Any],
    entity_paths: dict[str, EntityRef],
    broker_ids: list[int],
    topic_names: list[str],
) -> LiveState:
    entities: dict[EntityRef, LiveEntity] = {}
    for path, ref in entity_paths.items():
        if (item := got.get(path)) is not None:
            data, stat = item
            config = layout.decode_entity_config(data, zk.where(path))
            entities[ref] = LiveEntity(ref, frozen_map(config), stat.version, stat.numChildren > 0)
    brokers: dict[int, BrokerRegistration] = {}
    for broker in broker_ids:
        path = layout.broker_path(broker)
        if (item := got.get(path)) is not None:
            brokers[broker] = layout.decode_broker_registration(broker, item[0] or b"", zk.where(path))
    topics: dict[str, LiveTopic] = {}
    for name in topic_names:
        path = layout.topic_path(name)
        if (item := got.get(path)) is not None:
            data, stat = item
            topics[name] = layout.decode_topic_assignment(name, data or b"", zk.where(path), stat.version)
    controller: ControllerInfo | None = None
    if (item := got.get(layout.CONTROLLER_PATH)) is not None:
        where = zk.where(layout.CONTROLLER_PATH)
        controller = layout.decode_controller(item[0] or b"", where, item[1].version)
    return LiveState(
        cluster=cluster,
        brokers=MappingProxyType(brokers),
        topics=MappingProxyType(topics),
        entities=frozen_map(entities),
        controller=controller,
    )


def _has_children(item: tuple[bytes | None, Any] | None) -> bool:
    return item is not None and item[1].numChildren > 0


def _ref(zk: _Pipeline, entity_type: str, child: str, *, user: str | None = None) -> EntityRef:
    """The entity of a znode name. Refuses a name not in Kafka's sanitised form: `EntityRef.path` would
    send a write to a different znode than the one read (and Kafka would desanitise it differently)."""
    if user is None:
        where = zk.where(f"{layout.CONFIG_ROOT}/{entity_type}/{child}")
    else:
        where = zk.where(f"{layout.CONFIG_ROOT}/users/{sanitize(user)}/clients/{child}")
    if entity_type in ("users", "clients") and sanitize(desanitize(child)) != child:
        raise LiveStateError(f"znode {where}: entity name is not in Kafka's sanitised form")
    name = desanitize(child) if entity_type in ("users", "clients") else child
    try:
        return EntityRef("users", user, name) if user is not None else EntityRef(entity_type, name)
    except ValueError as exc:
        raise LiveStateError(f"znode {where}: {exc}") from exc


def _broker_id(zk: _Pipeline, child: str) -> int:
    if not child.isdigit():
        raise LiveStateError(f"znode {zk.where(layout.BROKER_IDS_PATH)}/{child}: broker id is not a number")
    return int(child)
