"""Read a cluster's live state from ZooKeeper with pipelined requests.

Each level issues all of its requests before waiting for any answer (kazoo `*_async`), so a 10,000-topic
cluster costs a handful of round trips, not 20,000:
  1. list /config/<type>, /brokers/ids, /brokers/topics; get /controller and the extra entities;
  2. get every listed znode;
  3. list /config/users/<u>/clients of the users that have children;  4. get those user-client znodes.
A znode that vanishes between list and get is absent; corrupt data raises `LiveStateError` naming the znode.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
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


_Stat = Any  # kazoo's ZnodeStat (untyped)
_Data = tuple[bytes | None, _Stat]
_RETRYABLE = (ConnectionLoss, OperationTimeoutError)


class _Pipeline:
    """Issues a batch of requests, then collects them against one deadline; NoNode -> None."""

    def __init__(self, client: KazooClient, deadline: float) -> None:
        self.client = client
        self.deadline = deadline
        self.chroot: str = client.chroot or ""

    def where(self, path: str) -> str:
        return f"{self.chroot}{path}"  # the server-side path: chroot + Kafka's path

    def children(self, paths: Iterable[str]) -> dict[str, list[str] | None]:
        return self._run(self.client.get_children_async, paths)

    def data(self, paths: Iterable[str]) -> dict[str, _Data | None]:
        return self._run(self.client.get_async, paths)

    def _run(self, call: Callable[[str], Any], paths: Iterable[str]) -> dict[str, Any]:
        pending = [(path, call(path)) for path in paths]
        results: dict[str, Any] = {}
        for path, result in pending:
            try:
                results[path] = result.get(timeout=max(0.0, self.deadline - time.monotonic()))
            except NoNodeError:
                results[path] = None
            except NoAuthError:
                raise LiveStateError(
                    f"znode {self.where(path)}: not readable (NoAuth): authenticate as the brokers' "
                    "ZooKeeper identity"
                ) from None
            except KazooTimeoutError:
                raise ZooKeeperError(f"timed out reading {self.where(path)} from ZooKeeper") from None
        return results


def read_live_state(
    client: KazooClient, cluster: str, scope: ReadScope = ReadScope(), *, timeout_s: float = 120.0
) -> LiveState:
    """The live state of one cluster. Retries the whole (idempotent) read a few times on connection loss."""
    retry = KazooRetry(max_tries=3, delay=0.5, backoff=2, max_delay=4.0, ignore_expire=False)
    try:
        state: LiveState = retry(_read_once, client, cluster, scope, timeout_s)
    except RetryFailedError as exc:
        raise ZooKeeperError(f"lost the ZooKeeper connection while reading cluster {cluster}") from exc
    except (SessionExpiredError, ConnectionClosedError, *_RETRYABLE) as exc:
        raise ZooKeeperError(f"ZooKeeper session unusable while reading cluster {cluster}: {exc!r}") from exc
    return state


def _read_once(client: KazooClient, cluster: str, scope: ReadScope, timeout_s: float) -> LiveState:
    zk = _Pipeline(client, time.monotonic() + timeout_s)
    types = sorted(scope.entity_types)
    extras = sorted((r for r in scope.extra_entities if r.entity_type not in scope.entity_types), key=str)

    # level 1: listings, the controller and the individually requested entities
    lists = [layout.entity_type_path(t) for t in types]
    lists += [layout.BROKER_IDS_PATH] if scope.brokers else []
    lists += [layout.TOPICS_PATH] if scope.topics else []
    listed = zk.children(lists)
    singles = zk.data([layout.CONTROLLER_PATH, *(layout.entity_path(r) for r in extras)])

    # level 2: every listed znode
    entity_paths: dict[str, EntityRef] = {layout.entity_path(r): r for r in extras}
    for entity_type in types:
        for child in listed[layout.entity_type_path(entity_type)] or ():
            ref = _ref(zk, entity_type, child)
            entity_paths[layout.entity_path(ref)] = ref
    broker_ids = [_broker_id(zk, c) for c in listed.get(layout.BROKER_IDS_PATH) or ()]
    topic_names = list(listed.get(layout.TOPICS_PATH) or ())
    got = zk.data(
        [p for p in entity_paths if p not in singles]
        + [layout.broker_path(b) for b in broker_ids]
        + [layout.topic_path(t) for t in topic_names]
    )
    got.update(singles)

    # levels 3 and 4: <user, client-id> entities under users that have children
    if "users" in scope.entity_types:
        parents = [
            p + "/clients"
            for p, r in entity_paths.items()
            if r.entity_type == "users" and r.client is None and _has_children(got.get(p))
        ]
        user_clients: dict[str, EntityRef] = {}
        for clients_path, children in zk.children(parents).items():
            user = entity_paths[clients_path[: -len("/clients")]].name
            for child in children or ():
                ref = _ref(zk, "users", child, user=user)
                user_clients[layout.entity_path(ref)] = ref
        got.update(zk.data(user_clients))
        entity_paths.update(user_clients)

    entities: dict[EntityRef, LiveEntity] = {}
    for path, ref in entity_paths.items():
        if (item := got.get(path)) is not None:
            data, stat = item
            config = layout.decode_entity_config(data, zk.where(path))
            entities[ref] = LiveEntity(ref, frozen_map(config), stat.version, stat.numChildren > 0)
    brokers: dict[int, BrokerRegistration] = {}
    for broker in sorted(broker_ids):
        path = layout.broker_path(broker)
        if (item := got.get(path)) is not None:
            brokers[broker] = layout.decode_broker_registration(broker, _bytes(item[0]), zk.where(path))
    topics: dict[str, LiveTopic] = {}
    for name in sorted(topic_names):
        path = layout.topic_path(name)
        if (item := got.get(path)) is not None:
            data, stat = item
            topics[name] = layout.decode_topic_assignment(name, _bytes(data), zk.where(path), stat.version)
    controller: ControllerInfo | None = None
    if (item := got.get(layout.CONTROLLER_PATH)) is not None:
        where = zk.where(layout.CONTROLLER_PATH)
        controller = layout.decode_controller(_bytes(item[0]), where, item[1].version)
    return LiveState(
        cluster=cluster,
        brokers=MappingProxyType(brokers),
        topics=MappingProxyType(topics),
        entities=frozen_map(entities),
        controller=controller,
    )


def _bytes(data: bytes | None) -> bytes:
    return data or b""


def _has_children(item: _Data | None) -> bool:
    return item is not None and item[1].numChildren > 0


def _ref(zk: _Pipeline, entity_type: str, child: str, *, user: str | None = None) -> EntityRef:
    """The entity of a znode name; refuses names not in Kafka's sanitised form, which a write through
    `EntityRef.path` would silently send to a different znode (and Kafka would read differently)."""
    where = zk.where(
        f"{layout.CONFIG_ROOT}/{entity_type}/{child}"
        if user is None
        else f"{layout.CONFIG_ROOT}/users/{sanitize(user)}/clients/{child}"
    )
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
