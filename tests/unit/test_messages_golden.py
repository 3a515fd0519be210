"""Messages as `validate` prints them (issue 39, item 7): Kafka's type error comes first and alone, with the unit
hint on every path (topic, broker default, quota); a policy judges only a value that parses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from reconciler.cli.main import run

CLUSTER = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: lab-1, labels: {env: prod}}
spec:
  kafkaVersion: "3.9"
  zookeeper: {connect: "127.0.0.1:1/lab-1"}
  brokers: [1, 2, 3]
"""
POLICY = """\
apiVersion: reconciler/v1
kind: Policy
meta: {name: retention}
spec:
  selector: {labels: {env: prod}}
  rules:
    - {id: retention-bounds, key: retention.ms, min: 1h, max: 30d, message: between an hour and 30 days}
"""
FILES = {
    "clusters/lab-1/topics.yaml": """\
        apiVersion: reconciler/v1
        kind: Topics
        meta: {}
        spec:
          topics:
            events: {partitions: 3, replicationFactor: 3, config: {retention.ms: 7d}}
        """,
    "clusters/lab-1/brokers.yaml": """\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {broker: default}
        spec:
          config: {log.segment.bytes: 1 GiB}
        """,
    "clusters/lab-1/quotas.yaml": """\
        apiVersion: reconciler/v1
        kind: Quotas
        meta: {}
        spec:
          users:
            alice: {producer_byte_rate: 10 MiB}
        """,
}


def test_type_errors_alone_with_the_unit_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `policy retention … retention.ms is 7d …, not at least 1h and at most 30d` (false) first, then
    `Not a number of type LONG` with no hint of 604800000."""
    for rel, text in {"clusters/lab-1/cluster.yaml": CLUSTER, "clusters/policies.yaml": POLICY, **FILES}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    assert run(["--repo", str(tmp_path), "--no-color", "validate"]) == 1
    out = capsys.readouterr()
    assert out.out + out.err == (
        "clusters/lab-1/brokers.yaml:5:12: error: invalid value '1 GiB' for 'log.segment.bytes': Not a number of "
        "type INT; write 1073741824 (1 GiB in bytes) [log.segment.bytes]\n"
        "clusters/lab-1/quotas.yaml:6:13: error: 'producer_byte_rate' must be a number (or a string holding one), "
        "got string \"10 MiB\"; write 10485760 (10 MiB in bytes per second) [producer_byte_rate]\n"
        "clusters/lab-1/topics.yaml:6:60: error: invalid value '7d' for 'retention.ms': Not a number of type "
        "LONG; write 604800000 (7d in milliseconds) [retention.ms]\n"
        "invalid: 3 error(s), 0 warning(s)\n")
