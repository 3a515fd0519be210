"""Issue 12, findings 3, 5, 6, 7, 8 and 10 against a real ZooKeeper and the real command line: reconcilerPath
outside Kafka's namespace, one escaping for GitHub workflow commands, bounded PBKDF2 and prompt signals, no
ACL downgrade, no secrets in -vv logs or snapshots, and the small items (oversized values, corrupt znodes,
crashes turned into validation errors, a failed import leaving nothing behind).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, make_digest_acl

from reconciler.catalog import load_catalog
from reconciler.impact.inventory import static_rows
from reconciler.manifests.validate import load_and_validate
from reconciler.model import EntityRef, Secret
from reconciler.secrets.encoder import EncoderParams, decode, encode
from reconciler.zk.layout import encode_entity_config, entity_path
from reconciler.zk.write import ApplyOptions
from tests.conftest import REPO, ZkServer
from tests.integration.test_gitops import invoke
from tests.leakcheck import ENCODER_SECRET, KEYSTORE_PASSWORD, ZK_CREDENTIALS

PASSWORD_KEY = "listener.name.internal.ssl.key.password"
OPEN = ACL(31, Id("world", "anyone"))


def cluster_yaml(connect: str, zookeeper_extra: str = "", spec_extra: str = "", brokers: str = "[1, 2, 3]") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: a}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"{zookeeper_extra}}}
          brokers: {brokers}
        """) + spec_extra


TOPICS = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Topics
    meta: {}
    spec:
      topics:
        orders: {partitions: 1, replicationFactor: 1, config: {retention.ms: 3600000}}
    """)
ENCODER = "  passwordEncoder: {secret: {env: LK_ENCODER}}\n"
AUTH = ", auth: {scheme: digest, credentials: {env: LK_ZK_AUTH}}"


def password_yaml(brokers: range | list[int]) -> str:
    docs = [f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: {b}}}\nspec:\n  config:\n"
            f"    {PASSWORD_KEY}: {{secret: {{env: LK_KEYSTORE}}}}\n" for b in brokers]
    return "---\n".join(docs)


def broker_doc(spec: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: 1}}\nspec: {spec}\n"


def manifests(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    monkeypatch.setenv("LK_KEYSTORE", KEYSTORE_PASSWORD)
    monkeypatch.setenv("LK_ZK_AUTH", ZK_CREDENTIALS)


def cli(root: Path, *args: str, timeout: float = 120, extra_env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RECONCILER_AUDIT_LOG": str(root / "audit.jsonl"),
           **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "reconciler", "--repo", str(root), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


# --- finding 3: reconcilerPath ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/brokers/ids", "/config/changes", "/controller", "/admin", "/brokers",
                                  "/isr_change_notification/x", "/kafka-acl-changes", "/zookeeper/quota"])
def test_reconciler_path_may_not_point_into_kafkas_namespace(
    tmp_path: Path, path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1", f", reconcilerPath: {path}"),
                                "clusters/a/topics.yaml": TOPICS})
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and "Kafka owns (kafka.zk.ZkData)" in err and "[reconcilerPath]" in err
    with pytest.raises(Exception, match="Kafka owns"):  # and the writer refuses it whatever validated it
        ApplyOptions(reconciler_path=path)


def test_an_allowed_reconciler_path_holds_lock_and_audit(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect, ", reconcilerPath: /ops/rec"),
                                "clusters/a/topics.yaml": TOPICS})
    code, _, err = invoke(capsys, "--repo", str(root), "apply", "a", "--auto-approve", "--audit-log",
                          str(tmp_path / "audit.jsonl"))
    assert code == 0, err
    assert zk_client.get_children("/ops/rec/audit") and not zk_client.exists("/brokers/ids/lock")


# --- finding 5: workflow commands --------------------------------------------------------------------------


def workflow_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("::")]


def test_manifest_text_cannot_inject_workflow_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evil_key = "bad.key\\n::add-mask::lk-mask\\r\\n::set-output name=x::y\\u202e"
    topics = TOPICS.replace("retention.ms: 3600000", f'"{evil_key}": 1')
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1"),
                                "clusters/a/x,line=99::title=evil.yaml": topics})
    for args in (["validate", "--format", "github"], ["plan", "--format", "github"]):
        code, out, err = invoke(capsys, "--repo", str(root), *args)
        assert code == 1
        commands = workflow_lines(out + err)
        assert commands and all(re.match(r"::(error|warning) file=[^,:]*,line=\d+", c) for c in commands), commands
        assert "file=clusters/a/x%2Cline=99%3A%3Atitle=evil.yaml,line=" in commands[0]
        assert "%0A::add-mask::lk-mask%0D%0A::set-output" in "".join(commands) and "\u202e" not in out + err
        assert all(not line.startswith(("::add-mask", "::set-output")) for line in (out + err).splitlines())


def test_audit_fields_read_from_zookeeper_cannot_inject_workflow_commands(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anyone who can write the (world-writable) audit znodes controls these fields; reconcile prints them."""
    record = {"planId": "p", "cluster": "a", "revision": "deadbeef\n::add-mask::lk-mask", "time": "t",
              "user": "mallory\n::set-output name=x::y", "counts": {}, "result": "applied"}
    zk_client.create("/reconciler/audit/entry-", json.dumps(record).encode(), sequence=True, makepath=True)
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect), "clusters/a/topics.yaml": TOPICS})
    code, out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--allow-dirty", "--dry-run")
    assert code == 0, err
    assert "mallory\\n::set-output" in err and "deadbeef\\n::add-mask" in err  # shown, escaped
    assert all(not line.startswith("::") for line in (out + err).splitlines())


