"""Read a cluster's live state from ZooKeeper with pipelined requests.

Each level issues all of its requests before waiting for any answer, so a 10,000-topic cluster costs a
handful of round trips, not 20,000:
  1. list /config/<type>, /brokers/ids, /brokers/topics; get /controller and the extra entities;
  2. get every listed znode;
     ACL resources are listed and read in the same two levels (zk/acls.py);
  3. list /config/users/<u>/clients of the users that have children;  4. get those user-client znodes.
Requests go out as ZooKeeper multiRead batches (3.6+, one request per ~1,000 znodes, ~20x cheaper in
Python than one kazoo request per znode; see `multiread.py`); on an older server (UNIMPLEMENTED) the whole
read is done again with kazoo `get_async`/`get_children_async` per znode. A znode that vanishes between
list and get is absent; corrupt data raises `LiveStateError` naming the znode.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry, RetryFailedError

from reconciler.errors import LiveStateError
from reconciler.model import (
    ENTITY_TYPES,
    KRAFT_ENTITY_TYPES,
    AclResource,
    BrokerRegistration,
    ControllerInfo,
    EntityRef,
    LiveAcls,
    LiveEntity,
    LiveState,
    LiveTopic,
    desanitize,
    frozen_map,
    sanitize,
)
from reconciler.zk import layout, multiread
from reconciler.zk.acls import acl_type_paths, decode_acls, resource_path
from reconciler.zk.multiread import GET_CHILDREN, GET_DATA
from reconciler.zk.session import ZooKeeperError

ReadProgress = Callable[[int, int], None]  # (znode answers received, requests issued), both cumulative

# multiRead, its batching and the per-client "server lacks it" memory live in multiread.py (shared with
# apply's pre-read); these names stay for the tests that patch or inspect them
_MultiRead = multiread.MultiRead
_multi_read_support = multiread.NO_MULTI_READ
ZK_ENTITY_TYPES = frozenset(ENTITY_TYPES) - KRAFT_ENTITY_TYPES

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReadScope:
    """What to read: whole entity types, single declared entities of other types, brokers, topics."""

    entity_types: frozenset[str] = ZK_ENTITY_TYPES  # /config/<type> listed and read fully
    extra_entities: frozenset[EntityRef] = frozenset()  # read even if their type is not listed
    brokers: bool = True  # /brokers/ids/*
    topics: bool = True  # /brokers/topics/*
    acls: bool = True  # /kafka-acl/<type>/* and /kafka-acl-extended/prefixed/<type>/* (zk/acls.py)

    def __post_init__(self) -> None:
        if unknown := set(self.entity_types) - set(ENTITY_TYPES):
            raise ValueError(f"unknown entity types {sorted(unknown)}")
        # every type of a whole read (prune, snapshot) but those a ZooKeeper-mode cluster cannot hold (groups,
        # client-metrics, features: KRaft only; validation refuses them for ZooKeeper clusters)
        object.__setattr__(self, "entity_types", frozenset(self.entity_types) & ZK_ENTITY_TYPES)


class _Pipeline:
    """One read's requests, against one deadline (see `multiread.read`); NoNode -> None."""

    def __init__(self, client: KazooClient, deadline: float, multi_read: bool, progress: ReadProgress | None) -> None:
        self.client = client
        self.deadline = deadline
        self.multi_read = multi_read
        self.chroot: str = client.chroot or ""
        self.progress = progress
        self.requested = self.answered = 0

    def where(self, path: str) -> str:
        return f"{self.chroot}{path}"  # the server-side path: chroot + Kafka's path

    def children(self, paths: Iterable[str]) -> dict[str, list[str] | None]:
        return {path: r for (_, path), r in self.run([(GET_CHILDREN, p) for p in paths]).items()}

    def data(self, paths: Iterable[str]) -> dict[str, tuple[bytes | None, Any] | None]:
        return {path: r for (_, path), r in self.run([(GET_DATA, p) for p in paths]).items()}

    def run(self, ops: list[tuple[int, str]]) -> dict[tuple[int, str], Any]:
        self.requested += len(ops)
        try:
            results = multiread.read(self.client, ops, multi=self.multi_read, wait=self._remaining,
                                     on_batch=self._answered if self.progress is not None else None)
        except KazooTimeoutError as exc:  # names the znode; not worth a retry of the whole read
            raise ZooKeeperError(str(exc)) from None
        return dict(zip(ops, results, strict=True))

    def _remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def _answered(self, count: int) -> None:
        self.answered += count
        if self.progress is not None:
            self.progress(self.answered, self.requested)


