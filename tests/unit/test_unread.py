"""The unread-records arithmetic (`reconciler.unread`) and its rendering (`render/consumers.py`), table-driven.

A partition of offsets 100..1100, one record every 0.01 d from 10 d ago: the first offset less than `a` old is
1100 - a / 0.01 d (7d: 400, 5d: 600, 2d: 900, 1d: 1000).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.render import consumers as C
from reconciler.unread import (
    ClusterOffsets,
    GroupState,
    PartitionLog,
    at_risk,
    boundary,
    lag_age,
    size_boundary,
    time_boundary,
    topic_risks,
)

DAY = 86_400_000
LOG = PartitionLog("t", 0, 100, 1100, 1_000_000, {DAY: 1000, 2 * DAY: 900, 5 * DAY: 600, 7 * DAY: 400})


@pytest.mark.parametrize(("retention", "expected"), [
    (DAY, (1000, 1000)),  # read exactly
    (36 * 3_600_000, (900, 1000)),  # between the 1d and 2d ages read: a bracket, never a guess
    (30 * DAY, (100, 400)),  # older than every age read: from the log start to the 7d boundary
    (3_600_000, (1000, 1100)),  # younger than every age read: up to the log end
    (-1, (100, 100)),  # unlimited: nothing eligible
    (None, (100, 100)),
])
def test_time_boundary(retention: int | None, expected: tuple[int, int]) -> None:
    assert time_boundary(LOG, retention) == expected


@pytest.mark.parametrize(("limit", "size", "expected"), [
    (500_000, 1_000_000, (600, 600)),  # half the bytes: the older half of the records
    (2_000_000, 1_000_000, (100, 100)),  # below the limit: nothing
    (-1, 1_000_000, (100, 100)),
    (500_000, None, (100, 1100)),  # size not known: anything
])
def test_size_boundary(limit: int, size: int | None, expected: tuple[int, int]) -> None:
    log = PartitionLog("t", 0, 100, 1100, size, LOG.at)
    assert size_boundary(log, limit) == expected


def test_the_later_boundary_wins_and_only_what_the_change_adds_counts() -> None:
    assert boundary(LOG, 7 * DAY, 500_000) == (600, 600)  # size lets go of more than 7d
    old, new = boundary(LOG, 7 * DAY, None), boundary(LOG, DAY, None)
    assert at_risk(550, old, new) == (450, 450)  # unread from 550, kept from 400 today, from 1000 after
    assert at_risk(50, old, new) == (600, 600)  # behind the log start: only what is kept today counts
    assert at_risk(1100, old, new) == (0, 0)  # read everything
    assert at_risk(1050, old, new) == (0, 0)  # what it has not read is newer than the new retention


def test_lag_in_time_is_bracketed_by_the_ages_read() -> None:
    assert lag_age(LOG, 550) == (5 * DAY, 7 * DAY)  # its oldest unread record is 5.5 d old
    assert lag_age(LOG, 50) == (7 * DAY, None)  # behind the log start: older than every age read
    assert lag_age(LOG, 1100) == (0, 0)  # caught up
    assert lag_age(LOG, 1050) == (0, DAY)


def test_topic_risks_sum_partitions_and_keep_the_groups_state() -> None:
    offsets = ClusterOffsets("c1", 0, (LOG, PartitionLog("t", 1, 100, 1100, None, LOG.at)),
                             (GroupState("g", "Stable", "consumer", 1, ("app",)),),
                             (("g", "t", 0, 550), ("g", "t", 1, 550), ("h", "t", 0, 1100), ("g", "u", 0, 0)))
    risks = topic_risks(offsets, "t", (7 * DAY, None), (DAY, None))
    g, h = risks
    assert (g.group, g.records, g.partitions, g.lag_records, g.lag_ms) == ("g", (900, 900), 2, 1100,
                                                                            (5 * DAY, 7 * DAY))
    assert g.bytes is None  # partition 1's size is not known
    assert g.state.active and g.state.client_ids == ("app",)
    assert (h.group, h.at_risk, h.state.state) == ("h", False, "")


ROW = {"cluster": "prod-eu-1", "topic": "payments", "group": "billing", "records": [1_200_000, 1_200_000],
       "lagMs": [2 * DAY, 3 * DAY], "retentionMs": ["604800000", "86400000"], "retentionBytes": [None, None],
       "state": "Stable", "members": 2, "clientIds": ["billing-1", "billing-2"], "active": True,
       "behindLogStart": 0, "bytes": None}


def test_the_sentence_a_reviewer_reads() -> None:
    assert C.sentence(ROW) == ("`billing` on `payments` (`prod-eu-1`) is 2d–3d behind: retention 1d would delete "
                               "~1.2 M records it has not read")
    assert C.sentence({**ROW, "records": [900_000, 1_300_000], "lagMs": [365 * DAY, None]}, md=False) == (
        "billing on payments (prod-eu-1) is more than 365d behind: retention 1d would delete 900.0 k–1.3 M records "
        "it has not read")
    assert C.state(ROW) == "active (2 member(s): billing-1, billing-2)"
    assert C.state({**ROW, "active": False, "state": "Empty"}).startswith("empty (no member now")


def test_names_from_the_brokers_cannot_break_out() -> None:
    hostile = {**ROW, "group": "x`y\n@team [link](http://e)", "topic": "t|u"}
    text = "\n".join(C.markdown({"known": True, "groupsAtRisk": 1, "clustersAtRisk": 1, "groupTopicsAtRisk": 1,
                                 "recordsAtRisk": [1, 1], "clusters": [], "rows": [hostile]}))
    assert "\n@team" not in text and "x`y\\n@team" in text  # a code span fenced past the backtick, \n escaped
    assert "`` x`y\\n@team [link](http://e) ``" in text
    assert "| `t\\|u` |" in text  # the pipe cannot end the cell


def test_freshness_and_clusters_not_read_are_said() -> None:
    section = {"known": True, "groupsAtRisk": 0, "assessedAtMs": 1_800_003_600_000,
               "clusters": [{"cluster": "a", "readAtMs": 1_800_000_000_000}, {"cluster": "b", "notRead": "no "
                             "spec.adminClient"}], "rows": []}
    text = "\n".join(C.markdown(section))
    assert "Consumers at risk: none" in text
    assert "Offsets read 2027-01-15 08:00 UTC, 1h before this report" in text
    assert "`b`: no spec.adminClient" in text


# --- maxUnreadLoss (policy/unread.py) -------------------------------------------------------------------------

POLICY = """apiVersion: reconciler/v1
kind: Policy
meta: {name: consumers}
spec:
  selector: {labels: {env: prod}, names: ['pay.*']}
  rules:
    - id: unread-loss
      maxUnreadLoss: 1000
      message: no change may delete what a consumer has not read
  exceptions:
    - {entity: topics/payments.legacy, reason: drained, expires: "2999-01-01"}