# --- finding 6: PBKDF2 bounds and signals --------------------------------------------------------------------


def hostile(encoded: str, iterations: int = 2147483647) -> str:
    return re.sub(r"iterations:\d+", f"iterations:{iterations}", encoded)


def test_hostile_iterations_in_a_live_znode_are_refused_at_once_naming_the_entity(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient
) -> None:
    stored = hostile(encode(Secret(KEYSTORE_PASSWORD), EncoderParams(Secret(ENCODER_SECRET))))
    zk_client.create(entity_path(EntityRef("brokers", "1")), encode_entity_config({PASSWORD_KEY: stored}),
                     makepath=True)
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect, spec_extra=ENCODER),
                                "clusters/a/brokers.yaml": password_yaml([1])})
    for args in (["plan", "a"], ["reconcile", "--once", "--allow-dirty"]):
        started = time.monotonic()
        done = cli(root, *args, timeout=60)
        assert time.monotonic() - started < 30
        assert done.returncode == 1, done.stderr
        assert f"{PASSWORD_KEY} on brokers/1: stored value asks for 2147483647 PBKDF2 iterations" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_sealed_value_with_hostile_iterations_is_a_validation_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sealed = hostile(encode(Secret(KEYSTORE_PASSWORD), EncoderParams(Secret(ENCODER_SECRET))))
    brokers = password_yaml([1]).replace("{secret: {env: LK_KEYSTORE}}", json.dumps({"encoded": sealed}))
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1", spec_extra=ENCODER),
                                "clusters/a/brokers.yaml": brokers})
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1
    assert "clusters/a/brokers.yaml:6:5: error: sealed value of" in err and "2147483647 PBKDF2 iterations" in err


@pytest.mark.parametrize(("command", "sig"), [(("plan", "a"), signal.SIGTERM), (("plan", "a"), signal.SIGINT),
                                              (("reconcile", "--once", "--allow-dirty"), signal.SIGTERM)])