def _read_with_retries(
    client: KazooClient, cluster: str, scope: ReadScope, timeout_s: float, multi_read: bool,
    progress: ReadProgress | None = None,
) -> LiveState:
    """One read of the live state of one cluster.

    `multi_read`: batch the gets into multiRead requests when the server supports them (learnt once per
    client), else one kazoo request per znode. The whole (idempotent) read is retried a few times on
    connection loss; an expired session is not retried.
    """
    retry = KazooRetry(max_tries=3, delay=0.5, backoff=2, max_delay=4.0, ignore_expire=False)
    use_multi = multi_read and multiread.supported(client)
    try:
        try:
            state: LiveState = retry(_read_once, client, cluster, scope, timeout_s, use_multi, progress)
        except multiread.MultiReadUnsupported:
            # ZooKeeper < 3.6 answers UNIMPLEMENTED and drops the connection (not the session): kazoo
            # reconnects, and the connection-loss retry covers requests caught in between.
            multiread.NO_MULTI_READ.add(client)
            state = retry(_read_once, client, cluster, scope, timeout_s, False, progress)
    except RetryFailedError as exc:
        raise ZooKeeperError(f"lost the ZooKeeper connection while reading cluster {cluster}") from exc
    except (SessionExpiredError, ConnectionClosedError, ConnectionLoss, OperationTimeoutError) as exc:
        raise ZooKeeperError(f"ZooKeeper session unusable while reading cluster {cluster}: {exc!r}") from exc
    except KazooException as exc:
        raise ZooKeeperError(f"ZooKeeper error while reading cluster {cluster}: {exc!r}") from exc
    return state


RECONNECT_WAIT_S = 15.0  # for kazoo's new session after an expiry (it fails every request until then)


def read_live_state(
    client: KazooClient,
    cluster: str,
    scope: ReadScope = ReadScope(),
    *,
    timeout_s: float = 120.0,
    multi_read: bool = True,
    progress: ReadProgress | None = None,
) -> LiveState:
    """The live state of one cluster (see `_read_with_retries`), read once more if the ZooKeeper session
    expired during the read: a read holds nothing in the session and kazoo has already opened a new one,
    so starting over is safe. A closed client (unreachable for longer than the retries) is not retried.
    `progress(answered, requested)` follows the read (counts restart with a retried read)."""
    try:
        return _read_with_retries(client, cluster, scope, timeout_s, multi_read, progress)
    except ZooKeeperError as exc:
        cause = exc.__cause__
        if not isinstance(cause, SessionExpiredError) or isinstance(cause, ConnectionClosedError):
            raise
    log.warning("the ZooKeeper session expired while reading cluster %s; reading it again", cluster)
    deadline = time.monotonic() + RECONNECT_WAIT_S
    while not client.connected and time.monotonic() < deadline:
        time.sleep(0.05)
    return _read_with_retries(client, cluster, scope, timeout_s, multi_read, progress)


