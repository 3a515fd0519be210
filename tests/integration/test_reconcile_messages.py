"""`reconcile --once` as a cron job runs it (real git, a real ZooKeeper), messages compared whole (issue 39):
an expired policy exception blocks what it governed and names the policy, the exception and its expiry (item 4);
multi-line messages are lines of text in the log, not `\\n` (item 6)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.integration.test_gitops import UNREACHABLE, cluster_yaml, commit, invoke
from tests.integration.test_reconcile import Fleet, config, reconcile, statuses
from tests.integration.test_reconcile import fleet as fleet
from tests.integration.test_reconcile import root_client as root_client

POLICY = """\
apiVersion: reconciler/v1
kind: Policy
meta: {{name: retention}}
spec:
  selector: {{labels: {{env: prod}}}}
  rules:
    - {{id: retention-cap, key: retention.ms, max: 2d, message: two days of retention at most}}
  exceptions:
    - entity: topics/orders
      rules: [retention-cap]
      reason: replay window for the migration
      expires: "{expires}"
"""
BROKERS = """\
apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: default}
spec:
  config: {num.io.threads: 16}
"""


def topics(retention: int) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Topics
        meta: {{}}
        spec:
          topics:
            orders: {{partitions: 3, replicationFactor: 3, config: {{retention.ms: {retention}}}}}
        """)


def errors(summary: dict[str, Any]) -> list[str]:
    return [d for c in summary["clusters"] for d in c["diagnostics"] if "no broker is registered" not in d]


def test_an_expired_exception_blocks_only_what_it_governed(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    week = 604800000
    commit(fleet.repo, "orders, excepted", {
        "clusters/a/cluster.yaml": cluster_yaml("a", fleet.connect("a"), {"env": "prod"}),
        "clusters/a/topics.yaml": topics(week), "clusters/policies.yaml": POLICY.format(expires="2099-12-31")})
    code, summary, err = reconcile(capsys, fleet)
    assert (code, statuses(summary)) == (0, {"a": "applied"}), err

    # the exception lapses; an unrelated change: before, "a failed: 1 problem(s) with the live state; see the
    # diagnostics" and nothing applied
    commit(fleet.repo, "more io threads", {"clusters/policies.yaml": POLICY.format(expires="2025-01-31"),
                                           "clusters/a/brokers.yaml": BROKERS})
    code, summary, err = reconcile(capsys, fleet)
    assert (code, statuses(summary)) == (0, {"a": "applied"}), err
    assert config(fleet.client, f"{fleet.chroot}/a/config/brokers/<default>") == {"num.io.threads": "16"}
    assert errors(summary) == [
        "clusters/a/topics.yaml:6:1: warning: policy retention, rule retention-cap (clusters/policies.yaml:7): "
        "cluster a: topics/orders: retention.ms is 604800000 (7d) (from clusters/a/topics.yaml:6), not at most 2d: "
        "two days of retention at most; the exception for topics/orders (clusters/policies.yaml:9, reason given: "
        "replay window for the migration) expired on 2025-01-31: renew it with a new date or fix topics/orders "
        "(this plan does not change topics/orders, so it does not block it) [policy:retention/retention-cap]"]

    # a change to what it governed is blocked, and the message says by which policy, exception and expiry
    commit(fleet.repo, "orders: 8 days", {"clusters/a/topics.yaml": topics(8 * 86400000)})
    code, summary, err = reconcile(capsys, fleet)
    assert (code, statuses(summary)) == (1, {"a": "failed"})
    assert summary["clusters"][0]["error"] == "nothing applied: 1 error in its plan"
    assert errors(summary) == [
        "clusters/a/topics.yaml:6:1: error: policy retention, rule retention-cap (clusters/policies.yaml:7): "
        "cluster a: topics/orders: retention.ms is 691200000 (8d) (from clusters/a/topics.yaml:6), not at most 2d: "
        "two days of retention at most; the exception for topics/orders (clusters/policies.yaml:9, reason given: "
        "replay window for the migration) expired on 2025-01-31: renew it with a new date or fix topics/orders "
        "[policy:retention/retention-cap]"]
    assert config(fleet.client, f"{fleet.chroot}/a/config/topics/orders") == {"retention.ms": str(week)}


def test_a_multi_line_message_is_lines_of_text_in_the_log(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `a failed: cannot connect to ZooKeeper … (…)\\n  check: the connect string …\\n  check: …` on one
    line, with literal backslash-n."""
    commit(fleet.repo, "unreachable", {"clusters/a/cluster.yaml": cluster_yaml("a", UNREACHABLE, {"env": "prod"}),
                                       "clusters/a/topics.yaml": topics(86400000)})
    code, _, err = invoke(capsys, "--repo", str(fleet.root), "reconcile", "--once", "--format", "text")
    assert code == 1
    assert "\\n" not in err
    failure = err[err.index("a failed: "):].splitlines()
    assert failure[0] == ("a failed: cannot connect to ZooKeeper at 127.0.0.1:1 within 10 s (cluster a, "
                          "spec.zookeeper.connect at clusters/a/cluster.yaml:6)")
    assert [line.split(":")[0] for line in failure[1:5]] == ["  check"] * 4


def test_plan_says_each_problem_once(zk_connect: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39 item 9: min.insync.replicas above the replication factor was warned twice in two wordings (by
    validate's rule and by the plan's); once now."""
    root = tmp_path / "repo"
    (root / "clusters/a").mkdir(parents=True)
    (root / "clusters/a/cluster.yaml").write_text(cluster_yaml("a", zk_connect, {"env": "dev"}))
    (root / "clusters/a/topics.yaml").write_text(textwrap.dedent("""\
        apiVersion: reconciler/v1
        kind: Topics
        meta: {}
        spec:
          topics:
            events: {partitions: 3, replicationFactor: 2, config: {min.insync.replicas: 3}}
        """))
    code, _, err = invoke(capsys, "--repo", str(root), "--no-color", "plan", "a")
    assert code == 0, err
    assert [line for line in err.splitlines() if "min.insync.replicas" in line] == [
        "clusters/a/topics.yaml:6:60: warning: topic events: min.insync.replicas=3 is above its replication factor "
        "2; producers with acks=all will fail with NotEnoughReplicas. Set it to at most 2 (usually 1) "
        "[min.insync.replicas]"]


def test_reconcile_refuses_a_target_without_brokers_unless_allowed(
        fleet: Fleet, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 item 1 on the scheduled path: a cluster whose chroot no broker runs in is refused (nothing
    written), and written with --allow-no-brokers."""
    monkeypatch.delenv("RECONCILER_ALLOW_NO_BROKERS", raising=False)
    commit(fleet.repo, "a cluster nobody runs", {
        "clusters/a/cluster.yaml": cluster_yaml("a", fleet.connect("a"), {"env": "prod"}),
        "clusters/a/topics.yaml": topics(86400000)})
    code, summary, err = reconcile(capsys, fleet)
    assert (code, statuses(summary)) == (1, {"a": "refused"}), err
    assert summary["clusters"][0]["error"].startswith(
        f"cluster a: refusing to write to {fleet.connect('a')} (spec.zookeeper.connect at clusters/a/cluster.yaml:6): "
        "no broker is registered there (declared: 1, 2, 3)")
    assert fleet.client.exists(f"{fleet.chroot}/a/config/topics/orders") is None
    code, summary, err = reconcile(capsys, fleet, "--allow-no-brokers")
    assert (code, statuses(summary)) == (0, {"a": "applied"}), err
    assert config(fleet.client, f"{fleet.chroot}/a/config/topics/orders") == {"retention.ms": "86400000"}