def test_a_signal_ends_a_long_key_derivation_within_seconds(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, command: tuple[str, ...], sig: signal.Signals
) -> None:
    """Sound but slow settings (many passwords at a high iteration count): the plan derives one key per broker;
    a signal is served between two derivations, so it ends the command within about one derivation, not
    after all of them. The broker count is sized from one derivation's cost so the command is still deriving
    when the signal comes, on a quiet machine as on a loaded one. (The bound is measured here, on this machine
    under its current load.)"""
    params = EncoderParams(Secret(ENCODER_SECRET), iterations=200_000)
    stored = encode(Secret(KEYSTORE_PASSWORD), params)
    started = time.monotonic()
    decode(stored, params)
    one = time.monotonic() - started  # what one derivation costs right now
    wait = 2 + 3 * one if command[0] == "plan" else 5 + 8 * one  # start-up, validation, the live read
    # enough derivations that the command is still deriving, far from done, when the signal comes
    count = max(60, math.ceil((wait + 30) / one))
    brokers = list(range(1, count + 1))
    for b in brokers:
        zk_client.create(entity_path(EntityRef("brokers", str(b))), encode_entity_config({PASSWORD_KEY: stored}),
                         makepath=True)
    root = manifests(tmp_path, {
        "clusters/a/cluster.yaml": cluster_yaml(zk_connect, spec_extra=ENCODER.replace("}}", "}, iterations: 200000}"),
                                                brokers=str(brokers)),
        "clusters/a/brokers.yaml": password_yaml(brokers)})
    env = {**os.environ, "PYTHONPATH": str(REPO), "RECONCILER_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    proc = subprocess.Popen([sys.executable, "-m", "reconciler", "--repo", str(root), *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # start-up, validation and the live read, then well into the 60 derivations
        time.sleep(wait)
        assert proc.poll() is None
        signalled = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        ended = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
    assert ended < max(4.0, 3 * one), f"took {ended:.1f} s after the signal; one derivation takes {one:.1f} s"
    assert ended < count * one / 2  # far from having finished the derivations
    assert "Traceback" not in err
    if command[0] == "plan":
        assert proc.returncode == 1 and "interrupted" in err
    else:  # a graceful stop: the cluster being planned is skipped, nothing failed
        assert proc.returncode == 0 and ("stopping: interrupted before writing" in err  # while deriving
                                         or "stopping: not started" in err)  # (on a very slow machine)
    assert not zk_client.exists("/config/topics")  # nothing written


# --- finding 7: ACL downgrade --------------------------------------------------------------------------------


def secure_cluster(connect: str) -> KazooClient:
    """A chroot as brokers with zookeeper.set.acl=true leave it (ZkData.defaultAcls(isSecure=true, path))."""
    client = KazooClient(hosts=connect, auth_data=[("digest", ZK_CREDENTIALS)], timeout=10)
    client.start(timeout=15)
    user, _, password = ZK_CREDENTIALS.partition(":")
    creator = make_digest_acl(user, password, all=True)
    world_read = ACL(1, Id("world", "anyone"))
    for path in ("/config", "/config/changes", "/config/topics", "/brokers", "/brokers/ids", "/brokers/topics"):
        client.create(path, b"", acl=[creator, world_read])
    client.create("/config/brokers", b"", acl=[creator])  # a sensitive root path: creator only
    return client


def test_apply_refuses_to_create_open_znodes_in_a_secured_cluster(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = secure_cluster(zk_connect)
    try:
        brokers = broker_doc("{config: {num.io.threads: 9}}")
        files = {"clusters/a/cluster.yaml": cluster_yaml(zk_connect, AUTH), "clusters/a/topics.yaml": TOPICS,
                 "clusters/a/brokers.yaml": brokers}
        root = manifests(tmp_path, files)
        code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a")
        assert code == 0 and "carry Kafka's secure ACLs" in err
        code, _out, err = invoke(capsys, "--repo", str(root), "apply", "a", "--auto-approve", "--audit-log",
                                str(tmp_path / "audit.jsonl"))
        assert code == 1 and "refusing" in err and "setAcl: true" in err
        assert not admin.exists("/config/topics/orders") and not admin.exists("/reconciler")  # nothing written
        manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect, AUTH + ", setAcl: true")})
        code, _out, err = invoke(capsys, "--repo", str(root), "apply", "a", "--auto-approve", "--audit-log",
                                str(tmp_path / "audit.jsonl"))
        assert code == 0, err
        user, _, password = ZK_CREDENTIALS.partition(":")
        creator = make_digest_acl(user, password, all=True)
        topic_acl, _ = admin.get_acls("/config/topics/orders")
        assert set(map(str, topic_acl)) == {str(creator), str(ACL(1, Id("world", "anyone")))}
        broker_acl, _ = admin.get_acls("/config/brokers/1")  # sensitive: no world read, as Kafka would
        assert [str(a) for a in broker_acl] == [str(creator)]
        assert OPEN not in admin.get_acls("/reconciler/audit")[0]
    finally:
        admin.stop()
        admin.close()


