"""`--verify`'s check before the first write: a broker must answer DescribeCluster within the timeout. The Kafka
client may send that request to a broker that is down but still registered (its ZooKeeper session has not
expired yet); it picks another next time, so one refused attempt must not refuse the apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from reconciler.brokers import verify
from reconciler.brokers.admin import BrokerAdminError
from reconciler.model import AdminClientSpec, ClusterSpec, ZooKeeperSpec

CLUSTER = ClusterSpec("c1", "3.9", ZooKeeperSpec("zk:2181"), (1, 2, 3),
                      admin=AdminClientSpec(("b1:9092", "b2:9092", "b3:9092")))


class FakeAdmin:
    """Refuses DescribeCluster `failures` times (as kafka-python does when it picked a stopped broker)."""

    calls = 0
    failures = 0

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        self.where = "brokers at b1:9092,b2:9092,b3:9092"

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def live_brokers(self) -> dict[int, str]:
        FakeAdmin.calls += 1
        if FakeAdmin.calls <= FakeAdmin.failures:
            raise KafkaConnectionError("connection refused")
        return {2: "b2:9092", 3: "b3:9092"}


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    FakeAdmin.calls, FakeAdmin.failures = 0, 0
    monkeypatch.setattr(verify, "BrokerAdmin", FakeAdmin)
    monkeypatch.setattr(verify, "admin_security", lambda cluster, root: None)
    monkeypatch.setattr(verify, "PRECONDITION_RETRY_S", 0.01)
    return FakeAdmin


def test_a_refused_attempt_is_tried_again_within_the_timeout(admin: type[FakeAdmin]) -> None:
    admin.failures = 2
    verify.verify_preconditions(CLUSTER, Path("."), timeout_s=5.0)
    assert admin.calls == 3


def test_no_answer_within_the_timeout_refuses_naming_the_brokers(admin: type[FakeAdmin]) -> None:
    admin.failures = 10**9
    with pytest.raises(BrokerAdminError) as err:
        verify.verify_preconditions(CLUSTER, Path("."), timeout_s=0.05)
    assert err.value.message == ("cluster c1: --verify cannot ask the brokers at b1:9092,b2:9092,b3:9092 "
                                 "(KafkaConnectionError)")
    assert admin.calls >= 2
