"""Hypothesis on a real ZooKeeper: for random live states and random manifests (topics with configs,
creations and partition increases, broker defaults, a per-broker password, quotas, with and without
pruning), the whole pipeline — manifests -> plan -> plan file -> apply -> plan again — converges: the second
plan is empty. The plan file round-trips exactly, and no renderer prints a password or the encoder secret.

Each example gets a fresh chroot and a fresh manifest directory. (tests/unit/test_diff.py has the same
property against an in-memory apply; this one proves it against ZooKeeper and Kafka's encodings.)
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from reconciler.apply import apply_cluster_plan
from reconciler.cli.console import ansi_text
from reconciler.errors import has_errors
from reconciler.model import Secret
from reconciler.plan import plans_from_json
from reconciler.render.json import render_json, render_plan_file
from reconciler.render.markdown import render_markdown
from reconciler.render.text import plan_lines, render_text
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.workflow import load_desired, plan_cluster
from reconciler.zk.layout import decode_entity_config
from tests.conftest import ZkServer
from tests.integration.reliability import assignment_bytes, config_bytes, write_repo
from tests.integration.test_apply import kafka_decode
from tests.leakcheck import ENCODER_SECRET, KEYSTORE_PASSWORD, plant

PASSWORD_KEY = "listener.name.internal.ssl.key.password"
PLAINTEXTS = {"PW_A": KEYSTORE_PASSWORD, "PW_B": plant("lk-reliability-password-B-6q1")}
TOPIC_KEYS = {
    "retention.ms": ["1000", "86400000", "-1"],
    "cleanup.policy": ["delete", "compact", "compact,delete"],
    "max.message.bytes": ["1048588", "2097152"],
    "segment.ms": ["3600000", "604800000"],
}
BROKER_KEYS = {
    "log.cleaner.threads": ["1", "2"],
    "log.retention.ms": ["86400000", "604800000"],
    "message.max.bytes": ["1048588", "2000000"],
}
USER_KEYS = {"request_percentage": ["10.0", "20.0"], "producer_byte_rate": ["1024", "4096"]}
CLIENT_KEYS = {"producer_byte_rate": ["1024", "2048"], "consumer_byte_rate": ["8192"]}
TOPICS = ["orders", "payments", "audit.trail"]

pytestmark = pytest.mark.timeout(300)  # a safety net: 25 examples take a few seconds


def configs(keys: Mapping[str, list[str]]) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in keys.items()})


@dataclass(frozen=True)
class Case:
    live_topics: dict[str, tuple[int, dict[str, str] | None]]  # name -> (partitions, config znode or none)
    wanted_topics: dict[str, tuple[int | None, dict[str, str]]]  # name -> (partitions, config)
    live_default: dict[str, str] | None
    wanted_default: dict[str, str] | None
    live_password: str | None  # env name of the plaintext stored (encoded) on broker 1
    wanted_password: str | None  # env name the manifest refers to
    live_user: dict[str, str] | None
    wanted_user: dict[str, str] | None
    live_client: dict[str, str] | None
    wanted_client: dict[str, str] | None
    prune: bool


@st.composite
def cases(draw: st.DrawFn) -> Case:
    live_topics: dict[str, tuple[int, dict[str, str] | None]] = {}
    wanted_topics: dict[str, tuple[int | None, dict[str, str]]] = {}
    for name in TOPICS:
        partitions = draw(st.integers(0, 3))  # 0: the topic does not exist
        if partitions:
            live_topics[name] = (partitions, draw(st.none() | configs(TOPIC_KEYS)))
        if draw(st.booleans()):
            wanted = draw(st.sampled_from([None, partitions, partitions + 1])) if partitions else 2
            wanted_topics[name] = (wanted, draw(configs(TOPIC_KEYS)))
    maybe = st.none() | st.sampled_from(sorted(PLAINTEXTS))
    return Case(
        live_topics, wanted_topics,
        draw(st.none() | configs(BROKER_KEYS)), draw(st.none() | configs(BROKER_KEYS)),
        draw(maybe), draw(maybe),
        draw(st.none() | configs(USER_KEYS)), draw(st.none() | configs(USER_KEYS)),
        draw(st.none() | configs(CLIENT_KEYS)), draw(st.none() | configs(CLIENT_KEYS)),
        draw(st.booleans()),
    )


def seed(client: KazooClient, case: Case) -> None:
    for broker in (1, 2, 3):
        client.create(f"/brokers/ids/{broker}", json.dumps({
            "version": 5, "host": f"b{broker}", "port": 9092, "endpoints": [f"PLAINTEXT://b{broker}:9092"],
            "jmx_port": -1, "timestamp": "0", "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "features": {},
        }).encode(), makepath=True)
    for name, (partitions, config) in case.live_topics.items():
        client.create(f"/brokers/topics/{name}", assignment_bytes(partitions), makepath=True)
        if config is not None:
            client.create(f"/config/topics/{name}", config_bytes(config), makepath=True)
    if case.live_default is not None:
        client.create("/config/brokers/<default>", config_bytes(case.live_default), makepath=True)
    if case.live_password is not None:
        stored = encode(Secret(PLAINTEXTS[case.live_password]), EncoderParams(Secret(ENCODER_SECRET), iterations=1024))
        client.create("/config/brokers/1", config_bytes({PASSWORD_KEY: stored}), makepath=True)
    if case.live_user is not None:
        client.create("/config/users/alice", config_bytes(case.live_user), makepath=True)
    if case.live_client is not None:
        client.create("/config/clients/<default>", config_bytes(case.live_client), makepath=True)


def write_manifests(root: Path, connect: str, case: Case) -> None:
    write_repo(root, connect, broker_default=case.wanted_default)
    directory = root / "clusters" / "c1"
    cluster = directory / "cluster.yaml"
    text = cluster.read_text(encoding="utf-8").replace(
        "  policy: {allowDestructive: true}\n",
        f"  policy: {{allowDestructive: true, prune: {json.dumps(case.prune)}}}\n"
        "  passwordEncoder: {secret: {env: ENC}}\n",
    )
    cluster.write_text(text, encoding="utf-8")
    docs = []
    if case.wanted_topics:
        lines = ["apiVersion: reconciler/v1", "kind: Topics", "meta: {}", "spec:",
                 "  defaults: {replicationFactor: 1}", "  topics:"]
        for name, (partitions, config) in case.wanted_topics.items():
            parts = "" if partitions is None else f"partitions: {partitions}, "
            lines.append(f"    {name}: {{{parts}config: {json.dumps(config)}}}")
        docs.append("\n".join(lines))
    if case.wanted_password is not None:
        docs.append("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
                    f"    {PASSWORD_KEY}: {{secret: {{env: {case.wanted_password}}}}}")
    quotas = {"users": {"alice": case.wanted_user}, "clients": {"default": case.wanted_client}}
    quotas = {kind: {k: v for k, v in entities.items() if v is not None} for kind, entities in quotas.items()}
    if any(quotas.values()):
        docs.append("apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec: " + json.dumps(quotas))
    if docs:
        (directory / "more.yaml").write_text("\n---\n".join(docs) + "\n", encoding="utf-8")


def fresh_chroot(zk_server: ZkServer) -> str:
    chroot = f"/p-{uuid.uuid4().hex[:12]}"
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    try:
        client.create(chroot)
    finally:
        client.stop()
        client.close()
    return chroot


@pytest.mark.slow
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_apply_of_the_plan_converges_on_zookeeper(
    case: Case, zk_server: ZkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENC", ENCODER_SECRET)
    for env, plaintext in PLAINTEXTS.items():
        monkeypatch.setenv(env, plaintext)
    connect = zk_server.connect + fresh_chroot(zk_server)
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=15)
    try:
        seed(client, case)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            write_manifests(root, connect, case)
            states, _ = load_desired(root, ["c1"])
            desired = states["c1"]
            result = plan_cluster(desired, root)
            assert not has_errors(result.diagnostics), [d.render() for d in result.diagnostics]
            plan = result.plan

            shown = render_text([plan]) + ansi_text(plan_lines([plan])) + render_markdown([plan])
            plan_file = render_plan_file([plan])
            for text in (shown, render_json([plan]), plan_file):
                for secret in (ENCODER_SECRET, *PLAINTEXTS.values()):
                    assert secret not in text
            assert plans_from_json(plan_file) == [plan]  # what `apply plan.json` executes is the plan

            apply_cluster_plan(plan, desired, root, allow_destructive=True, audit_log=root / "audit.jsonl",
                               adopt=True)  # an operator's apply of a plan they read (the CLI's default)
            again = plan_cluster(desired, root).plan
            assert again.is_empty, render_text([again])
            if case.wanted_password is not None:  # written as Kafka would encode it
                stored = decode_entity_config(client.get("/config/brokers/1")[0], "b1")[PASSWORD_KEY]
                assert kafka_decode(stored, ENCODER_SECRET) == PLAINTEXTS[case.wanted_password]
    finally:
        client.stop()
        client.close()
