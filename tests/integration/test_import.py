"""`reconciler import` against a real ZooKeeper: every example cluster (examples/fleet) is applied to its own
chroot, imported back, and a plan on the import shows no changes, both into an empty repository and into one
whose FleetDefaults the imported cluster inherits. Also: the shape of what is written (listeners compiled
back, passwords sealed, tidy values) and the refusals.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kazoo.client import KazooClient

from reconciler.manifests.validate import load_and_validate
from reconciler.model import BrokerRegistration, frozen_map
from reconciler.zk.layout import encode_broker_registration
from tests.conftest import REPO, ZkServer
from tests.integration.test_gitops import invoke

EXAMPLES = REPO / "examples" / "fleet"
CLUSTERS = sorted(p.name for p in (EXAMPLES / "clusters").iterdir() if p.is_dir())
SECRETS = {
    "PROD_EU_1_ENCODER_SECRET": "prod-eu-1-encoder-secret",
    "PROD_EU_1_EXTERNAL_JAAS": 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    "PROD_EU_1_EXTERNAL_KEYSTORE_PASSWORD": "keystore-pw",
}


@pytest.fixture(scope="module")
def applied(zk_server: ZkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The example fleet applied to this module's ZooKeeper (one chroot per cluster, brokers registered
    as the demo's simulation does), in a copy whose connect strings point there."""
    chroot = f"/import-{uuid.uuid4().hex[:8]}"
    fleet = tmp_path_factory.mktemp("examples") / "fleet"
    shutil.copytree(EXAMPLES, fleet)
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    connects: dict[str, str] = {}
    try:
        _, states, _ = load_and_validate(EXAMPLES)
        for name in CLUSTERS:
            path = fleet / "clusters" / name / "cluster.yaml"
            old = states[name].cluster.zookeeper.connect
            connects[name] = f"{zk_server.connect}{chroot}{states[name].cluster.zookeeper.chroot}"
            path.write_text(path.read_text().replace(old, connects[name]))
            register_brokers(client, f"{connects[name].split('/', 1)[1]}", states[name])
        with pytest.MonkeyPatch.context() as mp:
            for key, value in SECRETS.items():
                mp.setenv(key, value)
            capsys = _NoCapture()
            code = _run("--repo", str(fleet), "apply", "--auto-approve", "--allow-destructive",
                        "--audit-log", str(fleet.parent / "audit.jsonl"))
            assert code == 0, capsys
            yield {"fleet": fleet, "connects": connects, "states": states}
    finally:
        client.stop()
        client.close()


class _NoCapture:
    def __repr__(self) -> str:
        return "apply of the examples failed (see the captured stderr)"


def _run(*args: str) -> int:
    from reconciler.cli.main import run

    return run(list(args))


def register_brokers(client: KazooClient, chroot: str, state: Any) -> None:
    """What running brokers would register (persistent here), as scripts/simulate_brokers.py does."""
    for broker in state.cluster.brokers:
        declared = state.listeners.brokers.get(broker) if state.listeners else None
        if declared is not None:
            endpoints = declared.advertised or declared.listeners
            protocols = dict(state.listeners.security_protocol_map)
        else:
            endpoints, protocols = (f"PLAINTEXT://b{broker}:9092",), {"PLAINTEXT": "PLAINTEXT"}
        reg = BrokerRegistration(broker, tuple(endpoints), frozen_map(protocols), f"rack-{broker % 3}")
        client.create(f"/{chroot}/brokers/ids/{broker}", encode_broker_registration(reg), makepath=True)


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)


def test_every_example_cluster_is_covered() -> None:
    assert CLUSTERS == ["prod-eu-1", "prod-us-1", "staging-eu-1"]


def import_and_plan(capsys: pytest.CaptureFixture[str], applied: dict[str, Any], name: str, out: Path,
                    *extra: str) -> str:
    version = applied["states"][name].cluster.kafka_version
    code, stdout, err = invoke(capsys, "import", name, "--zookeeper", applied["connects"][name], "--out", str(out),
                               "--kafka-version", version, *extra)
    assert code == 0, err
    assert stdout == ""
    assert "checked: a plan on the imported manifests shows no changes" in err
    code, stdout, err = invoke(capsys, "--repo", str(out), "plan", name, "--detailed-exitcode")
    assert code == 0, err + stdout
    return stdout


