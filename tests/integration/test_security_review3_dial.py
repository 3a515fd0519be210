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