"""


def test_max_unread_loss_parses_and_judges_only_where_offsets_are_known(tmp_path: Path) -> None:
    from datetime import date

    from reconciler.manifests.policy import load_policies
    from reconciler.model import SourceRef
    from reconciler.policy.unread import threshold, unread_violations

    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "policies.yaml").write_text(POLICY)
    policies, problems = load_policies(tmp_path)
    assert not problems and threshold(policies) == 1000
    rows = [{"cluster": "prod-1", "topic": "payments", "group": "billing", "records": [900, 1200]},
            {"cluster": "prod-1", "topic": "payments", "group": "audit", "records": [1001, 1001]},
            {"cluster": "prod-1", "topic": "payments", "group": "small", "records": [5, 5]},
            {"cluster": "prod-1", "topic": "payments.legacy", "group": "old", "records": [10**6, 10**6]},  # waived
            {"cluster": "prod-1", "topic": "orders", "group": "x", "records": [10**6, 10**6]},  # not selected
            {"cluster": "dev-1", "topic": "payments", "group": "x", "records": [10**6, 10**6]}]  # not prod
    labels = {"prod-1": {"env": "prod"}, "dev-1": {"env": "dev"}}
    where = SourceRef("clusters/prod-1/topics.yaml", 7)
    found = unread_violations(policies, labels, rows, lambda c, t: where, date(2027, 1, 1))
    assert [(v.cluster, v.entity) for v in found] == [("prod-1", "topics/payments")]
    d = found[0].diagnostic()
    assert d.severity == "error" and d.source == where and d.key == "policy:consumers/unread-loss"
    assert ("consumer group 'billing' would lose up to 1,200 (900–1,200) records it has not read (and 1 more "
            "group(s) over it), more than 1,000: no change may delete") in d.message


def test_plan_alone_does_not_judge_max_unread_loss(tmp_path: Path) -> None:
    """`plan` has no offsets: the rule is the impact's to judge, never a false violation or a crash."""
    from reconciler.manifests.validate import load_and_validate

    (tmp_path / "clusters" / "prod-1").mkdir(parents=True)
    (tmp_path / "clusters" / "policies.yaml").write_text(POLICY)
    (tmp_path / "clusters" / "prod-1" / "cluster.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: prod-1, labels: {env: prod}}\nspec:\n"
        "  kafkaVersion: \"3.6\"\n  zookeeper: {connect: \"127.0.0.1:2181/p\"}\n  brokers: [1]\n")
    (tmp_path / "clusters" / "prod-1" / "topics.yaml").write_text(
        "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n"
        "    payments: {partitions: 1, replicationFactor: 1, config: {retention.ms: 1000}}\n")
    _, _, diags = load_and_validate(tmp_path, policies=True)
    assert not [d for d in diags if d.severity == "error"], diags
