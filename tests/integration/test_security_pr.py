"""Issue 12, finding 1 (and the PR-mode design): a pull request cannot choose where `plan --git-base` connects,
which credentials it sends, or which secrets it resolves; the operator's allow-list bounds every command.

Real git repositories, a real ZooKeeper, and logging TCP proxies in front of it: `attacker` stands for a host
the PR author controls (every byte it sees is recorded), `trusted` for the base branch's ZooKeeper address.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import git
import pytest
from kazoo.client import KazooClient

from reconciler.model import EntityRef, Secret
from reconciler.secrets.encoder import EncoderParams, encode
from reconciler.zk.layout import encode_entity_config, entity_path
from tests.conftest import ZkServer
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import ATTACKER_BAIT, ENCODER_SECRET, ZK_CREDENTIALS
from tests.tcpproxy import LoggingProxy, logging_proxy

PASSWORD_KEY = "listener.name.internal.ssl.key.password"


def cluster_yaml(name: str, connect: str, auth_env: str = "LK_ZK_AUTH", extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper:
            connect: "{connect}"
            auth: {{scheme: digest, credentials: {{env: {auth_env}}}}}
          passwordEncoder: {{secret: {{env: LK_ENCODER}}}}
          brokers: [1, 2, 3]
        """) + extra


def topics_yaml(retention: int) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Topics
        meta: {{}}
        spec:
          topics:
            orders: {{partitions: 3, replicationFactor: 3, config: {{retention.ms: {retention}}}}}
        """)


def broker_password_yaml(env: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {{broker: 1}}
        spec:
          config:
            {PASSWORD_KEY}: {{secret: {{env: {env}}}}}
        """)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI job's environment: the base's credentials, and secrets an attacker would love to exfiltrate."""
    monkeypatch.setenv("LK_ZK_AUTH", ZK_CREDENTIALS)
    monkeypatch.setenv("LK_ENCODER", ENCODER_SECRET)
    monkeypatch.setenv("LK_PR_BAIT", ATTACKER_BAIT)
    for name in ("RECONCILER_ZK_ALLOWED_HOSTS", "RECONCILER_ZK_ALLOWED_HOSTS_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def proxies(zk_server: ZkServer) -> Iterator[tuple[LoggingProxy, LoggingProxy]]:
    target = ("127.0.0.1", zk_server.port)
    with logging_proxy(target) as trusted, logging_proxy(target) as attacker:
        yield trusted, attacker


def base_repo(path: Path, connect: str, files: dict[str, str | None] | None = None) -> git.Repo:
    repo = make_repo(path)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", connect),
                               "clusters/a/topics.yaml": topics_yaml(86400000), **(files or {})})
    repo.git.checkout("-b", "feature")
    return repo


@pytest.mark.usefixtures("env")
def test_a_pr_that_points_the_cluster_at_its_host_gets_no_connection_and_no_secret(
    tmp_path: Path, zk_chroot: str, proxies: tuple[LoggingProxy, LoggingProxy], capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack of finding 1: connect -> the author's host, credentials -> the encoder secret's variable
    (or /proc/self/environ). The check reads the base's ZooKeeper with the base's credentials."""
    trusted, attacker = proxies
    root = tmp_path / "manifests"
    repo = base_repo(root, f"{trusted.address}{zk_chroot}")
    for credentials in ("{env: LK_ENCODER}", "{file: /proc/self/environ}"):
        evil = cluster_yaml("a", f"{attacker.address}{zk_chroot}").replace("{env: LK_ZK_AUTH}", credentials)
        commit(repo, "innocent retention change", {"clusters/a/cluster.yaml": evil,
                                                   "clusters/a/topics.yaml": topics_yaml(3600000)})
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
        assert code == 0, err
        assert attacker.connections == 0 and not attacker.sent  # not one byte to the PR's host
        assert trusted.connections >= 1 and trusted.saw(ZK_CREDENTIALS)  # the base's identity, on the base's host
        assert not trusted.saw(ENCODER_SECRET) and not trusted.saw("PATH=")
        assert "connection settings change: takes effect after merge; not used by this check" in out
        assert "spec.zookeeper.connect" in out and "spec.zookeeper.auth" in out
        assert "retention.ms" in out  # what the PR may change is planned
        assert ENCODER_SECRET not in out + err and attacker.address not in err


