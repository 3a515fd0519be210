"""The owner record on both backends (issue 38 finding 1: a target belongs to one cluster directory), through
the seam (`backends.backend_for(cluster).connect(...)`): a real ZooKeeper (the znode `<reconcilerPath>/owner`)
and a real Kafka 4.1 KRaft node (the `["owner"]` record of the state topic). None until claimed; the first
claim is recorded; a second directory's claim returns the first; two claims at once record exactly one."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.backend import Owner
from reconciler.backends import backend_for
from reconciler.model import NO_ZOOKEEPER, AdminClientSpec, ClusterSpec, KraftSpec, ZooKeeperSpec
from tests.integration.test_kraft_state import state_records
from tests.kraftbrokers import KraftCluster


def _zookeeper(connect: str) -> ClusterSpec:
    return ClusterSpec("prod", "3.9", ZooKeeperSpec(connect), (1,))


def _kraft(kraft: KraftCluster, topic: str) -> ClusterSpec:
    admin = AdminClientSpec((kraft.bootstrap,))
    return ClusterSpec("prod", "4.1", NO_ZOOKEEPER, (1,), kraft=KraftSpec(admin, state_topic=topic), admin=admin)


def _claims(cluster: ClusterSpec, root: Path) -> None:
    backend = backend_for(cluster)
    with backend.connect(cluster, root) as connection:
        assert connection.owner() is None
        first = Owner("prod", "alice@ci", "2025-01-01T00:00:00Z", "plan-1")
        assert connection.claim(first) == first
    with backend.connect(cluster, root) as connection:  # another run, another directory
        assert connection.claim(Owner("sandbox", "mallory@laptop", "2025-01-02T00:00:00Z")) == first
        assert connection.owner() == first


def test_the_owner_record_in_zookeeper(zk_connect: str, zk_client: KazooClient, tmp_path: Path) -> None:
    _claims(_zookeeper(zk_connect), tmp_path)
    data, _ = zk_client.get("/reconciler/owner")  # what ZooKeeper holds
    assert json.loads(data)["cluster"] == "prod"


def test_the_owner_record_in_the_kraft_state_topic(kraft4: KraftCluster, tmp_path: Path) -> None:
    topic = f"_kr-{uuid.uuid4().hex[:8]}"
    _claims(_kraft(kraft4, topic), tmp_path)
    owners = [v for k, v in state_records(kraft4, topic) if k == ["owner"]]
    assert owners == [{"cluster": "prod", "claimedBy": "alice@ci", "time": "2025-01-01T00:00:00Z",
                       "planId": "plan-1"}]


@pytest.mark.parametrize("backend", ["zookeeper", "kraft"])
def test_of_two_claims_at_once_exactly_one_is_recorded(backend: str, request: pytest.FixtureRequest,
                                                       tmp_path: Path) -> None:
    if backend == "zookeeper":
        cluster = _zookeeper(request.getfixturevalue("zk_connect"))
    else:
        cluster = _kraft(request.getfixturevalue("kraft4"), f"_kr-{uuid.uuid4().hex[:8]}")

    def claim(name: str) -> Owner:
        with backend_for(cluster).connect(cluster, tmp_path) as connection:
            return connection.claim(Owner(name, f"{name}@ci", "t"))

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(claim, ["a", "b"]))
    assert results[0] == results[1] and results[0].cluster in ("a", "b")
