"""Does `validate` agree with the brokers? The same corpus of config changes (tests/validation_corpus.py: every
settable topic, broker and quota key of the 3.9 and 4.1 catalogs around its type and validator, every read-only
key, cases by hand) is judged offline and by a real broker's own validation (validateOnly IncrementalAlterConfigs,
CreateTopics, AlterClientQuotas): a single-node KRaft Kafka 4.1.1 and a ZooKeeper-mode Kafka 3.9.1 broker.

Every disagreement must be explained: a warning of ours naming the broker context the manifests do not hold, or
a documented difference on purpose (validation_corpus.ON_PURPOSE, docs/kafka-validation.md). The figures are
printed (`pytest -s`) and go to docs/kafka-validation.md, "Agreement with the brokers"."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from reconciler.kraft.admin import KraftAdmin
from reconciler.model import AdminClientSpec
from tests.kafkabrokers import KafkaCluster
from tests.kraftbrokers import KraftCluster
from tests.validation_corpus import TOPIC, Judged, cluster_spec, corpus, explanation, judge, summary


@pytest.fixture
def allow_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", os.environ.get("RECONCILER_ZK_ALLOWED_HOSTS", "127.0.0.1"))


def _admin(bootstrap: str) -> Iterator[KraftAdmin]:
    admin = KraftAdmin(AdminClientSpec(tuple(bootstrap.split(","))), None, request_timeout_s=30.0)
    try:
        refused = admin.create_topics({TOPIC: {"assignments": {0: [1]}, "configs": {}}}, validate_only=False)
        assert all(r.error == "TopicAlreadyExistsError" for r in refused), refused
        yield admin
    finally:
        admin.close()


def _check(target: str, judged: list[Judged]) -> None:
    print("\n" + summary(target, judged))
    unexplained = [j for j in judged if explanation(j) == "unexplained"]
    assert not unexplained, "validate and the broker disagree, unexplained:\n" + "\n".join(
        f"  {j.case.id}: ours {j.ours} ({j.our_message[:120]}), broker {j.broker} ({j.broker_message[:160]})"
        for j in unexplained)
    assert sum(j.agree for j in judged) / len(judged) > 0.9


@pytest.mark.usefixtures("allow_local")
def test_validate_agrees_with_a_kafka_4_1_node(kraft4: KraftCluster) -> None:
    for admin in _admin(kraft4.bootstrap):
        _check("Kafka 4.1.1 (KRaft)", judge(corpus(), cluster_spec("4.1", kraft=True), admin))


@pytest.mark.usefixtures("allow_local")
def test_validate_agrees_with_a_kafka_3_9_broker(kafka_cluster: KafkaCluster) -> None:
    for admin in _admin(kafka_cluster.bootstrap):
        _check("Kafka 3.9.1 (ZooKeeper mode)", judge(corpus(), cluster_spec("3.9", kraft=False), admin))