# --- finding 8: logs and snapshots -----------------------------------------------------------------------------


def test_debug_logs_never_carry_credentials_or_written_payloads(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient
) -> None:
    stored = encode(Secret("lk-older-pw-1x"), EncoderParams(Secret(ENCODER_SECRET)))
    zk_client.create(entity_path(EntityRef("brokers", "1")), encode_entity_config({PASSWORD_KEY: stored}),
                     makepath=True)
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect, AUTH, ENCODER),
                                "clusters/a/brokers.yaml": password_yaml([1]), "clusters/a/topics.yaml": TOPICS})
    for args in (["-v", "-v", "apply", "a", "--auto-approve"], ["-v", "-v", "plan", "a"]):
        done = cli(root, *args)
        assert done.returncode == 0, done.stderr
        assert "INFO" in done.stderr  # verbose logging was on
        for secret in (ZK_CREDENTIALS, ENCODER_SECRET, KEYSTORE_PASSWORD, "encryptedPassword", stored[:40]):
            assert secret not in done.stderr + done.stdout, secret


def test_snapshot_rows_redact_by_the_catalogs_password_type(tmp_path: Path) -> None:
    props = ("password.encoder.secret=lk-static-enc-3j\npassword.encoder.old.secret=lk-static-old-5t\n"
             "delegation.token.master.key=lk-token-key-8w\ndelegation.token.secret.key=lk-token-sec-2q\n"
             "num.io.threads=8\n")
    brokers = broker_doc("{static: {file: b1.properties}, config: {}}")
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1"),
                                "clusters/a/brokers.yaml": brokers, "clusters/a/b1.properties": props})
    _, states, _ = load_and_validate(root, ["a"])
    rows = {key: value for _, _, key, value in static_rows(states["a"], load_catalog())}
    assert rows["num.io.threads"] == "8"
    assert {k: v for k, v in rows.items() if k != "num.io.threads"} == dict.fromkeys(
        ["password.encoder.secret", "password.encoder.old.secret", "delegation.token.master.key",
         "delegation.token.secret.key"], "(sensitive)")


# --- finding 10: the small items ---------------------------------------------------------------------------------


def test_a_huge_key_is_echoed_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "k" * (4 * 1024 * 1024)
    topics = TOPICS.replace("retention.ms: 3600000", f"{key}: 1")
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1"),
                                "clusters/a/topics.yaml": topics})
    for fmt in ("text", "github", "json"):
        code, out, err = invoke(capsys, "--repo", str(root), "validate", "--format", fmt)
        assert code == 1 and len(out) + len(err) < 10_000, (fmt, len(out) + len(err))