@pytest.mark.parametrize("name", CLUSTERS)
def test_import_then_plan_shows_no_changes(
    applied: dict[str, Any], name: str, tmp_path: Path, secrets: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = import_and_plan(capsys, applied, name, tmp_path / "adopted")
    assert "no changes" in out.lower()


@pytest.mark.parametrize("name", CLUSTERS)
def test_import_into_a_repository_whose_fleet_defaults_apply(
    applied: dict[str, Any], name: str, tmp_path: Path, secrets: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The examples' fleet.yaml sets keys some clusters do not have live: the import neutralises them."""
    out = tmp_path / "repo"
    (out / "clusters").mkdir(parents=True)
    shutil.copy(EXAMPLES / "clusters" / "fleet.yaml", out / "clusters" / "fleet.yaml")
    labels = [f"--label={k}={v}" for k, v in applied["states"][name].cluster.labels.items()]
    import_and_plan(capsys, applied, name, out, *labels)


def test_what_an_import_looks_like(applied: dict[str, Any], tmp_path: Path, secrets: None,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import_and_plan(capsys, applied, "prod-eu-1", tmp_path)
    directory = tmp_path / "clusters" / "prod-eu-1"
    assert sorted(p.name for p in directory.iterdir()) == [
        "brokers.yaml", "cluster.yaml", "listeners.yaml", "quotas.yaml", "topics.yaml"]
    cluster = yaml.safe_load((directory / "cluster.yaml").read_text())
    assert cluster["spec"]["brokers"] == [1, 2, 3]
    assert cluster["spec"]["passwordEncoder"] == {"secret": {"env": "PROD_EU_1_ENCODER_SECRET"}}
    listeners = yaml.safe_load((directory / "listeners.yaml").read_text())["spec"]
    assert listeners["securityProtocolMap"] == {"INTERNAL": "PLAINTEXT", "REPLICATION": "SSL", "EXTERNAL": "SASL_SSL"}
    assert listeners["brokers"]["2"]["listeners"] == ["INTERNAL://:9092", "REPLICATION://:9093", "EXTERNAL://:9094"]
    external = listeners["listenerConfigs"]["EXTERNAL"]
    assert external["ssl.keystore.location"] == "/etc/kafka/ssl/external.keystore.jks"
    # equal plaintexts (the encoder secret was available) -> one sealed value for every broker
    assert set(external["ssl.keystore.password"]) == {"encoded"}
    assert external["ssl.keystore.password"]["encoded"].startswith("encryptedPassword:") \
        or "encryptedPassword" in external["ssl.keystore.password"]["encoded"]
    brokers = yaml.safe_load_all((directory / "brokers.yaml").read_text())
    default = next(d for d in brokers if d["meta"]["broker"] == "default")["spec"]["config"]
    assert default["num.io.threads"] == 16 and default["unclean.leader.election.enable"] is False
    topics = yaml.safe_load((directory / "topics.yaml").read_text())["spec"]
    assert topics["defaults"] == {"replicationFactor": 3, "config": {"compression.type": "lz4"}}
    assert topics["topics"]["payments.ledger"] == {
        "partitions": 6, "config": {"cleanup.policy": "compact", "min.compaction.lag.ms": 3600000,
                                    "min.insync.replicas": 2}}
    quotas = yaml.safe_load((directory / "quotas.yaml").read_text())["spec"]
    assert quotas["userClients"] == {"CN=alice smith": {"reporting-app": {"consumer_byte_rate": 8388608}}}
    assert quotas["clients"]["default"] == {"consumer_byte_rate": 2097152, "producer_byte_rate": 1048576}
    assert (directory / "cluster.yaml").read_text().startswith("# Imported from the live cluster")


def test_without_the_encoder_secret_passwords_stay_per_broker(
    applied: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROD_EU_1_ENCODER_SECRET", raising=False)
    code, _, err = invoke(capsys, "import", "prod-eu-1", "--zookeeper", applied["connects"]["prod-eu-1"],
                          "--out", str(tmp_path), "--kafka-version", "3.6")
    assert code == 0, err
    # the imported {encoded: …} values are the very values stored, so they compare clean without the secret
    assert "could not be compared" not in err and "shows no changes" in err
    directory = tmp_path / "clusters" / "prod-eu-1"
    external = yaml.safe_load((directory / "listeners.yaml").read_text())["spec"]["listenerConfigs"]["EXTERNAL"]
    assert "ssl.keystore.password" not in external
    per_broker = [d for d in yaml.safe_load_all((directory / "brokers.yaml").read_text())
                  if d["meta"]["broker"] != "default"]
    assert {d["meta"]["broker"] for d in per_broker} == {1, 2, 3}
    assert all("encoded" in d["spec"]["config"]["listener.name.external.ssl.keystore.password"] for d in per_broker)


def test_an_existing_directory_is_not_overwritten(applied: dict[str, Any], tmp_path: Path, secrets: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import_and_plan(capsys, applied, "prod-us-1", tmp_path)
    code, _, err = invoke(capsys, "import", "prod-us-1", "--zookeeper", applied["connects"]["prod-us-1"],
                          "--out", str(tmp_path), "--kafka-version", "3.4")
    assert code == 1 and "already exists and is not empty" in err and "--force" in err
    code, _, err = invoke(capsys, "import", "prod-us-1", "--zookeeper", applied["connects"]["prod-us-1"],
                          "--out", str(tmp_path), "--kafka-version", "3.4", "--force")
    assert code == 0, err


def test_an_empty_chroot_is_no_cluster(zk_connect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(capsys, "import", "x", "--zookeeper", zk_connect, "--out", str(tmp_path))
    assert code == 1 and "holds no Kafka cluster" in err
