"""Policy regular expressions as a pull request writes them (issue 38, findings 15 and 17): RE2 over the whole
name, `validate` run as the user runs it (the CLI, a repository on disk), messages compared whole."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from reconciler.cli.main import run
from reconciler.policy.patterns import full_match, pattern_problem

CLUSTER = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: a}
spec:
  kafkaVersion: "3.9"
  zookeeper: {connect: "127.0.0.1:1/a"}
  brokers: [1]
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"clusters/a/cluster.yaml": CLUSTER, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def validate(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run(["--repo", str(root), "--no-color", "validate"])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_newline_in_a_name_does_not_escape_the_selector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Finding 15: `mallory.*` selects the user `mallory\\nx` (Python's `.` stopped at the newline: rc 0, no
    error, and mallory's second account ran unthrottled)."""
    root = write(tmp_path, {
        "clusters/a/quotas.yaml": """\
            apiVersion: reconciler/v1
            kind: Quotas
            meta: {}
            spec:
              users:
                "mallory\\nx": {producer_byte_rate: 104857600}
                alice: {producer_byte_rate: 104857600}
            """,
        "clusters/policies.yaml": """\
            apiVersion: reconciler/v1
            kind: Policy
            meta: {name: untrusted}
            spec:
              selector: {kinds: [users], names: ['mallory.*']}
              rules:
                - {id: rate-cap, key: producer_byte_rate, max: 1 MiB, message: mallory's accounts stay throttled}
            """})
    assert validate(root, capsys) == (1, (
        "clusters/a/quotas.yaml:6:1: error: policy untrusted, rule rate-cap (clusters/policies.yaml:7): cluster a: "
        "users/mallory\\nx: producer_byte_rate is 104857600 (100 MiB/s) (from clusters/a/quotas.yaml:6), not at "
        "most 1 MiB: mallory's accounts stay throttled [policy:untrusted/rate-cap]\n"
        "invalid: 1 error(s), 0 warning(s)\n"))


def test_full_match_over_the_whole_name() -> None:
    assert full_match("mallory", "mallory") and not full_match("mallory", "mallory\n")
    assert not full_match("mallory", "mallory\nx") and full_match("mallory.*", "mallory\nx")
    assert not full_match("[a-z]+", "orders\nOrders") and not full_match("orders$", "orders\n")


@pytest.mark.timeout(60)
def test_a_catastrophic_pattern_runs_in_linear_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Finding 17: `(a+)+b` against a 40-character topic name took Python's backtracking `re` 2^40 steps (the
    check never finished); RE2 answers at once."""
    name = "a" * 40
    root = write(tmp_path, {
        "clusters/a/topics.yaml": f"""\
            apiVersion: reconciler/v1
            kind: Topics
            meta: {{}}
            spec:
              topics:
                {name}: {{partitions: 1, replicationFactor: 1}}
            """,
        "clusters/policies.yaml": """\
            apiVersion: reconciler/v1
            kind: Policy
            meta: {name: slow}
            spec:
              selector: {names: ['(a+)+b']}
              rules:
                - {id: names, namePattern: '(x+x+)+y', message: m}
            """})
    started = time.monotonic()
    assert validate(root, capsys) == (0, "valid: 1 cluster(s), 0 warning(s)\n")
    assert time.monotonic() - started < 10


def test_patterns_re2_cannot_match_in_linear_time_are_refused_at_their_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write(tmp_path, {"clusters/policies.yaml": r"""
        apiVersion: reconciler/v1
        kind: Policy
        meta: {name: p}
        spec:
          selector: {names: ['(?!_).*', '[a-']}
          rules:
            - {id: twice, namePattern: '(\w)\1', message: m}
        """})
    code, out = validate(root, capsys)
    assert (code, out) == (1, (
        "clusters/policies.yaml:6:22: error: regular expression (?!_).*: not supported: invalid perl operator: (?! "
        "(RE2 syntax: no look-around such as (?!…) and no back-references such as \\1; patterns are matched in "
        "linear time) [names]\n"
        "clusters/policies.yaml:6:33: error: regular expression [a-: not supported: missing ]: [a- (RE2 syntax: no "
        "look-around such as (?!…) and no back-references such as \\1; patterns are matched in linear time) "
        "[names]\n"
        "clusters/policies.yaml:8:19: error: regular expression (\\w)\\1: not supported: invalid escape sequence: "
        "\\1 (RE2 syntax: no look-around such as (?!…) and no back-references such as \\1; patterns are matched in "
        "linear time) [namePattern]\n"
        "invalid: 3 error(s), 0 warning(s)\n"))


def test_a_pattern_is_bounded_in_length() -> None:
    problem = pattern_problem("a" * 1001)
    assert problem == "a pattern is at most 1,000 characters (this one has 1,001)"
    assert pattern_problem("[a-z][a-z0-9-]*(\\.[a-z0-9-]+)*") is None
