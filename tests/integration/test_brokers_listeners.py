"""Listeners added and removed dynamically on real Kafka 3.9 brokers, with their passwords encoded by apply and
decoded by the brokers: a TLS client completes a handshake with the keystore the brokers opened with the
password we wrote, a SASL/PLAIN client logs in against the JAAS config we wrote, and a removed listener
refuses connections."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from kafka.admin import KafkaAdminClient

from tests.conftest import free_port
from tests.integration.brokerrepo import broker_config, cli, make_repo, plan_file
from tests.kafkabrokers import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

KEYSTORE_PASSWORD = "ks-Pa55-for-the-test"  # planted: the leak scan fails the run if it is ever printed
PLAIN_PASSWORD = "plain-Pa55-alice"


def make_keystore(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 in a PKCS12 keystore (what the broker opens) and as PEM (what
    the client trusts)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    keystore = directory / "broker.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", key, cert, None, serialization.BestAvailableEncryption(KEYSTORE_PASSWORD.encode())))
    pem = directory / "ca.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return keystore, pem


def listeners_doc(kafka: KafkaCluster, extra: dict[int, list[str]], protocols: dict[str, str],
                  configs: str) -> str:
    plain = {b: kafka.bootstrap.split(",")[i] for i, b in enumerate(kafka.brokers)}
    lines = [
        "apiVersion: reconciler/v1", "kind: Listeners", "meta: {}", "spec:",
        "  securityProtocolMap: {" + ", ".join(f"{k}: {v}" for k, v in {"PLAINTEXT": "PLAINTEXT", **protocols}.items())
        + "}",
        "  interBrokerListener: PLAINTEXT", "  brokers:"]
    for b in kafka.brokers:
        entries = [f"PLAINTEXT://{plain[b]}", *extra.get(b, [])]
        lines += [f'    "{b}":', f"      listeners: [{', '.join(entries)}]",
                  f"      advertised: [{', '.join(entries)}]"]
    if configs:
        lines += ["  listenerConfigs:", configs]
    return "\n".join(lines) + "\n"


def tls_handshake(port: int, ca: Path) -> str:
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return str(tls.version())


def plain_login_works(port: int, password: str) -> bool:
    try:
        client = KafkaAdminClient(bootstrap_servers=[f"127.0.0.1:{port}"], security_protocol="SASL_PLAINTEXT",
                                  sasl_mechanism="PLAIN", sasl_plain_username="alice",
                                  sasl_plain_password=password, request_timeout_ms=5000)
    except Exception:
        return False
    try:
        return bool(client.describe_cluster()["brokers"])
    except Exception:
        return False
    finally:
        client.close()


def refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            return False
    except OSError:
        return True


def test_listeners_added_with_passwords_then_removed(
    kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "repo", kafka, {})
    cluster_dir = root / "clusters" / "c1"
    keystore, ca = make_keystore(cluster_dir)
    (cluster_dir / "keystore-password.txt").write_text(KEYSTORE_PASSWORD)
    (cluster_dir / "jaas.txt").write_text(
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="admin-pw" user_alice="{PLAIN_PASSWORD}";')
    ssl_ports = {b: free_port() for b in kafka.brokers}
    sasl_ports = {b: free_port() for b in kafka.brokers}
    extra = {b: [f"EXTERNAL://127.0.0.1:{ssl_ports[b]}", f"CLIENTS://127.0.0.1:{sasl_ports[b]}"]
             for b in kafka.brokers}
    configs = "\n".join([
        "    EXTERNAL:",
        f"      ssl.keystore.location: {keystore}",
        "      ssl.keystore.type: PKCS12",
        "      ssl.keystore.password: {secret: {file: keystore-password.txt}}",
        "      ssl.key.password: {secret: {file: keystore-password.txt}}",
        "    CLIENTS:",
        "      sasl.enabled.mechanisms: PLAIN",
        "      plain.sasl.jaas.config: {secret: {file: jaas.txt}}",
    ])
    make_repo(root, kafka, {"listeners.yaml": listeners_doc(
        kafka, extra, {"EXTERNAL": "SSL", "CLIENTS": "SASL_PLAINTEXT"}, configs)})
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--audit-log", str(tmp_path / "a.jsonl")) == 0

    # the brokers' own word: the password is held as a dynamic, sensitive per-broker config
    entry = broker_config(kafka, 1, "listener.name.external.ssl.keystore.password")
    assert entry is not None
    assert (entry["config_source"], entry["is_sensitive"], entry["value"]) == ("DYNAMIC_BROKER_CONFIG", True, None)
    # ... and it opened the keystore with it: a TLS client completes a handshake on every broker
    for b in kafka.brokers:
        assert tls_handshake(ssl_ports[b], ca).startswith("TLS")
        # the JAAS config was decoded too: alice logs in with her password, not with another
        assert plain_login_works(sasl_ports[b], PLAIN_PASSWORD)
    assert not plain_login_works(sasl_ports[1], "wrong-password")

    # removing the SASL listener: the brokers close it
    keep = {b: [f"EXTERNAL://127.0.0.1:{ssl_ports[b]}"] for b in kafka.brokers}
    make_repo(root, kafka, {"listeners.yaml": listeners_doc(kafka, keep, {"EXTERNAL": "SSL"}, "\n".join(
        configs.splitlines()[:5]))})
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--allow-destructive",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    for b in kafka.brokers:
        assert refused(sasl_ports[b])
        assert tls_handshake(ssl_ports[b], ca).startswith("TLS")

    # removing the SSL listener and its keystore in one update: Kafka would refuse it, so plan does
    make_repo(root, kafka, {"listeners.yaml": listeners_doc(kafka, {}, {}, "")})
    assert cli(root, "plan", "c1") == 1
    assert "Cannot remove the SSL keystore from an existing listener" in capsys.readouterr().err

    # the listener first: the brokers close it
    make_repo(root, kafka, {"listeners.yaml": listeners_doc(kafka, {}, {"EXTERNAL": "SSL"},
                                                            "\n".join(configs.splitlines()[:5]))})
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--allow-destructive",
               "--audit-log", str(tmp_path / "a.jsonl")) == 0
    for b in kafka.brokers:
        assert refused(ssl_ports[b])

    # then its keystore: running brokers still refuse it (the removed listener's SSL factory stays registered
    # until a restart); plan warns, apply writes it, and --verify proves it was not taken
    make_repo(root, kafka, {"listeners.yaml": listeners_doc(kafka, {}, {}, "")})
    capsys.readouterr()
    assert cli(root, "apply", "c1", "--auto-approve", "--verify", "--verify-timeout", "4s", "--allow-destructive",
               "--audit-log", str(tmp_path / "a.jsonl")) == 4
    err = capsys.readouterr().err
    assert "has not restarted since the listener was removed" in err
    for b in kafka.brokers:
        assert f"brokers/{b} listener.name.external.ssl.keystore.location: not taken on broker {b}" in err, err
    _path, plan = plan_file(root, tmp_path)  # nothing left to write: the znodes hold the removal already
    assert plan.is_empty
    # a rolling restart: each broker reads its configs from ZooKeeper afresh, and the removal is in effect
    for b in kafka.brokers:
        kafka.stop_broker(b)
        kafka.start_broker(b)
    assert broker_config(kafka, 1, "listener.name.external.ssl.keystore.password") is None
    kafka.mark_logs()  # the refusals above were provoked on purpose; nothing after the restart may be dropped
