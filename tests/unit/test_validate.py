"""Table-driven validation: every bad manifest fails with exit 1 and names file, line and key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reconciler.cli.main import run
from reconciler.errors import Diagnostic
from reconciler.manifests.validate import load_and_validate
from tests.unit.validation_cases import BASE, CASES, Case

MARK = "#<-"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleet"


def write_repo(root: Path, files: dict[str, str]) -> None:
    for rel, text in {**BASE, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(MARK, ""), encoding="utf-8")


def expected_place(c: Case) -> tuple[str, int]:
    for rel, text in c.files.items():
        for number, line in enumerate(text.splitlines(), start=1):
            if MARK in line:
                return rel, number
    assert c.line is not None, f"case {c.id} marks no line"
    return next(iter(c.files)), c.line


def errors(diags: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]


def test_base_repository_is_valid(tmp_path: Path) -> None:
    write_repo(tmp_path, {})
    _, states, diags = load_and_validate(tmp_path)
    assert errors(diags) == []
    assert set(states) == {"c1"}


def test_there_are_many_cases() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_bad_manifest(tmp_path: Path, c: Case, capsys: pytest.CaptureFixture[str]) -> None:
    write_repo(tmp_path, c.files)
    file, line = expected_place(c)
    _, _, diags = load_and_validate(tmp_path)
    found = errors(diags)
    assert found, f"{c.id}: no error reported"
    here = [d for d in found if d.source is not None and d.source.file == file and d.source.line == line]
    assert here, f"{c.id}: expected an error at {file}:{line}, got:\n" + "\n".join(d.render() for d in found)
    # the key named (None only where the YAML is too broken to have keys: syntax, non-string keys)
    assert any(d.key == c.key for d in here), f"{c.id}: key {c.key!r} not named:\n" + "\n".join(
        d.render() for d in here
    )
    assert any(c.phrase.lower() in d.message.lower() for d in here), f"{c.id}: no message with {c.phrase!r}:\n" + (
        "\n".join(d.render() for d in here)
    )
    # the command line agrees: exit 1 and the diagnostic on stderr as FILE:LINE:COL: error: ...
    assert run(["--repo", str(tmp_path), "validate"]) == 1
    err = capsys.readouterr().err
    assert f"{file}:{line}:" in err


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    bad = {
        "clusters/c1/a.yaml": CASES[0].files[next(iter(CASES[0].files))].replace(MARK, ""),
        "clusters/c1/b.yaml": next(c for c in CASES if c.id == "broker-topic-key").files["clusters/c1/case.yaml"],
        "clusters/c1/d.yaml": next(c for c in CASES if c.id == "quota-unknown").files["clusters/c1/case.yaml"],
    }
    write_repo(tmp_path, bad)
    _, _, diags = load_and_validate(tmp_path)
    files = {d.source.file for d in errors(diags) if d.source}
    assert {"clusters/c1/a.yaml", "clusters/c1/b.yaml", "clusters/c1/d.yaml"} <= files


def test_examples_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--repo", str(EXAMPLES), "validate"]) == 0
    assert "valid: 3 cluster(s)" in capsys.readouterr().err


def test_github_and_json_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = next(c for c in CASES if c.id == "broker-topic-key")
    write_repo(tmp_path, c.files)
    assert run(["--repo", str(tmp_path), "validate", "--format", "github"]) == 1
    err = capsys.readouterr().err
    assert "::error file=clusters/c1/case.yaml,line=6," in err
    assert run(["--repo", str(tmp_path), "validate", "--format", "json"]) == 1
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["valid"] is False
    assert any(d["key"] == "retention.ms" and d["line"] == 6 for d in report["diagnostics"])


VALID_EDGE_CASES = {
    "quoted-numbers": "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
    '    orders: {partitions: 3, config: {retention.ms: "86400000", max.message.bytes: "1048588"}}\n',
    "booleans-and-lists": "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n"
    "  config:\n    unclean.leader.election.enable: FALSE\n    log.cleanup.policy: [compact, delete]\n"
    "    log.message.downconversion.enable: true\n",
    "list-as-string": "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
    '    orders: {config: {cleanup.policy: "compact, delete"}}\n',
    "unicode-names": "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n  users:\n"
    '    "CN=Jürgen Müller,O=Bäckerei": {request_percentage: 12.5}\n  userClients:\n'
    '    "CN=Jürgen Müller,O=Bäckerei": {"app-✓": {producer_byte_rate: 1024}}\n',
    "quota-numeric-string": "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n"
    '  clients: {default: {producer_byte_rate: "1048576"}}\n  ips: {"10.1.2.3": {connection_creation_rate: 10}}\n',
    "broker-with-quota-keys": "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: \"2\"}\nspec:\n"
    "  config:\n    follower.replication.throttled.rate: 10485760\n    log.cleaner.threads: 2\n",
    "crlf-line-endings": "apiVersion: reconciler/v1\r\nkind: Topics\r\nmeta: {}\r\nspec:\r\n  topics:\r\n"
    "    crlf.topic: {partitions: 2}\r\n",
}


@pytest.mark.parametrize("name", sorted(VALID_EDGE_CASES))
def test_valid_edge_cases(tmp_path: Path, name: str) -> None:
    write_repo(tmp_path, {f"clusters/c1/{name}.yaml": VALID_EDGE_CASES[name]})
    _, states, diags = load_and_validate(tmp_path)
    assert errors(diags) == [], "\n".join(d.render() for d in diags)
    assert "c1" in states


def test_null_removes_inherited_key(tmp_path: Path) -> None:
    fleet = (
        "apiVersion: reconciler/v1\nkind: FleetDefaults\nmeta: {name: all}\nspec:\n  selector: {labels: {env: prod}}\n"
        "  brokerDefaults: {num.io.threads: 16, log.cleaner.threads: 2}\n"
        "  topicDefaults: {replicationFactor: 3, config: {min.insync.replicas: 2}}\n"
    )
    own = (
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n"
        "  config: {log.cleaner.threads: null, background.threads: 12}\n---\n"
        "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
        "    a: {partitions: 1}\n    b: {partitions: 1, config: {min.insync.replicas: null}}\n"
    )
    write_repo(tmp_path, {"clusters/fleet.yaml": fleet, "clusters/c1/own.yaml": own})
    _, states, diags = load_and_validate(tmp_path)
    assert errors(diags) == []
    state = states["c1"]
    default = next(e for r, e in state.entities.items() if r.display == "brokers/<default>")
    assert {k: v.value for k, v in default.config.items()} == {"num.io.threads": "16", "background.threads": "12"}
    assert state.topics["a"].config["min.insync.replicas"].value == "2"
    assert "min.insync.replicas" not in state.topics["b"].config
    assert state.topics["a"].replication_factor == 3


def test_examples_copy_is_self_contained(tmp_path: Path) -> None:
    """The examples validate from any location (no reference outside their own directory)."""
    shutil.copytree(EXAMPLES, tmp_path / "fleet")
    _, states, diags = load_and_validate(tmp_path / "fleet")
    assert errors(diags) == []
    assert set(states) == {"prod-eu-1", "prod-us-1", "staging-eu-1"}
