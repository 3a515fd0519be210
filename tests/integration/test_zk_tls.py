"""Transport security to ZooKeeper as Kafka supports it (KIP-515), against a real TLS-only ZooKeeper
(tests/securezk.py): TLS with the operator's CA, a client certificate and hostname verification, and SASL
DIGEST-MD5. A plan of that cluster works end to end (plan -> apply -> plan shows no changes); every
misconfiguration is refused without a traceback and without echoing a secret; the bytes on the wire (a
logging proxy) hold none of the secrets.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id

from tests.integration.test_gitops import invoke
from tests.leakcheck import SASL_CREDENTIALS, SASL_PASSWORD, TLS_KEY_PASSWORD
from tests.securezk import Pki, SecureZooKeeper, make_pki, start_secure_zookeeper
from tests.tcpproxy import logging_proxy

TOPICS = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Topics
    meta: {}
    spec:
      topics:
        orders: {partitions: 1, replicationFactor: 1, config: {retention.ms: 3600000}}
    """)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SecureZooKeeper, Pki]]:
    base = tmp_path_factory.mktemp("secure-zookeeper-secret")  # the server's own files (its JAAS holds a password)
    pki, keystore = make_pki(base / "pki", TLS_KEY_PASSWORD)
    server = start_secure_zookeeper(base / "server", pki, keystore, TLS_KEY_PASSWORD, "kafka", SASL_PASSWORD)
    try:
        yield server, pki
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch, secure: tuple[SecureZooKeeper, Pki]) -> None:
    monkeypatch.setenv("LK_SASL", SASL_CREDENTIALS)
    monkeypatch.setenv("LK_TLS_KEY_PW", TLS_KEY_PASSWORD)
    monkeypatch.setenv("RECONCILER_SECRET_DIRS", str(secure[1].client_key.parent))  # the "mounted" key


def repo(tmp_path: Path, pki: Pki, connect: str, tls_extra: str = "", auth: str = "{env: LK_SASL}",
         ca: Path | None = None) -> Path:
    root = tmp_path / "manifests"
    (root / "clusters/a/tls").mkdir(parents=True, exist_ok=True)
    (root / "clusters/a/tls/ca.pem").write_bytes((ca or pki.ca).read_bytes())  # public: committed
    (root / "clusters/a/tls/client.pem").write_bytes(pki.client_cert.read_bytes())
    (root / "clusters/a/cluster.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: a}}
        spec:
          kafkaVersion: "3.6"
          zookeeper:
            connect: "{connect}"
            tls:
              ca: tls/ca.pem
              certificate: tls/client.pem
              key: {{file: {pki.client_key}}}
              keyPassword: {{env: LK_TLS_KEY_PW}}{tls_extra}
            auth: {{scheme: sasl, mechanism: DIGEST-MD5, credentials: {auth}}}
            setAcl: true
          brokers: [1]
        """))
    (root / "clusters/a/topics.yaml").write_text(TOPICS)
    return root


def admin(server: SecureZooKeeper, pki: Pki) -> KazooClient:
    client = KazooClient(hosts=f"127.0.0.1:{server.port}", use_ssl=True, ca=str(pki.ca), certfile=str(pki.client_cert),
                         keyfile=str(pki.client_key), keyfile_password=TLS_KEY_PASSWORD, timeout=10,
                         sasl_options={"mechanism": "DIGEST-MD5", "username": "kafka", "password": SASL_PASSWORD})
    client.start(timeout=20)
    return client


def test_plan_apply_plan_against_a_tls_only_zookeeper(
    tmp_path: Path, secure: tuple[SecureZooKeeper, Pki], capsys: pytest.CaptureFixture[str]
) -> None:
    server, pki = secure
    client = admin(server, pki)
    client.ensure_path("/tls-e2e")  # the cluster's chroot, as its brokers would have made it
    with logging_proxy(("127.0.0.1", server.port)) as wire:
        root = repo(tmp_path, pki, f"{wire.address}/tls-e2e")
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--detailed-exitcode")
        assert code == 2, err
        assert "+ topics/orders" in out or "orders" in out
        code, out, err = invoke(capsys, "--repo", str(root), "apply", "a", "--auto-approve", "--audit-log",
                                str(tmp_path / "audit.jsonl"))
        assert code == 0, err
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--detailed-exitcode")
        assert code == 0, err
        assert wire.connections >= 3
        for secret in (SASL_PASSWORD, TLS_KEY_PASSWORD, "retention.ms", "orders"):
            assert not wire.saw(secret), secret  # everything on the wire is encrypted
    try:
        acls, _ = client.get_acls("/tls-e2e/config/topics/orders")
        # Kafka's secure ACLs (zookeeper.set.acl=true): CREATOR_ALL, which the server expands to every identity
        # of the creating session (its SASL user and its certificate), plus world READ; never world write
        assert str(ACL(31, Id("sasl", "kafka"))) in set(map(str, acls))
        assert {str(a) for a in acls if a.id.scheme == "world"} == {str(ACL(1, Id("world", "anyone")))}
        assert {a.id.scheme for a in acls} == {"sasl", "x509", "world"}
    finally:
        client.stop()
        client.close()


def test_a_plaintext_client_cannot_use_the_secure_port(secure: tuple[SecureZooKeeper, Pki]) -> None:
    server, _ = secure
    client = KazooClient(hosts=f"127.0.0.1:{server.port}", timeout=3)
    with pytest.raises(Exception):  # noqa: B017 (kazoo's timeout class varies by handler)
        client.start(timeout=4)
    client.stop()
    client.close()


@pytest.mark.parametrize(("connect_host", "tls_extra", "ca", "auth", "expected"), [
    ("127.0.0.2", "", None, "{env: LK_SASL}", "cannot connect"),  # not the certificate's name
    ("127.0.0.1", "", "other", "{env: LK_SASL}", "cannot connect"),  # a CA we do not trust
    ("127.0.0.1", "", None, "{env: LK_WRONG_SASL}", "cannot connect"),  # the wrong SASL password
])
def test_tls_and_sasl_misconfigurations_are_refused(
    tmp_path: Path, secure: tuple[SecureZooKeeper, Pki], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, connect_host: str, tls_extra: str, ca: str | None, auth: str, expected: str,
) -> None:
    server, pki = secure
    monkeypatch.setenv("LK_WRONG_SASL", "kafka:lk-not-the-pw-0")
    root = repo(tmp_path, pki, f"{connect_host}:{server.port}/tls-bad", tls_extra, auth,
                pki.other_ca if ca else None)
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 1 and expected in err and "Traceback" not in err
    assert SASL_PASSWORD not in out + err and TLS_KEY_PASSWORD not in out + err


def test_hostname_verification_can_be_turned_off_explicitly(
    tmp_path: Path, secure: tuple[SecureZooKeeper, Pki], capsys: pytest.CaptureFixture[str]
) -> None:
    server, pki = secure
    root = repo(tmp_path, pki, f"127.0.0.2:{server.port}/tls-noverify", "\n              verifyHostname: false")
    code, _, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 0, err


def test_the_client_key_must_be_in_the_repository_or_an_approved_directory(
    tmp_path: Path, secure: tuple[SecureZooKeeper, Pki], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, pki = secure
    monkeypatch.delenv("RECONCILER_SECRET_DIRS")
    root = repo(tmp_path, pki, f"127.0.0.1:{server.port}/tls-key")
    code, _, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 1 and "key file" in err and "outside the cluster's directory" in err
