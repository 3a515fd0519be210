"""Which backend a cluster has: chosen once, from its spec (`spec.kraft` or `spec.zookeeper`; validation makes
it exactly one). Every use case asks `backend_for(cluster)` and then talks to "the backend"
(reconciler/backend.py), never to ZooKeeper or KRaft by name."""

from __future__ import annotations

from reconciler.backend import Backend
from reconciler.model import ClusterSpec
from reconciler.zk.backend import ZOOKEEPER


def backend_for(cluster: ClusterSpec) -> Backend:
    if cluster.kraft is not None:
        from reconciler.kraft.backend import KRAFT  # loaded by KRaft clusters only: ~15 modules a ZooKeeper run skips

        return KRAFT
    return ZOOKEEPER
