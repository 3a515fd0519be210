"""SCRAM users as code on real Kafka 3.9 brokers (issue 31): credentials written by `apply` into the user's
config znode authenticate over SASL_PLAINTEXT (SCRAM-SHA-256 and -512), a password change locks the old
password out, an unchanged password plans nothing, and a user made by Kafka's own ConfigCommand
(kafka-configs --zookeeper) with the manifests' password plans as "no changes". What counts is what the
brokers answer to a login, never our own read-back."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConfigurationError, KafkaError
from kazoo.client import KazooClient

from reconciler.model import Secret
from reconciler.plan import plans_from_json
from reconciler.secrets import scram
from tests.integration.brokerrepo import cli, make_repo, plan_file
from tests.kafkabrokers import KafkaCluster
from tests.leakcheck import plant

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def password() -> str:
    return plant(f"lk-scram-{uuid.uuid4().hex[:12]}")


def scram_doc(users: dict[str, dict[str, tuple[str, int]]], quotas: str = "") -> str:
    """A Quotas document: user -> mechanism -> (password file, iterations)."""
    lines = ["apiVersion: reconciler/v1", "kind: Quotas", "meta: {}", "spec:"]
    if quotas:
        lines += ["  users:", quotas]
    lines.append("  scramUsers:")
    for user, mechanisms in users.items():
        lines.append(f"    {user}:")
        for mechanism, (file, iterations) in mechanisms.items():
            lines.append(f"      {mechanism}: {{password: {{secret: {{file: {file}}}}}, iterations: {iterations}}}")
    return "\n".join(lines) + "\n"


def login(kafka: KafkaCluster, user: str, secret: str, mechanism: str = "SCRAM-SHA-256") -> bool:
    """Whether EVERY broker's SASL listener accepts `user` with `secret`; False when every one refuses; an
    AssertionError names the brokers when they disagree (one has not taken the change yet)."""
    assert kafka.sasl_bootstrap is not None
    answers = [login_at(server, user, secret, mechanism) for server in kafka.sasl_bootstrap.split(",")]
    if all(answers) or not any(answers):
        return answers[0]
    raise _Disagree(f"brokers disagree on {user}: {answers}")


class _Disagree(AssertionError):
    pass


def login_at(server: str, user: str, secret: str, mechanism: str) -> bool:
    """Whether this one broker accepts the login (a DescribeCluster after it)."""
    try:
        client = KafkaAdminClient(bootstrap_servers=[server], security_protocol="SASL_PLAINTEXT",
                                  sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=secret,
                                  request_timeout_ms=5000, bootstrap_timeout_ms=2500,  # a refusal waits this long
                                  reconnect_backoff_max_ms=1000)
    except KafkaConfigurationError:
        raise  # the test's own mistake, never a refused login
    except KafkaError:
        return False
    try:
        client.describe_cluster()
        return True
    except KafkaError:
        return False
    finally:
        client.close()


def eventually(check: object, want: bool, seconds: float = 30) -> bool:
    """The brokers take a credential from the config-change notification: poll until `check()` is `want`."""
    assert callable(check)
    deadline = time.monotonic() + seconds
    while True:
        try:
            got = bool(check())
        except _Disagree:
            if time.monotonic() > deadline:
                raise
            got = not want
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def libs() -> str:
    out = subprocess.run(["bash", str(REPO / "scripts" / "kafka-jars.sh")], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def zk_get(kafka: KafkaCluster, path: str) -> bytes:
    client = KazooClient(hosts=kafka.zk_connect)
    client.start(timeout=15)
    try:
        data, _ = client.get(path)
        return bytes(data)
    finally:
        client.stop()
        client.close()


@pytest.fixture
def repo(tmp_path: Path, kafka_secure: KafkaCluster) -> Path:
    return make_repo(tmp_path / "repo", kafka_secure, {})


def write(root: Path, name: str, text: str) -> None:
    (root / "clusters" / "c1" / name).write_text(text)


def test_scram_users_applied_log_in_and_a_password_change_locks_the_old_one_out(
    repo: Path, tmp_path: Path, kafka_secure: KafkaCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    bob = f"bob-{uuid.uuid4().hex[:6]}"
    first, second, bobs = password(), password(), password()
    write(repo, "alice.pw", first)
    write(repo, "bob.pw", bobs)
    doc = scram_doc({alice: {"SCRAM-SHA-256": ("alice.pw", 8192)}, bob: {"SCRAM-SHA-512": ("bob.pw", 4096)}},
                    quotas=f"    {alice}: {{producer_byte_rate: 1048576}}")
    write(repo, "quotas.yaml", doc)
    assert not login(kafka_secure, alice, first)  # not a user yet

    # --verify: DescribeUserScramCredentials reports each user's mechanism with the planned iterations
    assert cli(repo, "apply", "c1", "--auto-approve", "--verify") == 0
    assert "verif" in capsys.readouterr().err
    assert eventually(lambda: login(kafka_secure, alice, first), True)
    assert eventually(lambda: login(kafka_secure, bob, bobs, "SCRAM-SHA-512"), True)
    assert not login(kafka_secure, alice, second)
    assert not login(kafka_secure, bob, bobs, "SCRAM-SHA-256")  # no SCRAM-SHA-256 credential for bob
    stored = zk_get(kafka_secure, f"/config/users/{alice}").decode()
    assert "producer_byte_rate" in stored and "SCRAM-SHA-256" in stored  # one entity: quota and credential

    # unchanged: decided by recomputing the keys with the stored salt and iterations
    _, plan = plan_file(repo, tmp_path)
    assert plan.is_empty, plan

    write(repo, "alice.pw", second)
    _, plan = plan_file(repo, tmp_path)
    (entity,) = plan.entities
    (change,) = entity.changes
    assert (change.key, change.op, change.redacted, change.risk) == ("SCRAM-SHA-256", "~", "changed", "disruptive")
    assert any(alice in reason for reason in change.reasons)
    assert cli(repo, "apply", "c1", "--auto-approve", "--verify") == 0
    assert eventually(lambda: login(kafka_secure, alice, second), True)
    assert not eventually(lambda: login(kafka_secure, alice, first), False)

    # bob moves from SCRAM-SHA-512 to SCRAM-SHA-256: the old mechanism's removal is disruptive, verified gone
    write(repo, "quotas.yaml", scram_doc({alice: {"SCRAM-SHA-256": ("alice.pw", 8192)},
                                          bob: {"SCRAM-SHA-256": ("bob.pw", 4096)}},
                                         quotas=f"    {alice}: {{producer_byte_rate: 1048576}}"))
    _, plan = plan_file(repo, tmp_path)
    moved = {c.key: (c.op, c.risk) for e in plan.entities for c in e.changes}
    assert moved == {"SCRAM-SHA-512": ("-", "disruptive"), "SCRAM-SHA-256": ("+", "safe")}
    assert cli(repo, "apply", "c1", "--auto-approve", "--verify") == 0  # exit 0: DescribeUserScramCredentials agrees
    assert eventually(lambda: login(kafka_secure, bob, bobs), True)
    assert not eventually(lambda: login(kafka_secure, bob, bobs, "SCRAM-SHA-512"), False)
    out = capsys.readouterr()
    assert first not in out.out + out.err and second not in out.out + out.err


def test_config_command_user_with_the_same_password_plans_no_changes_and_formats_agree(
    repo: Path, tmp_path: Path, kafka_secure: KafkaCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    carol = f"carol-{uuid.uuid4().hex[:6]}"
    secret = password()
    subprocess.run(
        ["java", "-cp", f"{libs()}/*", "kafka.admin.ConfigCommand", "--zookeeper", kafka_secure.zk_connect,
         "--alter", "--add-config", f"SCRAM-SHA-256=[iterations=8192,password={secret}]",
         "--entity-type", "users", "--entity-name", carol],
        capture_output=True, text=True, check=True, timeout=120)
    assert eventually(lambda: login(kafka_secure, carol, secret), True)

    write(repo, "carol.pw", secret)
    write(repo, "quotas.yaml", scram_doc({carol: {"SCRAM-SHA-256": ("carol.pw", 8192)}}))
    _, plan = plan_file(repo, tmp_path)
    assert plan.is_empty, plan

    # Kafka's format, byte for byte in structure: our formatter recomputes Kafka's keys from Kafka's salt
    theirs = zk_get(kafka_secure, f"/config/users/{carol}").decode()
    value = json.loads(theirs)["config"]["SCRAM-SHA-256"]
    credential = scram.from_string(value)
    again = scram.generate("SCRAM-SHA-256", Secret(secret), credential.iterations, credential.salt)
    assert scram.to_string(again) == value
    # and ConfigCommand's salt has the shape ours has (ScramFormatter.secureRandomBytes: base-36 digits)
    assert credential.salt.decode().isalnum() and credential.salt.decode() == credential.salt.decode().lower()
    assert len(base64.b64decode(value.split(",")[1].split("=", 1)[1])) == 32  # SHA-256 stored_key

    # import leaves credentials out (no password can be recovered from salted keys) and says so in a note
    capsys.readouterr()
    imported = tmp_path / "imported"
    assert cli(repo, "import", "imp", "--zookeeper", kafka_secure.zk_connect, "--out", str(imported)) == 0
    note = capsys.readouterr().err
    assert "scramUsers" in note and carol in note
    assert not any("SCRAM-SHA" in f.read_text() for f in imported.rglob("*.yaml"))

    # a different password in the manifests: a change (apply then logs in with the manifests' one)
    other = password()
    write(repo, "carol.pw", other)
    out, plan = plan_file(repo, tmp_path)
    assert [c.redacted for e in plan.entities for c in e.changes] == ["changed"]
    assert other not in out.read_text() and secret not in out.read_text()
    assert cli(repo, "apply", str(out), "--auto-approve") == 0
    assert eventually(lambda: login(kafka_secure, carol, other), True)
    assert not login(kafka_secure, carol, secret)
    assert plans_from_json(out.read_text())[0].entities[0].changes[0].iterations == 8192