def _read_once(
    client: KazooClient, cluster: str, scope: ReadScope, timeout_s: float, multi: bool,
    progress: ReadProgress | None = None,
) -> LiveState:
    zk = _Pipeline(client, time.monotonic() + timeout_s, multi, progress)
    types = sorted(scope.entity_types)
    extras = sorted((r for r in scope.extra_entities if r.entity_type not in scope.entity_types), key=str)

    # level 1: listings, the controller and the individually requested entities (one request with multiRead)
    lists = [layout.entity_type_path(t) for t in types]
    lists += [layout.BROKER_IDS_PATH] if scope.brokers else []
    lists += [layout.TOPICS_PATH, layout.DELETE_TOPICS_PATH] if scope.topics else []
    acl_lists = acl_type_paths() if scope.acls else {}
    lists += list(acl_lists)
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
    topic_paths = [layout.topic_path(t) for t in topic_names]
    acl_paths = _acl_resources(acl_lists, listed)
    got.update(
        zk.data(
            [p for p in entity_paths if p not in got]
            + [layout.broker_path(b) for b in broker_ids]
            + topic_paths
            + list(acl_paths)
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

    live = _decode(zk, cluster, got, entity_paths, broker_ids, dict(zip(topic_names, topic_paths, strict=True)))
    being_deleted = frozenset(listed.get(layout.DELETE_TOPICS_PATH) or ())
    if being_deleted:
        live = replace(live, topics_being_deleted=being_deleted)
    return replace(live, acls=_decode_acls(zk, got, acl_paths)) if scope.acls else live


def _acl_resources(acl_lists: Mapping[str, tuple[str, str]], listed: Mapping[str, list[str] | None]
                   ) -> dict[str, AclResource]:
    """Each listed ACL resource znode's path -> its resource pattern."""
    return {resource_path(r): r for path, (rtype, pattern) in acl_lists.items()
            for r in (AclResource(rtype, pattern, child) for child in listed[path] or ())}


def _decode_acls(zk: _Pipeline, got: Mapping[str, Any], acl_paths: Mapping[str, AclResource]
                 ) -> Mapping[AclResource, LiveAcls]:
    return frozen_map({r: LiveAcls(r, decode_acls(item[0] or b"", zk.where(path)), item[1].version)
                       for path, r in acl_paths.items() if (item := got.get(path)) is not None})


def _decode(
    zk: _Pipeline,
    cluster: str,
    got: dict[str, Any],
    entity_paths: dict[str, EntityRef],
    broker_ids: list[int],
    topic_paths: Mapping[str, str],  # name -> its assignment znode, in the order read
) -> LiveState:
    # A cluster's topics repeat a few configs and assignments byte for byte: each distinct znode content is
    # decoded and checked once (the read-only results are shared), the rest is a dict lookup.
    configs: dict[tuple[bytes | None, bool], Mapping[str, str]] = {}
    entities: dict[EntityRef, LiveEntity] = {}
    for path, ref in entity_paths.items():
        if (item := got.get(path)) is not None:
            data, stat = item
            children = stat.numChildren > 0
            if (config := configs.get((data, children))) is None:
                config = frozen_map(layout.decode_entity_config(data, zk.where(path), children))
                configs[data, children] = config
            entities[ref] = LiveEntity(ref, config, stat.version, children, int(stat.mtime))
    brokers: dict[int, BrokerRegistration] = {}
    for broker in broker_ids:
        path = layout.broker_path(broker)
        if (item := got.get(path)) is not None:
            brokers[broker] = layout.decode_broker_registration(broker, item[0] or b"", zk.where(path))
    topics: dict[str, LiveTopic] = {}
    assignments: dict[bytes, LiveTopic] = {}
    shapes: dict[bytes, LiveTopic] = {}  # by the content without its topic id, unique to each topic
    split_topic_id = layout.split_topic_id
    for name, path in topic_paths.items():
        if (item := got.get(path)) is not None:
            data, stat = item[0] or b"", item[1]
            if (seen := assignments.get(data)) is not None:
                topics[name] = LiveTopic(name, seen.assignment, stat.version, seen.topic_id)
                continue
            split = split_topic_id(data)
            if split is not None and (like := shapes.get(split[0])) is not None:
                topics[name] = LiveTopic(name, like.assignment, stat.version, split[1])
                continue
            topics[name] = assignments[data] = layout.decode_topic_assignment(name, data, zk.where(path), stat.version)
            if split is not None:
                shapes[split[0]] = topics[name]
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
    def where() -> str:  # only for an error: 10,000 topics would each build it
        if user is None:
            return zk.where(f"{layout.CONFIG_ROOT}/{entity_type}/{child}")
        return zk.where(f"{layout.CONFIG_ROOT}/users/{sanitize(user)}/clients/{child}")

    if entity_type in ("users", "clients") and sanitize(desanitize(child)) != child:
        raise LiveStateError(f"znode {where()}: entity name is not in Kafka's sanitised form")
    name = desanitize(child) if entity_type in ("users", "clients") else child
    try:
        return EntityRef("users", user, name) if user is not None else EntityRef(entity_type, name)
    except ValueError as exc:
        raise LiveStateError(f"znode {where()}: {exc}") from exc


def _broker_id(zk: _Pipeline, child: str) -> int:
    if not child.isdigit():
        raise LiveStateError(f"znode {zk.where(layout.BROKER_IDS_PATH)}/{child}: broker id is not a number")
    return int(child)
