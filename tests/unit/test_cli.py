"""The command line without a ZooKeeper: --version, help in workflow order with exit codes and examples,
global options after the command, `show`, and describe's entity syntax."""

from __future__ import annotations

import logging
import re
from importlib.metadata import version as package_version
from pathlib import Path

import pytest

from reconciler.cli.describe import parse_entity
from reconciler.cli.help import ORDER
from reconciler.cli.main import main, run
from reconciler.errors import ReconcilerError
from reconciler.model import DEFAULT_ENTITY, EntityRef
from reconciler.render.json import render_json, render_plan_file
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text
from tests.unit.test_render import sample_plans

CLUSTER = """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:1/c1"}
  brokers: [1]
"""
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def repo(root: Path, topics: str = "") -> Path:
    (root / "clusters" / "c1").mkdir(parents=True)
    (root / "clusters" / "c1" / "cluster.yaml").write_text(CLUSTER)
    if topics:
        (root / "clusters" / "c1" / "topics.yaml").write_text(topics)
    return root


@pytest.mark.parametrize("args", [["--version"], ["version"]])
def test_version_names_the_tool_and_the_kafka_versions(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"kafka-reconciler {package_version('kafka-reconciler')}"
    known = re.search(r"Kafka versions \(spec.kafkaVersion\): (.*)", out)
    assert known is not None
    releases = known.group(1).split(", ")
    assert releases[0] == "2.0" and releases[-1] == "4.1" and {"2.8", "3.0", "3.9"} <= set(releases)
    assert "4.0" in releases and "4.x clusters are KRaft clusters" in out  # 4.x: KRaft (spec.kraft), no ZooKeeper
    assert "4.1 (Kafka 4.1.1's ConfigDefs)" in out and "3.9 (Kafka 3.9.1's ConfigDefs)" in out  # one catalog per line


def test_help_lists_commands_in_workflow_order_with_whole_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("Commands:"):out.index("The global options")]
    names = re.findall(r"^  ([\w-]+)\s", section, flags=re.MULTILINE)
    assert tuple(names) == ORDER
    flat = " ".join(section.split())
    for name in ORDER:
        command = main.commands[name]
        assert command.help is not None
        assert " ".join(command.help.splitlines()[0].split()) in flat  # whole, however it wraps


@pytest.mark.parametrize("name", ORDER)
def test_every_command_help_shows_exit_codes_and_an_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit codes:" in out and re.search(r"^    0  ", out, flags=re.MULTILINE)
    example = out[out.index("Example:"):].splitlines()[1].strip()
    assert example.startswith(("reconciler ", "printf ")) and "reconciler" in example


def test_global_options_work_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = repo(tmp_path / "bad", topics="apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec: {topics: "
                                         "{orders: {partitions: 0}}}\n")
    good = repo(tmp_path / "good")
    assert run(["--repo", str(bad), "validate"]) == 1
    before = capsys.readouterr().err
    assert run(["validate", "--repo", str(bad)]) == 1
    assert capsys.readouterr().err == before  # same result, same report
    assert "clusters/c1/topics.yaml" in before
    assert run(["--repo", str(bad), "validate", "--repo", str(good)]) == 0  # the later one wins
    assert "valid: 1 cluster(s)" in capsys.readouterr().err
    assert run(["validate", "--repo", str(good), "-v"]) == 0
    assert logging.getLogger().level == logging.INFO
    assert logging.getLogger("kazoo").level == logging.NOTSET  # with -v, kazoo's reconnect warnings show
    assert run(["-v", "validate", "--repo", str(good), "-v"]) == 0  # -v before and after add up
    assert logging.getLogger().level == logging.DEBUG
    assert run(["validate", "--repo", str(good)]) == 0
    assert logging.getLogger().level == logging.WARNING
    assert logging.getLogger("kazoo").level == logging.CRITICAL  # silenced: errors say it in one line


def test_show_renders_a_plan_file_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    plans = sample_plans()
    path = tmp_path / "plan.json"
    path.write_text(render_plan_file(plans))
    assert run(["show", str(path)]) == 0
    assert capsys.readouterr().out == render_text(plans)
    assert run(["show", str(path), "--format", "markdown"]) == 0
    assert capsys.readouterr().out == render_markdown(plans)
    assert run(["show", str(path), "--format", "json"]) == 0
    assert capsys.readouterr().out == render_json(plans)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert run(["show", str(path)]) == 0
    coloured = capsys.readouterr().out
    assert "\x1b[1;31m" in coloured and ANSI.sub("", coloured) == render_text(plans)
    assert run(["show", str(path), "--no-color"]) == 0  # the global option, after the command
    assert "\x1b[" not in capsys.readouterr().out


def test_show_refuses_an_edited_or_missing_plan_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plan.json"
    path.write_text(render_plan_file(sample_plans()).replace('"86400000"', '"1"', 1))
    assert run(["show", str(path)]) == 1
    captured = capsys.readouterr()
    assert "edited after planning" in captured.err and captured.out == ""
    assert run(["show", str(tmp_path / "absent.json")]) == 1
    assert "cannot read plan file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("topics/orders", EntityRef("topics", "orders")),
        ("topic/orders", EntityRef("topics", "orders")),
        ("brokers/1", EntityRef("brokers", "1")),
        ("brokers/<default>", EntityRef("brokers", DEFAULT_ENTITY)),
        ("brokers/default", EntityRef("brokers", DEFAULT_ENTITY)),
        ("users/alice/clients/app-1", EntityRef("users", "alice", "app-1")),
        ("users/CN=a/b", EntityRef("users", "CN=a/b")),
        ("clients/<default>", EntityRef("clients", DEFAULT_ENTITY)),
        ("ips/10.0.0.1", EntityRef("ips", "10.0.0.1")),
    ],
)
def test_describe_entity_syntax(text: str, ref: EntityRef) -> None:
    assert parse_entity(text) == ref


@pytest.mark.parametrize("text", ["orders", "topics/", "widgets/x", "brokers/one"])
def test_describe_rejects_a_malformed_entity(text: str) -> None:
    with pytest.raises(ReconcilerError, match="entity"):
        parse_entity(text)