@pytest.mark.usefixtures("env")
def test_a_secret_reference_new_in_the_pr_is_not_resolved(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without PR mode, pointing a password at any environment variable is an oracle: `unchanged` would tell
    the author that variable equals the live password. Only the base's own references are resolved."""
    params = EncoderParams(Secret(ENCODER_SECRET))
    path = entity_path(EntityRef("brokers", "1"))
    zk_client.create(path, encode_entity_config({PASSWORD_KEY: encode(Secret(ATTACKER_BAIT), params)}),
                     makepath=True)
    root = tmp_path / "manifests"
    repo = base_repo(root, zk_connect, {"clusters/a/brokers.yaml": broker_password_yaml("LK_ZK_AUTH")})
    commit(repo, "use another variable", {"clusters/a/brokers.yaml": broker_password_yaml("LK_PR_BAIT")})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    assert password_states(out) == ["unknown"]  # equal, but the check does not say so: no oracle
    assert "secret reference is new in this pull request" in out
    # the very same reference as on main is resolved: equal to what is stored, so no change at all
    zk_client.set(path, encode_entity_config({PASSWORD_KEY: encode(Secret(ZK_CREDENTIALS), params)}))
    commit(repo, "back to the base's variable", {"clusters/a/brokers.yaml": broker_password_yaml("LK_ZK_AUTH"),
                                                 "clusters/a/topics.yaml": topics_yaml(3600000)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
    assert code == 0, err
    assert password_states(out) == [] and "retention.ms" in out


def password_states(plan_json: str) -> list[str]:
    return [c["redacted"] for p in json.loads(plan_json)["plans"] for e in p["entities"] for c in e["changes"]
            if c["key"] == PASSWORD_KEY]


@pytest.mark.usefixtures("env")
def test_a_cluster_new_in_the_pr_is_shown_without_connecting(
    tmp_path: Path, zk_chroot: str, proxies: tuple[LoggingProxy, LoggingProxy], capsys: pytest.CaptureFixture[str]
) -> None:
    trusted, attacker = proxies
    root = tmp_path / "manifests"
    repo = base_repo(root, f"{trusted.address}{zk_chroot}")
    evil = cluster_yaml("b", f"{attacker.address}/b", auth_env="LK_ENCODER")
    commit(repo, "new cluster", {"clusters/b/cluster.yaml": evil, "clusters/b/topics.yaml": topics_yaml(3600000)})
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "markdown")
    assert code == 0, err
    assert attacker.connections == 0 and trusted.connections == 0
    assert "new cluster in this pull request" in out and "orders" in out


@pytest.mark.usefixtures("env")
def test_the_operator_allow_list_stops_every_command_before_it_connects(
    tmp_path: Path, zk_server: ZkServer, zk_chroot: str, proxies: tuple[LoggingProxy, LoggingProxy],
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, attacker = proxies
    root = tmp_path / "manifests"
    repo = base_repo(root, f"{attacker.address}{zk_chroot}")
    repo.git.checkout("main")
    allow = tmp_path / "allowed-hosts"
    allow.write_text(f"# the production ensemble\n127.0.0.1:{zk_server.port}\n")
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS_FILE", str(allow))
    commands = [
        ["plan", "a"],
        ["apply", "a", "--auto-approve"],
        ["reconcile", "--once"],
        ["import", "x", "--zookeeper", f"{attacker.address}{zk_chroot}", "--out", str(tmp_path / "imp")],
    ]
    for command in commands:
        code, _out, err = invoke(capsys, "--repo", str(root), *command)
        assert code == 1, (command, err)
        assert "allow-list" in err, (command, err)
    assert attacker.connections == 0
    # the same host through its allowed address plans normally; the env variable works like the file
    monkeypatch.delenv("RECONCILER_ZK_ALLOWED_HOSTS_FILE")
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", f"localhost, 127.0.0.*:{zk_server.port}")
    commit(repo, "direct", {"clusters/a/cluster.yaml": cluster_yaml("a", f"127.0.0.1:{zk_server.port}{zk_chroot}")})
    code, _out, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 0, err
