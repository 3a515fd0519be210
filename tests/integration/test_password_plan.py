"""Passwords end to end on a real ZooKeeper: a value stored by Kafka's own encoder plans as unchanged for the
same plaintext and changed for another; apply writes values that decode independently; rotation works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from reconciler.apply import apply_cluster_plan
from reconciler.errors import RefusedError
from reconciler.model import EntityRef, Secret
from reconciler.render.json import render_plan_file
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.workflow import load_desired, plan_cluster
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
    # the new encoding's fingerprints are in the audit entry: a check without the secret knows it is untouched
    assert '"passwords"' in audit
    done = secretless_plan(root, {"KEY_PW": KEYSTORE_PASSWORD})
    assert done.returncode == 0, done.stdout + done.stderr


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
    assert change.reencode and change.rotation and change.redacted == "unchanged"
    # a rotation is disruptive: brokers still running with only the old secret would drop the password
    assert change.risk == "disruptive" and "password.encoder.old.secret" in change.reasons[0]
    mine = [w for w in result.plan.warnings if KEY in w]
    assert len(mine) == 1 and "re-encoded with the new secret" in mine[0]  # one warning per key
    cluster = [w for w in result.plan.warnings if w.startswith("encoder secret rotation of 1 password(s)")]
    assert len(cluster) == 1 and "restart every broker" in cluster[0] and "--allow-secret-rotation" in cluster[0]
    with pytest.raises(RefusedError, match="--allow-secret-rotation"):
        apply_cluster_plan(result.plan, desired, root)
    assert live_value(zk_client) != "" and independent_decode(live_value(zk_client), OLD_ENCODER_SECRET) \
        == KEYSTORE_PASSWORD  # refused: nothing written
    apply_cluster_plan(result.plan, desired, root, allow_secret_rotation=True)
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


# --- issue 13 §2: honest plans without the encoder secret (the pull-request check) ----------------------


def secretless_plan(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`reconciler plan --detailed-exitcode` as a PR check runs it: a fresh process without ENC."""
    clean = {k: v for k, v in os.environ.items() if k not in ("ENC", "OLD_ENC")}
    return subprocess.run([sys.executable, "-m", "reconciler", "--repo", str(root), "plan", "--detailed-exitcode",
                           "--format", "json", "pw"], capture_output=True, text=True, timeout=120,
                          env={**clean, **env})


def test_a_secretless_plan_of_an_in_sync_cluster_exits_0_and_says_so_once(
    tmp_path: Path, zk_client: KazooClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A password stored by Kafka's own encoder, verified unchanged by an apply that had the secret: a later plan
    without the secret finds the same reference and the same stored value, so the password is unchanged (not
    verified), not a change; `--detailed-exitcode` gives 0. Changing the reference, or the stored value changing
    behind the reconciler's back, makes it a change again."""
    zk_client.create("/config/brokers/1", encode_entity_config({KEY: KAFKA["encoded"], "num.io.threads": "4"}),
                     makepath=True)
    monkeypatch.setenv("ENC", KAFKA["secret"])
    monkeypatch.setenv("KEY_PW", KAFKA["plaintext"])
    root = make_repo(tmp_path, zk_connect)
    desired, result = plan_for(root)
    assert [c.key for e in result.plan.entities for c in e.changes] == ["num.io.threads"]
    assert len(result.plan.verified_passwords) == 1
    apply_cluster_plan(result.plan, desired, root, audit_log=tmp_path / "audit.jsonl")
    assert live_value(zk_client) == KAFKA["encoded"]  # untouched: only num.io.threads was written

    done = secretless_plan(root, {"KEY_PW": KAFKA["plaintext"]})
    assert done.returncode == 0, done.stdout + done.stderr
    plan = json.loads(done.stdout)["plans"][0]
    assert plan["entities"] == []
    notes = [w for w in plan["warnings"] if "not verified without the encoder secret" in w]
    assert len(notes) == 1 and "1 unchanged since the last apply" in notes[0] and KEY in notes[0], plan["warnings"]
    assert not any("cannot tell" in w or "shown as unknown" in w for w in plan["warnings"])
    assert KAFKA["plaintext"] not in done.stdout + done.stderr

    # a new reference (the PR points the password elsewhere) is a change
    broker = root / "clusters" / "pw" / "broker-1.yaml"
    broker.write_text(broker.read_text(encoding="utf-8").replace("KEY_PW", "OTHER_PW"), encoding="utf-8")
    moved = secretless_plan(root, {"OTHER_PW": KAFKA["plaintext"]})
    assert moved.returncode == 2, moved.stdout + moved.stderr
    change = json.loads(moved.stdout)["plans"][0]["entities"][0]["changes"][0]
    assert (change["key"], change["redacted"]) == (KEY, "unknown")
    broker.write_text(broker.read_text(encoding="utf-8").replace("OTHER_PW", "KEY_PW"), encoding="utf-8")

    # someone re-encodes the password outside the reconciler: no longer what the last apply left
    other = encode(Secret(KAFKA["plaintext"]), EncoderParams(Secret(KAFKA["secret"])))
    data, _ = zk_client.get("/config/brokers/1")
    config = decode_entity_config(data, "/config/brokers/1")
    zk_client.set("/config/brokers/1", encode_entity_config({**config, KEY: other}))
    drifted = secretless_plan(root, {"KEY_PW": KAFKA["plaintext"]})
    assert drifted.returncode == 2, drifted.stdout + drifted.stderr
    assert "1 cannot be compared and may change" in " ".join(json.loads(drifted.stdout)["plans"][0]["warnings"])
