"""Corrupt or unexpectedly shaped live znodes, through the real command line: `apply` (which plans first)
and `plan` exit 1 naming the znode (chroot included), and nothing is written anywhere in the cluster: the
whole chroot tree, with every znode's data, version, mzxid and pzxid, is the same before and after.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.integration.reliability import cli, config_bytes, seed_topics, tree, write_repo

TOPICS = {f"t-{i:03d}": {"retention.ms": "1000"} for i in range(3)}
WANTED = {name: {"retention.ms": "2000"} for name in TOPICS}

pytestmark = pytest.mark.timeout(120)  # a safety net: each process inside has its own timeout


def registration(broker: int) -> bytes:
    return json.dumps({
        "version": 5, "host": f"b{broker}", "port": 9092, "endpoints": [f"PLAINTEXT://b{broker}:9092"],
        "jmx_port": -1, "timestamp": "0", "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "features": {},
    }).encode()


def seed_cluster(client: KazooClient) -> None:
    """A healthy ZooKeeper-mode cluster: brokers, a controller, topics, broker and quota configs."""
    seed_topics(client, TOPICS)
    for broker in (1, 2, 3):
        client.create(f"/brokers/ids/{broker}", registration(broker), makepath=True)
    client.create("/controller", b'{"version":2,"brokerid":1,"timestamp":"0","kraftControllerEpoch":-1}')
    client.create("/config/brokers/<default>", config_bytes({"log.cleaner.threads": "1"}), makepath=True)
    client.create("/config/users/alice", config_bytes({"request_percentage": "10"}), makepath=True)
    client.create("/config/clients/<default>", config_bytes({"producer_byte_rate": "1024"}), makepath=True)


def make_repo(root: Path, connect: str) -> Path:
    repo = write_repo(root, connect, topics=WANTED, broker_default={"log.cleaner.threads": "2"})
    (repo / "clusters" / "c1" / "quotas.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n"
        "  users: {alice: {request_percentage: 20}}\n  clients: {default: {producer_byte_rate: 2048}}\n",
        encoding="utf-8",
    )
    return repo


# (znode, corrupt data, what the error says after "znode <chroot><znode>: ")
CORRUPTIONS = [
    ("/config/topics/t-001", b'{"version":1,"config":{"retention.ms":"1', "corrupt JSON"),
    ("/config/topics/t-001", b'{"version":1,"config":["retention.ms"]}',
     "'config' is list [\"retention.ms\"], expected a JSON object"),
    ("/config/topics/t-001", b'{"version":1,"config":{"retention.ms":1000}}',
     "config 'retention.ms': Expected `String` value, received 1000"),
    ("/config/topics/t-001", b"[" * 500_000, "corrupt JSON (nested too deeply)"),
    ("/config/topics/t-001", b'{"version":1,"config":{"retention.ms":"\\ud800"}}',  # valid JSON, not text
     "corrupt JSON (a lone UTF-16 surrogate is not Unicode text)"),
    ("/config/brokers/<default>", b"[]", "data is list [], expected a JSON object"),
    ("/config/users/alice", b"null", "data is missing or null, expected a JSON object"),
    ("/brokers/ids/2", b'{"version":5,"host":"b2","port":9092,', "corrupt JSON"),
    ("/brokers/ids/2", b'{"version":4,"endpoints":"PLAINTEXT://b2:9092"}',
     "'endpoints' is str \"PLAINTEXT://b2:9092\", expected strings"),
    ("/brokers/ids/2", b"", "empty data where Kafka writes JSON"),
    ("/brokers/topics/t-002", b"not json at all", "corrupt JSON"),
    ("/brokers/topics/t-002", b'{"version":3,"partitions":{"0":"1,2"}}',
     "partition '0': str \"1,2\", expected [broker ids]"),
    ("/controller", b'{"version":2,"brokerid":', "corrupt JSON"),
    ("/controller", b'{"version":2,"brokerid":"1","timestamp":"0"}', "'brokerid' is str \"1\", expected an integer"),
]

ONCE_PER_KIND = {next(d for z, d, _ in CORRUPTIONS if z.split("/")[1:3] == kind.split("/")[1:3])
                 for kind, _, _ in CORRUPTIONS}


@pytest.mark.parametrize(("znode", "data", "error"), CORRUPTIONS,
                         ids=[f"{z.rsplit('/', 2)[-2]}-{i}" for i, (z, _, _) in enumerate(CORRUPTIONS)])
def test_corrupt_znode_stops_plan_and_apply_and_nothing_is_written(
    znode: str, data: bytes, error: str, zk_client: KazooClient, zk_connect: str, zk_chroot: str, tmp_path: Path
) -> None:
    seed_cluster(zk_client)
    repo = make_repo(tmp_path, zk_connect)
    zk_client.set(znode, data)
    before = tree(zk_client)
    # apply plans first; `plan` itself reads the same way (checked once per kind of znode, to save time)
    commands = [["apply", "--auto-approve"]] + ([["plan", "--detailed-exitcode"]] if data in ONCE_PER_KIND else [])
    for args in commands:
        run = cli(repo, *args, timeout=60, env={"RECONCILER_AUDIT_LOG": str(tmp_path / "audit.jsonl")})
        assert run.code == 1, run
        assert f"error: znode {zk_chroot}{znode}: {error}" in run.stderr, run
        assert "Traceback" not in run.stderr and run.stdout == "", run
    assert tree(zk_client) == before
    assert not (tmp_path / "audit.jsonl").exists()  # nothing was attempted, so there is nothing to audit


@pytest.mark.parametrize(("listing", "child", "error"), [
    ("/brokers/ids", "b-7", "broker id is not a number"),
    ("/config/users", "User:CN=bob", "entity name is not in Kafka's sanitised form"),
])
def test_unexpected_znode_names_are_refused(
    listing: str, child: str, error: str, zk_client: KazooClient, zk_connect: str, zk_chroot: str, tmp_path: Path
) -> None:
    seed_cluster(zk_client)
    repo = make_repo(tmp_path, zk_connect)
    zk_client.create(f"{listing}/{child}", registration(7) if listing == "/brokers/ids" else config_bytes({}))
    before = tree(zk_client)
    run = cli(repo, "apply", "--auto-approve", timeout=60)
    assert run.code == 1 and f"error: znode {zk_chroot}{listing}/{child}: {error}" in run.stderr, run
    assert tree(zk_client) == before


def test_controller_corrupted_after_planning_stops_apply_before_anything(
    zk_client: KazooClient, zk_connect: str, zk_chroot: str, tmp_path: Path
) -> None:
    """`apply plan.json` reads the controller again (the KRaft guard) before taking the lock."""
    seed_cluster(zk_client)
    repo = make_repo(tmp_path, zk_connect)
    plan_file = tmp_path / "plan.json"
    planned = cli(repo, "plan", "--out", str(plan_file), "--detailed-exitcode", timeout=60)
    assert planned.code == 2, planned
    zk_client.set("/controller", b"\x00garbage")
    before = tree(zk_client)
    run = cli(repo, "apply", str(plan_file), "--auto-approve", timeout=60)
    assert run.code == 1 and f"error: znode {zk_chroot}/controller: corrupt JSON" in run.stderr, run
    assert tree(zk_client) == before  # not even the lock or an audit entry


def test_the_same_cluster_healthy_applies_and_converges(
    zk_client: KazooClient, zk_connect: str, tmp_path: Path
) -> None:
    """The control case: without the corruption the same manifests apply, and a second plan is empty."""
    seed_cluster(zk_client)
    repo = make_repo(tmp_path, zk_connect)
    run = cli(repo, "apply", "--auto-approve", timeout=60)
    assert run.code == 0 and "applied plan" in run.stderr, run
    again = cli(repo, "plan", "--detailed-exitcode", timeout=60)
    assert again.code == 0, again
