"""Writes that must be refused before the first one (issue 39, items 1 and 2), run as the user ran them: the CLI
against the session's real ZooKeeper and real Kafka 3.9 brokers (tests/kafkabrokers.py).

1. A target where no broker of the declared ids is registered (a connect string without the brokers' chroot, an
   empty chroot, other brokers' ids) is refused unless `--allow-no-brokers`, naming the chroots of the ensemble
   that hold brokers; before, apply warned and wrote there (rc 0).
2. `apply --verify` checks that it can verify (spec.adminClient, a broker answering within --verify-timeout)
   before writing; a write that could not be verified afterwards exits 4 and says what was written. Before: it
   wrote, then `--verify needs spec.adminClient` (rc 1), or 31.7 s for a 10 s timeout (rc 1).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.conftest import ZkServer, free_port
from tests.integration.brokerrepo import broker_config, cli, make_repo
from tests.kafkabrokers import KafkaCluster
from tests.tcpproxy import logging_proxy

pytestmark = [pytest.mark.kafka]
DEFAULTS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: default}
spec:
  config: {log.cleaner.backoff.ms: 17000}
"""


@pytest.fixture(autouse=True)
def refuse_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILER_ALLOW_NO_BROKERS", raising=False)  # tests/conftest.py allows it elsewhere


def repo(tmp_path: Path, kafka: KafkaCluster, *, connect: str | None = None, brokers: str | None = None,
         bootstrap: str | None = None, admin: bool = True) -> Path:
    root = make_repo(tmp_path / "repo", kafka, {"defaults.yaml": DEFAULTS})
    cluster = root / "clusters/c1/cluster.yaml"
    text = cluster.read_text()
    if connect is not None:
        text = text.replace(kafka.zk_connect, connect)
    if brokers is not None:
        text = text.replace(f"brokers: [{', '.join(map(str, kafka.brokers))}]", f"brokers: [{brokers}]")
    if bootstrap is not None:
        text = text.replace(kafka.bootstrap, bootstrap)
    if not admin:
        text = "\n".join(line for line in text.splitlines() if "adminClient" not in line) + "\n"
    cluster.write_text(text)
    return root


def apply(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, float]:
    capsys.readouterr()
    started = time.monotonic()
    code = cli(root, "apply", "c1", "--auto-approve", "--audit-log", str(tmp_path / "audit.jsonl"), *args)
    return code, capsys.readouterr().err, time.monotonic() - started


def chroot_of(kafka: KafkaCluster) -> str:
    return "/" + kafka.zk_connect.split("/", 1)[1]


def test_a_connect_string_without_the_chroot_is_refused(
        kafka: KafkaCluster, zk_server: ZkServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo(tmp_path, kafka, connect=zk_server.connect)  # the ensemble's root: the brokers are in a chroot
    code, err, _ = apply(root, tmp_path, capsys)
    assert code == 1, err
    assert (f"error: cluster c1: refusing to write to {zk_server.connect} (spec.zookeeper.connect at "
            "clusters/c1/cluster.yaml:6): no broker is registered there (declared: 1, 2, 3), so no broker would "
            "read what is written. chroots of this ensemble that hold brokers: ") in err
    assert f"{zk_server.connect}{chroot_of(kafka)} (brokers 1, 2, 3)" in err
    assert "re-run with --allow-no-brokers. Nothing was written" in err
    client = KazooClient(hosts=zk_server.connect)
    client.start(timeout=15)
    try:
        assert client.exists("/config/brokers/<default>") is None  # nothing at the ensemble's root
    finally:
        client.stop()
        client.close()
    assert not (tmp_path / "audit.jsonl").exists()


def test_an_empty_chroot_and_other_brokers_ids_are_refused_unless_allowed(
        kafka: KafkaCluster, zk_server: ZkServer, zk_chroot: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the brokers' own chroot, but ids none of which runs there (brokers 1-3 registered, 7 and 8 declared)
    root = repo(tmp_path, kafka, brokers="7, 8")
    code, err, _ = apply(root, tmp_path, capsys)
    assert code == 1 and "only broker(s) 1, 2, 3 are registered there, none of the declared 7, 8" in err, err
    assert broker_config(kafka, 1, "log.cleaner.backoff.ms")["config_source"] != "DYNAMIC_DEFAULT_BROKER_CONFIG"

    # a chroot no broker ever started in: refused, then written with --allow-no-brokers (pre-seeding)
    empty = tmp_path / "empty"
    root = repo(empty, kafka, connect=f"{zk_server.connect}{zk_chroot}")
    code, err, _ = apply(root, empty, capsys)
    assert code == 1 and "no broker is registered there (declared: 1, 2, 3)" in err, err
    assert f"{zk_server.connect}{chroot_of(kafka)} (brokers 1, 2, 3)" in err
    code, err, _ = apply(root, empty, capsys, "--allow-no-brokers")
    assert code == 0 and "Apply complete: 1 added" in err, err


def test_verify_without_admin_settings_writes_nothing(
        kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo(tmp_path, kafka, admin=False)
    code, err, _ = apply(root, tmp_path, capsys, "--verify")
    assert code == 1 and "Apply complete" not in err, err
    assert ("error: --verify cannot run, so nothing was written (fix it, or apply without --verify):\n"
            "  cluster c1: --verify needs spec.adminClient.bootstrapServers (how to reach the brokers' Admin API) "
            "in cluster.yaml") in err
    entry = broker_config(kafka, 1, "log.cleaner.backoff.ms")  # the brokers' own word: not written
    assert entry is not None and entry["config_source"] != "DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_verify_with_unreachable_brokers_honours_the_timeout_and_writes_nothing(
        kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there: the brokers "down"
    root = repo(tmp_path, kafka, bootstrap=dead)
    code, err, seconds = apply(root, tmp_path, capsys, "--verify", "--verify-timeout", "3s")
    assert code == 1 and "Apply complete" not in err, err
    assert f"cluster c1: cannot connect to the brokers at {dead} within 3 s" in err
    assert seconds < 15, seconds  # before: 31.7 s for a 10 s timeout, after writing
    entry = broker_config(kafka, 1, "log.cleaner.backoff.ms")
    assert entry is not None and entry["config_source"] != "DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_a_write_that_could_not_be_verified_exits_4_with_what_was_written(
        kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = kafka.bootstrap.split(",")[0]
    host, port = first.rsplit(":", 1)
    # the brokers answer the check before the writes (one connection), and are gone for the verification after
    with logging_proxy((host, int(port)), max_connections=1) as proxy:
        root = repo(tmp_path, kafka, bootstrap=proxy.address)
        code, err, _ = apply(root, tmp_path, capsys, "--verify", "--verify-timeout", "5s")
    assert code == 4, err
    assert "Apply complete: 1 added, 0 changed, 0 removed." in err
    assert f"error: written, but not verified: cannot connect to the brokers at {proxy.address} within 5 s" in err
    assert "  what was written: cluster c1, plan " in err and ": 1 added, 0 changed, 0 removed\n" in err
    entry = broker_config(kafka, 1, "log.cleaner.backoff.ms")  # it was written: the brokers report it
    assert entry is not None and entry["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
