"""Which live cluster a cluster directory manages: its *target*, so that one target belongs to one directory.

Two directories naming one target would each plan against it as if it were theirs: a pull request adding
`clusters/sandbox/` with prod's ZooKeeper and `policy: {deleteTopics: ["*"]}` was planned "against an empty
cluster" (no changes) while its merge deleted prod's topics (issue 38, finding 1). A target is

* ZooKeeper mode: the ensemble and the chroot, as kazoo reads the connect string (`rules.cluster.parse_connect`:
  host names lower-cased, the chroot normalised). Two connect strings that share one `host:port` with the same
  chroot reach the same znodes;
* KRaft: the brokers of `spec.kraft.bootstrapServers`. Two clusters sharing one bootstrap server are one cluster.

Statically, another name for the same host (an IP address, a DNS alias) cannot be told apart: the owner record
at the target (`ownership.py`, written by apply) covers that. Pure: standard library and core types only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.model import ClusterSpec
from reconciler.rules.cluster import parse_bootstrap_server, parse_connect

TargetKey = tuple[str, str, int, str]  # ("zookeeper", host, port, chroot) or ("kraft", host, port, "")


def zookeeper_keys(connect: str) -> frozenset[TargetKey]:
    try:
        parsed = parse_connect(connect)
    except ValueError:
        return frozenset()  # validation reports it; an unreadable string reaches nothing
    return frozenset(("zookeeper", host, port, parsed.chroot or "/") for host, port in parsed.hosts)


def kraft_keys(servers: Iterable[str]) -> frozenset[TargetKey]:
    keys = set()
    for server in servers:
        try:
            host, port = parse_bootstrap_server(server)
        except ValueError:
            continue
        keys.add(("kraft", host.lower(), port, ""))
    return frozenset(keys)


def target_keys(cluster: ClusterSpec) -> frozenset[TargetKey]:
    if cluster.kraft is not None:
        return kraft_keys(cluster.kraft.admin.bootstrap_servers)
    return zookeeper_keys(cluster.zookeeper.connect)


def document_keys(data: Any) -> frozenset[TargetKey]:
    """The target of a raw `kind: Cluster` document (the base revision's index is read from git without building
    every cluster): empty when it names none readable."""
    spec = data.get("spec") if isinstance(data, Mapping) else None
    if not isinstance(spec, Mapping):
        return frozenset()
    kraft, zookeeper = spec.get("kraft"), spec.get("zookeeper")
    if isinstance(kraft, Mapping):
        servers = kraft.get("bootstrapServers")
        if isinstance(servers, str):
            return kraft_keys(s.strip() for s in servers.split(","))
        if isinstance(servers, list):
            return kraft_keys(str(s) for s in servers)
        return frozenset()
    if isinstance(zookeeper, Mapping) and isinstance(zookeeper.get("connect"), str):
        return zookeeper_keys(zookeeper["connect"])
    return frozenset()


def describe(cluster: ClusterSpec) -> str:
    """How a reviewer reads the target (no credentials in it)."""
    if cluster.kraft is not None:
        return "KRaft brokers " + ",".join(cluster.kraft.admin.bootstrap_servers)
    return f"ZooKeeper {cluster.zookeeper.connect}"


def shared_targets(clusters: Mapping[str, frozenset[TargetKey]]) -> dict[str, list[str]]:
    """Per cluster, the other clusters that share its target (empty when none do), sorted."""
    owners: dict[TargetKey, set[str]] = {}
    for name, keys in clusters.items():
        for key in keys:
            owners.setdefault(key, set()).add(name)
    shared: dict[str, set[str]] = {}
    for names in owners.values():
        if len(names) > 1:
            for name in names:
                shared.setdefault(name, set()).update(names - {name})
    return {name: sorted(others) for name, others in sorted(shared.items())}