def test_a_value_zookeeper_cannot_store_is_warned_at_plan_time(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate accepts it (Kafka has no length rule), ZooKeeper would refuse the write (jute.maxbuffer)."""
    big = "x" * (2 * 1024 * 1024)
    brokers = broker_doc(f"{{config: {{ssl.cipher.suites: {big}}}}}")
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect),
                                "clusters/a/brokers.yaml": brokers})
    code, out, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err[:2000]
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 0, err[:2000]
    assert re.search(r"brokers/1: its config znode would be about 2,09\d,\d{3} bytes, over ZooKeeper's default "
                     "jute.maxbuffer", out + err), (out + err)[-2000:]
    assert len(out + err) < 20_000  # the value itself is shown clipped


@pytest.mark.parametrize("data", [b"", b'{"version":2,"config":{}}', b'{"config":{}}'])
def test_corrupt_entity_znodes_stop_the_plan(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, data: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    zk_client.create("/config/topics/orders", data, makepath=True)
    zk_client.create("/brokers/topics/orders", json.dumps({"version": 3, "partitions": {"0": [1]}}).encode(),
                     makepath=True)
    root = manifests(tmp_path, {"clusters/a/cluster.yaml": cluster_yaml(zk_connect), "clusters/a/topics.yaml": TOPICS})
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 1 and "/config/topics/orders" in err and ("empty data" in err or "expected 1" in err)


@pytest.mark.parametrize(("where", "text", "message"), [
    ("clusters/a/cluster.yaml", cluster_yaml("127.0.0.1:1", ", sessionTimeoutSeconds: 1e308"), "600"),
    ("clusters/a/b1.properties", "password.encoder.iterations=abc\n", "password.encoder.iterations must be an integer"),
    ("clusters/a/b1.properties", "password.encoder.key.length=99\n", "not an AES key length"),
])
def test_values_that_used_to_crash_are_validation_errors(
    tmp_path: Path, where: str, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    brokers = broker_doc("{static: {file: b1.properties}, config: {}}")
    files = {"clusters/a/cluster.yaml": cluster_yaml("127.0.0.1:1", spec_extra=ENCODER),
             "clusters/a/brokers.yaml": brokers, "clusters/a/b1.properties": "num.io.threads=8\n"}
    root = manifests(tmp_path, {**files, where: text})
    code, _out, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and message in err and "Traceback" not in err


def test_a_failed_import_leaves_no_files_behind(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """The self-check fails (a live value Kafka would refuse cannot validate; a key no Kafka version knows is
    left out and kept through policy.ignoreKeys since issue 28): nothing stays written, and a directory --force
    would have replaced is back as it was."""
    zk_client.create("/config/topics/orders", encode_entity_config({"cleanup.policy": "no-such-policy"}),
                     makepath=True)
    zk_client.create("/brokers/topics/orders", json.dumps({"version": 3, "partitions": {"0": [1]}}).encode(),
                     makepath=True)
    out_root = tmp_path / "repo"
    code, _, err = invoke(capsys, "import", "a", "--zookeeper", zk_connect, "--out", str(out_root),
                          "--kafka-version", "3.6")
    assert code == 1, err
    assert not (out_root / "clusters/a").exists()
    assert not [p for p in (out_root / "clusters").iterdir() if p.name.startswith(".")]
    manifests(out_root, {"clusters/a/keep.yaml": "# mine\n"})
    code, _, err = invoke(capsys, "import", "a", "--zookeeper", zk_connect, "--out", str(out_root),
                          "--kafka-version", "3.6", "--force")
    assert code == 1
    assert [p.name for p in (out_root / "clusters/a").iterdir()] == ["keep.yaml"]
    assert sorted(p.name for p in (out_root / "clusters").iterdir()) == ["a"]


def test_kafka_namespace_list_matches_zkdata() -> None:
    """The refused roots are Kafka 3.9's ZkData.SecureRootPaths ++ ZkAclStore.securePaths ++ /consumers, plus
    ZooKeeper's /zookeeper (kept in sync by hand: a new Kafka root must be added there)."""
    from reconciler.rules.cluster import KAFKA_ROOT_PATHS

    assert set(KAFKA_ROOT_PATHS) >= {"/admin", "/brokers", "/cluster", "/config", "/controller", "/controller_epoch",
                                     "/isr_change_notification", "/latest_producer_id_block",
                                     "/log_dir_event_notification", "/delegation_token", "/kafka-acl",
                                     "/kafka-acl-changes", "/kafka-acl-extended", "/kafka-acl-extended-changes",
                                     "/migration", "/feature", "/consumers", "/zookeeper"}


def _unused(server: ZkServer) -> None:  # keeps the fixture type imported for readers of this module
    del server
