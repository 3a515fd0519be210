"""Issue 38, finding 10: the operator's allow-list covered only bootstrap addresses; Admin API requests then went
to whatever the cluster's metadata advertises. A real KRaft 4.1 node reached through a TCP proxy: the proxy's
address is allowed, the port the node advertises is not. Every address the client dials is checked now
(`brokers.endpoints.checked_address` on each connection kafka-python opens).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.brokerrepo import cli
from tests.integration.test_kraft_backend import kraft_repo
from tests.kraftbrokers import KraftCluster
from tests.tcpproxy import logging_proxy


def test_an_advertised_address_outside_the_allow_list_is_never_dialled(
    kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    host, port = kraft4.bootstrap.rsplit(":", 1)
    with logging_proxy((host, int(port))) as proxy:
        root = kraft_repo(tmp_path / "repo", KraftCluster(kraft4.dir, proxy.address, kraft4.version), {})
        monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", proxy.address)  # the node's own port is not allowed
        code = cli(root, "plan", "k1")
        err = capsys.readouterr().err
        assert code == 1, err
        assert f"broker address {kraft4.bootstrap}" in err and "not in the operator's allow-list" in err
        assert proxy.connections >= 1  # the bootstrap address (allowed) was used; the advertised one refused
        # both allowed: the same plan reads the node
        monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", f"{proxy.address}, {kraft4.bootstrap}")
        assert cli(root, "plan", "k1") == 0, capsys.readouterr().err


SCRAM_USER = """apiVersion: reconciler/v1
kind: Quotas
meta: {{}}
spec:
  scramUsers:
    {user}:
      SCRAM-SHA-512: {{password: {{secret: {{env: LK_REVIEW3_SCRAM}}}}, iterations: 4096}}
"""


def test_scram_credentials_are_never_sent_over_plaintext(
    kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38, finding 11: AlterUserScramCredentials sent the salt and salted password in clear (enough to log
    in as the user). Refused over a connection that is not TLS, like passwords, unless the operator allows it;
    Kafka's DescribeUserScramCredentials then reports no credential for the user."""
    import uuid

    from kafka.admin import KafkaAdminClient

    from tests.leakcheck import plant

    monkeypatch.setenv("LK_REVIEW3_SCRAM", plant("lk-review3-scram-9v3x"))
    user = f"scram-{uuid.uuid4().hex[:8]}"
    state = f", stateTopic: _kr-review3-{uuid.uuid4().hex[:6]}"
    root = kraft_repo(tmp_path / "repo", kraft4, {"users.yaml": SCRAM_USER.format(user=user)}, extra=state)
    code = cli(root, "plan", "k1")
    err = capsys.readouterr().err
    assert code == 1 and f"users/{user} SCRAM-SHA-512" in err and "allowPlaintextPasswords" in err, err
    code = cli(root, "apply", "k1", "--auto-approve")
    assert code == 1, capsys.readouterr().err
    client = KafkaAdminClient(bootstrap_servers=[kraft4.bootstrap], request_timeout_ms=10000)
    try:
        described = client.describe_user_scram_credentials([user]) or {}
    finally:
        client.close()
    assert not (described.get(user) or {}).get("credential_infos"), described  # nothing reached the broker
