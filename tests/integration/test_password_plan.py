"""Passwords end to end on a real ZooKeeper: a value stored by Kafka's own encoder plans as unchanged for the
same plaintext and changed for another; apply writes values that decode independently; rotation works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.model import EntityRef, Secret
from reconciler.render.json import render_plan_file
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.workflow import apply_cluster_plan, load_desired, plan_cluster
from reconciler.zk.layout import decode_entity_config, encode_entity_config
from tests.leakcheck import ENCODER_SECRET, KEYSTORE_PASSWORD, OLD_ENCODER_SECRET, plant
from tests.unit.test_passwords import independent_decode

KEY = "listener.name.internal.ssl.key.password"
VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data" / "password-vectors.json").read_text(encoding="utf-8")
)["java_encoded_vectors"]
KAFKA = next(v for v in VECTORS if v["set"] == "default" and v["plaintext"] == "pässwörd✓")


def make_repo(root: Path, connect: str, *, old_secret: bool = False) -> Path:
    cluster = root / "clusters" / "pw"
    cluster.mkdir(parents=True)
    old = "    oldSecret: {env: OLD_ENC}\n" if old_secret else ""
    (cluster / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: pw}\nspec:\n  kafkaVersion: \"3.6\"\n"
        f"  zookeeper: {{connect: \"{connect}\"}}\n  passwordEncoder:\n    secret: {{env: ENC}}\n{old}"
        "  brokers: [1]\n",
        encoding="utf-8",
    )
    (cluster / "broker-1.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
        f"    {KEY}: {{secret: {{env: KEY_PW}}}}\n    num.io.threads: 8\n",
        encoding="utf-8",
    )
    return root


def live_value(client: KazooClient) -> str:
    data, _ = client.get("/config/brokers/1")
    return decode_entity_config(data, "/config/brokers/1")[KEY]


def seed(client: KazooClient, value: str) -> None:
    client.create("/config/brokers/1", encode_entity_config({KEY: value, "num.io.threads": "8"}), makepath=True)


def plan_for(root: Path):  # type: ignore[no-untyped-def]
    states, _ = load_desired(root, ["pw"])
    return states["pw"], plan_cluster(states["pw"], root)


def sensitive_change(plan: Any) -> Any:
    changes = [c for e in plan.entities if e.ref == EntityRef("brokers", "1") for c in e.changes]
    assert len(changes) == 1 and changes[0].key == KEY and changes[0].sensitive
    return changes[0]


def test_kafka_encoded_value_is_unchanged_for_same_plaintext(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(zk_client, KAFKA["encoded"])
    monkeypatch.setenv("ENC", KAFKA["secret"])
    monkeypatch.setenv("KEY_PW", KAFKA["plaintext"])
    _, result = plan_for(make_repo(tmp_path, zk_connect))
    assert result.plan.is_empty, result.plan


def test_other_plaintext_is_changed_then_applied_and_converges(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(zk_client, KAFKA["encoded"])
    monkeypatch.setenv("ENC", KAFKA["secret"])
    monkeypatch.setenv("KEY_PW", plant(KEYSTORE_PASSWORD))
    root = make_repo(tmp_path, zk_connect)
    desired, result = plan_for(root)
    change = sensitive_change(result.plan)
    assert (change.op, change.redacted, change.before, change.after) == ("~", "changed", None, None)
    plan_file = render_plan_file([result.plan]) + render_text([result.plan]) + render_markdown([result.plan])
    assert KEYSTORE_PASSWORD not in plan_file and KAFKA["secret"] not in plan_file
    apply_cluster_plan(result.plan, desired, root, audit_log=tmp_path / "audit.jsonl")
    assert independent_decode(live_value(zk_client), KAFKA["secret"]) == KEYSTORE_PASSWORD
    _, again = plan_for(root)
    assert again.plan.is_empty
    audit = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    assert KEYSTORE_PASSWORD not in audit and KAFKA["secret"] not in audit


def test_without_encoder_secret_the_state_is_unknown(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(zk_client, KAFKA["encoded"])
    monkeypatch.delenv("ENC", raising=False)
    monkeypatch.setenv("KEY_PW", KAFKA["plaintext"])
    _, result = plan_for(make_repo(tmp_path, zk_connect))
    assert sensitive_change(result.plan).redacted == "unknown"
    assert any("ENC" in w for w in result.plan.warnings), result.plan.warnings


def test_rotation_reencodes_values_stored_with_the_old_secret(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = EncoderParams(Secret(plant(OLD_ENCODER_SECRET)), iterations=1024)
    seed(zk_client, encode(Secret(KEYSTORE_PASSWORD), old))
    monkeypatch.setenv("ENC", plant(ENCODER_SECRET))
    monkeypatch.setenv("OLD_ENC", OLD_ENCODER_SECRET)
    monkeypatch.setenv("KEY_PW", KEYSTORE_PASSWORD)
    root = make_repo(tmp_path, zk_connect, old_secret=True)
    desired, result = plan_for(root)
    change = sensitive_change(result.plan)
    assert change.reencode and change.redacted == "unchanged"
    apply_cluster_plan(result.plan, desired, root)
    assert independent_decode(live_value(zk_client), ENCODER_SECRET) == KEYSTORE_PASSWORD
    _, again = plan_for(root)
    assert again.plan.is_empty


def test_undecodable_value_is_warned_and_reencoded(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger = EncoderParams(Secret("some-other-secret-entirely"), iterations=1024)
    seed(zk_client, encode(Secret(KEYSTORE_PASSWORD), stranger))
    monkeypatch.setenv("ENC", ENCODER_SECRET)
    monkeypatch.setenv("KEY_PW", KEYSTORE_PASSWORD)
    root = make_repo(tmp_path, zk_connect)
    desired, result = plan_for(root)
    assert sensitive_change(result.plan).op == "~"
    assert any("cannot be decoded" in w for w in result.plan.warnings)
    apply_cluster_plan(result.plan, desired, root)
    assert independent_decode(live_value(zk_client), ENCODER_SECRET) == KEYSTORE_PASSWORD
