"""spec.kraft in the manifests, and the KRaft backend's pure parts: which DescribeConfigs entries are live
dynamic config, the plaintext-password rule, the plan as Admin API operations, the fingerprints that decide
"unchanged" for passwords KRaft never returns. Real KRaft clusters: tests/integration/test_kraft_backend.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import Diagnostic
from reconciler.kraft.admin import BROKER, DELETE, SET, DescribedConfig
from reconciler.kraft.passwords import (
    PRESENT,
    applied_passwords,
    digest_matches,
    fingerprints,
    scram_iterations,
    scram_marker,
    value_digest,
)
from reconciler.kraft.read import dynamic_values
from reconciler.kraft.write import operations, plaintext_password_problem
from reconciler.manifests.validate import load_and_validate
from reconciler.model import (
    NO_ZOOKEEPER,
    AdminClientSpec,
    ClusterSpec,
    EntityRef,
    KraftSpec,
    Secret,
    SecretRef,
)
from reconciler.plan import Change, EntityPlan, Plan

ZK = '  zookeeper: {connect: "127.0.0.1:2181/kafka"}\n'
KRAFT = '  kraft: {bootstrapServers: "127.0.0.1:9092"}\n'


def cluster_yaml(*blocks: str, version: str = "4.1") -> str:
    return ("apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: c1}\nspec:\n"
            f'  kafkaVersion: "{version}"\n' + "".join(blocks) + "  brokers: [1]\n")


def problems(tmp_path: Path, text: str) -> list[Diagnostic]:
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(text)
    _, _, diags = load_and_validate(tmp_path)
    return [d for d in diags if d.severity == "error"]


def test_a_kraft_cluster_loads_with_its_admin_connection(tmp_path: Path) -> None:
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(cluster_yaml(
        '  kraft: {bootstrapServers: "b1:9093,b2:9093", securityProtocol: SSL, allowPlaintextPasswords: false}\n'))
    _, states, diags = load_and_validate(tmp_path)
    assert not [d for d in diags if d.severity == "error"]
    cluster = states["c1"].cluster
    assert cluster.is_kraft and cluster.zookeeper == NO_ZOOKEEPER
    assert cluster.kraft is not None and cluster.kraft.admin.bootstrap_servers == ("b1:9093", "b2:9093")
    assert cluster.admin == cluster.kraft.admin  # apply --verify asks the same brokers


@pytest.mark.parametrize(("blocks", "version", "line", "says"), [
    ((ZK, KRAFT), "3.9", 7, "both zookeeper and kraft"),
    ((), "3.9", 1, "needs zookeeper (a ZooKeeper-mode cluster) or kraft"),
    ((ZK,), "4.1", 1, "no ZooKeeper mode (removed in Kafka 4.0"),
    ((KRAFT,), "3.2", 1, "KRaft clusters are supported from Kafka 3.3"),
    (('  kraft: {bootstrapServers: "b1:9093", sasl: {mechanism: PLAIN, username: u, password: {env: P}}}\n',),
     "4.1", 6, "kraft.sasl is set but securityProtocol is PLAINTEXT"),
    (('  kraft: {bootstrapServers: "http://b1:9093"}\n',), "4.1", 6, "kraft.bootstrapServers"),
])
def test_exactly_one_backend_and_a_sound_kraft_block(tmp_path: Path, blocks: tuple[str, ...], version: str,
                                                      line: int, says: str) -> None:
    found = problems(tmp_path, cluster_yaml(*blocks, version=version))
    assert any(says in d.message and d.source is not None and d.source.line == line for d in found), found


def config(name: str, value: str | None, source: int, *synonyms: tuple[str, str | None, int],
           sensitive: bool = False) -> DescribedConfig:
    return DescribedConfig(name, value, source, sensitive, synonyms)


def test_only_the_dynamic_source_asked_for_is_live_config() -> None:
    answer = [
        # set per broker over a cluster default: both layers are in the synonyms
        config("log.cleaner.threads", "3", 2, ("log.cleaner.threads", "3", 2), ("log.cleaner.threads", "2", 3),
               ("log.cleaner.threads", "1", 5)),
        config("num.io.threads", "8", 4, ("num.io.threads", "8", 4)),  # static: not dynamic config
        config("listener.name.x.ssl.key.password", None, 2, ("listener.name.x.ssl.key.password", None, 2),
               sensitive=True),
        config("log.retention.ms", None, 5),  # a default, no synonyms
    ]
    assert dynamic_values(answer, 2) == {"log.cleaner.threads": "3", "listener.name.x.ssl.key.password": PRESENT}
    assert dynamic_values(answer, 3) == {"log.cleaner.threads": "2"}


def kraft_cluster(protocol: str = "PLAINTEXT", allow: bool = False) -> ClusterSpec:
    admin = AdminClientSpec(("b1:9092",), security_protocol=protocol)
    return ClusterSpec("c1", "4.1", NO_ZOOKEEPER, (1,), kraft=KraftSpec(admin, allow), admin=admin)


PASSWORD = Change("listener.name.x.ssl.key.password", "+", sensitive=True, redacted="changed",
                  secret=SecretRef(env="PW"))
PLAN = Plan("c1", entities=(
    EntityPlan(EntityRef("brokers", "1"), 0, (PASSWORD, Change("log.cleaner.threads", "-", before="2"))),
    EntityPlan(EntityRef("brokers", "<default>"), 0, (Change("num.io.threads", "~", before="8", after="16"),)),
    EntityPlan(EntityRef("users", "alice", "app"), 0, (Change("producer_byte_rate", "+", after="1024"),)),
))


def test_passwords_need_tls_or_the_operators_consent() -> None:
    problem = plaintext_password_problem(PLAN, kraft_cluster())
    assert problem is not None and "brokers/1 listener.name.x.ssl.key.password" in problem
    assert plaintext_password_problem(PLAN, kraft_cluster("SASL_SSL")) is None
    assert plaintext_password_problem(PLAN, kraft_cluster(allow=True)) is None
    assert plaintext_password_problem(Plan("c1", entities=PLAN.entities[1:]), kraft_cluster()) is None


def test_the_plan_as_admin_api_operations() -> None:
    ops = operations(PLAN, lambda change, ref: Secret("hunter2"))
    assert [p for s in ops.of("IncrementalAlterConfigs") for p in s.payloads] == [
        (BROKER, "1", [("listener.name.x.ssl.key.password", SET, "hunter2"), ("log.cleaner.threads", DELETE, None)]),
        (BROKER, "", [("num.io.threads", SET, "16")]),
    ]
    assert ops.of("AlterClientQuotas")[0].payloads == [([("user", "alice"), ("client-id", "app")],
                                                       [("producer_byte_rate", 1024.0, False)])]
    recorded = ops.passwords["brokers/1|listener.name.x.ssl.key.password"]
    assert digest_matches(Secret("hunter2"), recorded["stored"]) and "hunter2" not in str(recorded)
    # a plan-time check sends no password: sensitive keys are left out, the rest is validated
    checked = operations(PLAN, None)
    assert checked.of("IncrementalAlterConfigs")[0].payloads[0] == (BROKER, "1", [("log.cleaner.threads", DELETE,
                                                                                   None)])
    assert not checked.passwords


def test_value_digests_identify_a_value_without_revealing_it() -> None:
    digest = value_digest(Secret("s3cret"))
    assert digest.startswith("kraft:") and "s3cret" not in digest
    assert digest_matches(Secret("s3cret"), digest)
    assert not digest_matches(Secret("other"), digest)
    assert value_digest(Secret("s3cret")) != digest  # salted
    assert not digest_matches(Secret("s3cret"), "garbage")
    assert scram_iterations(scram_marker(8192)) == 8192 and scram_iterations("salt=x") is None


def test_the_newest_apply_recorded_wins(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    ref = EntityRef("brokers", "1")
    old = fingerprints(ref, "k.password", SecretRef(env="A"), Secret("one"))
    new = fingerprints(ref, "k.password", SecretRef(env="B"), Secret("two"))
    import json

    lines = [
        {"cluster": "c1", "result": "applied", "passwords": {"brokers/1|k.password": old}},
        {"cluster": "c2", "result": "applied", "passwords": {"brokers/1|k.password": {"ref": "x", "stored": "y"}}},
        "not json",
        {"cluster": "c1", "result": "applied", "passwords": {"brokers/1|k.password": new}},
        {"cluster": "c1", "result": "failed: refused", "passwords": {"brokers/1|k.password": old}},
    ]
    log.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    assert applied_passwords(log, "c1") == {"brokers/1|k.password": new}
    assert applied_passwords(tmp_path / "missing.jsonl", "c1") == {}


def test_zookeeper_only_steps_say_so_on_a_kraft_cluster(tmp_path: Path) -> None:
    """The apply lock, ZooKeeper audit reads, impact snapshots open `cluster_client`: a clear refusal."""
    from reconciler.errors import ReconcilerError
    from reconciler.zk.backend import cluster_client

    with (pytest.raises(ReconcilerError, match=r"is a KRaft cluster \(spec.kraft\): this needs ZooKeeper"),
          cluster_client(kraft_cluster(), tmp_path)):
        pass


def test_configs_kafka_4_removed_are_errors_with_their_replacement(tmp_path: Path) -> None:
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(cluster_yaml(KRAFT))
    (tmp_path / "clusters" / "c1" / "topics.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Topics\nmeta: {name: app}\nspec:\n  topics:\n    orders:\n"
        "      partitions: 1\n      replicationFactor: 1\n      config:\n"
        "        message.timestamp.difference.max.ms: \"60000\"\n")
    (tmp_path / "clusters" / "c1" / "brokers.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
        "    log.message.format.version: \"3.0\"\n")
    _, _, diags = load_and_validate(tmp_path)
    removed = {(d.key, d.source.file.rsplit("/", 1)[-1], d.source.line): d.message for d in diags
               if d.severity == "error" and "removed in Kafka 4.0" in d.message and d.source is not None}
    assert set(removed) == {("message.timestamp.difference.max.ms", "topics.yaml", 10),
                            ("log.message.format.version", "brokers.yaml", 6)}
    assert "message.timestamp.before.max.ms and message.timestamp.after.max.ms (KIP-937)" in removed[
        ("message.timestamp.difference.max.ms", "topics.yaml", 10)]
    # the same keys on a 3.9 cluster are not this error
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(cluster_yaml(KRAFT, version="3.9"))
    _, _, diags = load_and_validate(tmp_path)
    assert not [d for d in diags if "removed in Kafka" in d.message]


def test_version_lists_the_4x_releases() -> None:
    from reconciler.cli.version import known_releases

    assert known_releases()[-3:] == ("3.9", "4.0", "4.1")


@pytest.mark.parametrize(("version", "key", "says"), [
    ("4.1", "log.message.format.version", "was removed in Kafka 4.0"),
    ("3.9", "log.retention.hours", "is read-only"),
])
def test_errors_on_a_kraft_cluster_never_speak_of_zookeeper(tmp_path: Path, version: str, key: str,
                                                            says: str) -> None:
    """Issue 39 item 11: a KRaft cluster's brokers hold no config in ZooKeeper."""
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster.yaml").write_text(cluster_yaml(KRAFT, version=version))
    (tmp_path / "clusters" / "c1" / "brokers.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
        f"    {key}: \"3.0\"\n")
    _, _, diags = load_and_validate(tmp_path)
    errors = [d.message for d in diags if d.severity == "error" and d.key == key]
    assert errors and says in errors[0] and not [m for m in errors if "ZooKeeper" in m], errors
