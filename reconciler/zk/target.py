"""Is this ZooKeeper target a Kafka cluster? Refuse to write where none of the declared brokers is registered.

A broker registers itself at `<chroot>/brokers/ids/<id>` (an ephemeral znode, `KafkaZkClient.registerBroker`)
while it runs. A connect string without the brokers' chroot (`127.0.0.1:2181` for brokers under `/kafka/lab-1`)
reads an empty "cluster" and would write configs, topics and ACLs at the ensemble's root, where no broker reads
them; with every broker down the writes land unseen too. So an apply to a target where no broker of the declared
ids (`spec.brokers`) is registered is refused before its first write, unless the operator says so
(`--allow-no-brokers`: pre-seeding a cluster's dynamic configs before its brokers first start, which KIP-226
allows). The refusal names the chroots of the same ensemble that do hold brokers, so a missing chroot is
corrected at a glance: found by a bounded walk from the ensemble's root (depth and znode count bounded; Kafka's
own subtrees and ZooKeeper's `/zookeeper` are not entered).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from reconciler.errors import RefusedError, printable
from reconciler.model import ClusterSpec

MAX_DEPTH = 4  # /kafka/prod/eu-1 is depth 3: deeper chroots are rare
MAX_VISITED = 2_000  # znodes listed at most: the walk is a hint, never a scan of a large ensemble
SHOWN = 10
# Kafka's own znodes under a chroot (KafkaZkClient's paths) and ZooKeeper's: never a chroot of another cluster
_NOT_CHROOTS = frozenset({"zookeeper", "brokers", "config", "admin", "controller", "controller_epoch",
                          "isr_change_notification", "log_dir_event_notification", "latest_producer_id_block",
                          "consumers", "cluster", "feature", "kafka-acl", "kafka-acl-changes", "kafka-acl-extended",
                          "kafka-acl-extended-changes", "delegation_token", "migration"})


def registered(client: KazooClient) -> list[int]:
    """The broker ids registered under the client's chroot."""
    try:
        return sorted(int(c) for c in client.get_children("/brokers/ids") if c.isdigit())
    except NoNodeError:
        return []


def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return sorted(client.get_children(path))
    except (NoNodeError, KazooException):
        return []


def chroots_with_brokers(root_client: KazooClient) -> Iterator[tuple[str, list[int]]]:
    """(chroot, registered ids) of every chroot within MAX_DEPTH of the ensemble's root holding a registered
    broker; `root_client` has no chroot. Breadth first, at most MAX_VISITED znodes listed."""
    queue: list[tuple[str, int]] = [("/", 0)]
    visited = 0
    while queue and visited < MAX_VISITED:
        path, depth = queue.pop(0)
        visited += 1
        names = _children(root_client, path)
        base = "" if path == "/" else path
        if "brokers" in names:
            ids = sorted(int(c) for c in _children(root_client, f"{base}/brokers/ids") if c.isdigit())
            if ids:
                yield path, ids
        if depth < MAX_DEPTH:
            queue += [(f"{base}/{n}", depth + 1) for n in names if n not in _NOT_CHROOTS]


def refuse_without_brokers(client: KazooClient, cluster: ClusterSpec,
                           at_root: Callable[[], AbstractContextManager[KazooClient]]) -> None:
    """Refuse (RefusedError) when no broker of `cluster.brokers` is registered under the client's chroot, naming
    the chroots of the ensemble that hold brokers (`at_root()`: a session at the ensemble's root, opened only
    for the refusal when the client has a chroot)."""
    found = registered(client)
    if set(found) & set(cluster.brokers):
        return
    zk = cluster.zookeeper
    declared = ", ".join(str(b) for b in cluster.brokers)
    where = zk.source or cluster.source
    at = f" (spec.zookeeper.connect at {where.file}:{where.line})" if where else ""
    if found:
        seen = f"only broker(s) {', '.join(map(str, found))} are registered there, none of the declared {declared}"
    else:
        seen = f"no broker is registered there (declared: {declared})"
    try:
        if client.chroot:
            with at_root() as root_client:
                others = list(chroots_with_brokers(root_client))
        else:
            others = list(chroots_with_brokers(client))
    except Exception:  # the hint must never hide the refusal
        others = []
    hosts = zk.hosts
    others = [(c, ids) for c, ids in others if c != (zk.chroot or "/")]
    if others:
        listed = "; ".join(f"{hosts}{'' if c == '/' else c} (brokers {', '.join(map(str, ids))})"
                           for c, ids in others[:SHOWN])
        more = f" and {len(others) - SHOWN} more" if len(others) > SHOWN else ""
        hint = f"chroots of this ensemble that hold brokers: {listed}{more}"
    else:
        hint = "no chroot of this ensemble holds a registered broker (are the brokers running?)"
    raise RefusedError(printable(
        f"cluster {cluster.name}: refusing to write to {zk.connect}{at}: {seen}, so no broker would read what is "
        f"written. {hint}. Fix the connect string (the brokers' zookeeper.connect, chroot included), or start the "
        "brokers; to write anyway (pre-seeding configs before the brokers' first start), re-run with "
        "--allow-no-brokers. Nothing was written"))
