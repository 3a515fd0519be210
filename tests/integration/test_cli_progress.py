"""What a newcomer sees on stderr: one line per phase off a terminal, one line for an unreachable ZooKeeper
(not kazoo's reconnect warnings), every missing secret at once with its entity and manifest line, and
apply's Terraform-style last line. Real processes where the terminal matters, a real ZooKeeper."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from reconciler.cli.main import run
from tests.conftest import free_port
from tests.leakcheck import ENCODER_SECRET

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: %s}
spec:
  kafkaVersion: "3.6"
  zookeeper:
    connect: "%s"
  brokers: [1, 2]
"""
ENCODER = """  passwordEncoder:
    secret: {env: LKT_ENCODER_SECRET}
"""
BROKERS = """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: 1}
spec:
  config:
    listener.name.internal.ssl.key.password: {secret: {env: LKT_B1_KEY_PASSWORD}}
---
apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: 2}
spec:
  config:
    listener.name.internal.ssl.key.password: {secret: {env: LKT_B2_KEY_PASSWORD}}
    num.io.threads: 9
"""
SECRET_ENVS = ("LKT_ENCODER_SECRET", "LKT_B1_KEY_PASSWORD", "LKT_B2_KEY_PASSWORD")


def make_repo(root: Path, connects: dict[str, str], brokers: str = "") -> Path:
    for name, connect in connects.items():
        directory = root / "clusters" / name
        directory.mkdir(parents=True)
        (directory / "cluster.yaml").write_text(CLUSTER % (name, connect) + (ENCODER if brokers else ""))
        if brokers:
            (directory / "brokers.yaml").write_text(brokers)
    return root


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command in a process of its own: stderr is a pipe, as in CI."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", *SECRET_ENVS)}
    return subprocess.run([sys.executable, "-m", "reconciler", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_progress_off_a_terminal_is_one_line_per_phase(tmp_path: Path, zk_connect: str) -> None:
    repo = make_repo(tmp_path, {"a": f"{zk_connect}/a", "b": f"{zk_connect}/b"})
    done = cli("plan", "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    phases = [line for line in done.stderr.splitlines() if not re.search(r": (warning|error): ", line)]
    assert [re.sub(r" \(\d+\.\d s\)$", "", line) for line in phases] == [
        f"[1/2] a: read ZooKeeper {zk_connect}/a: 0 config znodes, 0 topics, 0 brokers",
        "[1/2] a: plan: no changes",
        f"[2/2] b: read ZooKeeper {zk_connect}/b: 0 config znodes, 0 topics, 0 brokers",
        "[2/2] b: plan: no changes",
    ]
    assert "\x1b[" not in done.stderr + done.stdout  # no bar, no colour into a pipe
    assert done.stdout.endswith("No changes. Live configuration matches the manifests.\n")


def test_unreachable_zookeeper_is_one_line_naming_connect_string_and_manifest(tmp_path: Path) -> None:
    connect = f"127.0.0.1:{free_port()}/kafka"  # nothing listens there
    repo = make_repo(tmp_path, {"a": connect})
    done = cli("plan", "a", "--repo", str(repo))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    # a notice while it waits, one error naming the connect string and its manifest line, then only what to
    # check: not a dozen kazoo "Connection dropped" warnings
    assert lines[0].startswith("a: connecting to ZooKeeper ") and connect in lines[0], done.stderr
    assert lines[1].startswith("error: ") and connect in lines[1] and "clusters/a/cluster.yaml:7" in lines[1]
    assert lines[2:] and all(line.startswith("  check: ") for line in lines[2:]), done.stderr


def test_missing_secrets_are_reported_together_at_plan_time(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SECRET_ENVS:
        monkeypatch.delenv(name, raising=False)
    repo = make_repo(tmp_path, {"c1": zk_connect}, BROKERS)
    assert run(["plan", "--repo", str(repo)]) == 0
    err = capsys.readouterr().err
    reported = [line for line in err.splitlines() if "is not set" in line]
    assert reported == [
        "clusters/c1/cluster.yaml:10:5: warning: cluster c1: passwordEncoder.secret: environment variable "
        "LKT_ENCODER_SECRET is not set (secret from env LKT_ENCODER_SECRET); passwords cannot be compared "
        "(shown as unknown) nor applied [spec.passwordEncoder.secret]",
        "clusters/c1/brokers.yaml:6:5: warning: brokers/1: environment variable LKT_B1_KEY_PASSWORD is not set "
        "(secret from env LKT_B1_KEY_PASSWORD); the plan shows it as unknown and apply will refuse it "
        "[listener.name.internal.ssl.key.password]",
        "clusters/c1/brokers.yaml:13:5: warning: brokers/2: environment variable LKT_B2_KEY_PASSWORD is not set "
        "(secret from env LKT_B2_KEY_PASSWORD); the plan shows it as unknown and apply will refuse it "
        "[listener.name.internal.ssl.key.password]",
    ]
    # apply refuses before it writes anything, naming every password it could not write
    monkeypatch.setenv("LKT_ENCODER_SECRET", ENCODER_SECRET)
    assert run(["apply", "c1", "--repo", str(repo), "--auto-approve", "--allow-dirty",
                "--audit-log", str(tmp_path / "audit.jsonl")]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert [line.split(": error: ")[0] for line in errors] == ["clusters/c1/brokers.yaml:6:5",
                                                               "clusters/c1/brokers.yaml:13:5"]
    assert "nothing was written" in err
    assert zk_client.exists("/config/brokers/2") is None


def test_apply_ends_with_terraform_counts(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LKT_ENCODER_SECRET", ENCODER_SECRET)
    repo = make_repo(tmp_path, {"c1": zk_connect}, BROKERS.split("---")[1].replace(
        "    listener.name.internal.ssl.key.password: {secret: {env: LKT_B2_KEY_PASSWORD}}\n", ""))
    args = ["apply", "c1", "--repo", str(repo), "--auto-approve", "--allow-dirty", "--audit-log",
            str(tmp_path / "audit.jsonl")]
    assert run(args) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "Apply complete: 1 added, 0 changed, 0 removed."
    assert run(args) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "Apply complete: 0 added, 0 changed, 0 removed."
