"""The README's first-cluster commands, run as written (the addresses of clusters/local-dev pointed at the
test's real brokers), with "yes" typed on a terminal for apply."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.brokerrepo import broker_config, hand_over, topic_config
from tests.kafkabrokers import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("**Your own.**"):]
    block = section[section.index("```bash\n") + 8:]
    block = block[:block.index("```")]
    commands = [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]
    # as the set-up leaves it: the command is in .venv/bin, not on PATH (issue 39 item 12)
    assert [c[:2] for c in commands] == [[".venv/bin/reconciler", "validate"], [".venv/bin/reconciler", "plan"],
                                         [".venv/bin/reconciler", "show"], [".venv/bin/reconciler", "apply"],
                                         [".venv/bin/reconciler", "describe"]]
    assert (REPO / commands[0][0]).is_file(), "scripts/bootstrap.sh installs the command the README calls"
    return commands


def run_on_terminal(argv: list[str], cwd: Path, answer: str) -> tuple[int, str]:
    """Run with stdin, stdout and stderr on a pseudo-terminal; type `answer` at the prompt."""
    master, slave = pty.openpty()
    env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm", "RECONCILER_AUDIT_LOG": str(cwd / "audit.jsonl")}
    proc = subprocess.Popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    answered = False
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not answered and b"Only 'yes' is accepted" in out:
            os.write(master, answer.encode() + b"\n")
            answered = True
    os.close(master)
    return proc.wait(timeout=60), out.decode("utf-8", "replace")


def test_the_readme_first_cluster_commands_run_as_written(kafka: KafkaCluster, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "clusters" / "local-dev", root / "clusters" / "local-dev")
    cluster = root / "clusters" / "local-dev" / "cluster.yaml"
    text = cluster.read_text()
    text = text.replace("127.0.0.1:2181/kafka/local-dev", kafka.zk_connect)
    text = re.sub(r'bootstrapServers: "[^"]*"', f'bootstrapServers: "{kafka.bootstrap}"', text)
    cluster.write_text(text)
    hand_over(kafka, "local-dev")  # the shared brokers' other tests apply as c1
    try:
        for command in readme_commands():
            argv = [str(REPO / command[0]), "--repo", str(root), *command[1:]]  # the command the set-up installed
            if command[1] == "apply":
                code, out = run_on_terminal(argv, tmp_path, "yes")
                assert code == 0, out
                assert "Apply complete:" in out and "local-dev: verified: every broker took every change" in out
            else:
                result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                        env={**os.environ, "RECONCILER_AUDIT_LOG": str(tmp_path / "audit.jsonl")})
                assert result.returncode == 0, result.stderr
    finally:
        hand_over(kafka, "c1")
    # the brokers' own word on what the README's cluster declares
    entry = broker_config(kafka, 1, "log.retention.ms")
    assert entry is not None and (entry["value"], entry["config_source"]) == (
        "1209600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    topic = topic_config(kafka, "events", "retention.ms")
    assert topic is not None and topic["value"] == "86400000"


def test_an_empty_chroot_is_named_in_plan_and_apply(
    zk_server: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first-cluster path against a ZooKeeper where no broker ever started: plan warns that no broker is
    registered, apply names the missing chroot (it was a bare NoNodeError) and writes nothing."""
    from reconciler.cli.main import run

    connect = f"{zk_server.connect}/kafka/never-started"  # type: ignore[attr-defined]
    root = tmp_path / "repo"
    shutil.copytree(REPO / "clusters" / "local-dev", root / "clusters" / "local-dev")
    cluster = root / "clusters" / "local-dev" / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace("127.0.0.1:2181/kafka/local-dev", connect))
    plan_path = tmp_path / "plan.json"
    assert run(["--repo", str(root), "plan", "local-dev", "--out", str(plan_path)]) == 0
    err = capsys.readouterr().err
    assert "warning: no broker is registered in " + connect + "/brokers/ids" in err
    assert run(["--repo", str(root), "apply", str(plan_path), "--auto-approve",
                "--audit-log", str(tmp_path / "a.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "the chroot /kafka/never-started does not exist in ZooKeeper" in err
    assert not (tmp_path / "a.jsonl").exists()  # refused before the lock: nothing written, nothing audited
