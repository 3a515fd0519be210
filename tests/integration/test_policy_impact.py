"""The impact report's policy counts: kind Policy over the after-state of every topic of the hand-worked fleet of
test_impact_job.py, in Spark (real local session), against counts worked out by hand below.

After the change (test_impact_job's AFTER), topic by topic:
  retention.ms    shield: <default> 7d -> 1h, so a and c inherit 1h, b overrides 1000; perbroker: <default> 1h,
                  x and y inherit it (broker 1's own 1d is a per-broker value: a topic is judged with broker=None);
                  synonyms: <default> 2d (z); override: orders declared 1h, logs keeps its live 1000, new.topic is
                  created with 1000; untouched: 7d; deleting: Kafka's default 7d
  rf              shield a 3, b 3, c 2; perbroker x 1, y 1; override orders 3, logs 3, new.topic 3
  cleanup.policy  override: orders' compact is no longer declared (gone), logs and new.topic set none
Policies:
  retention   every cluster, retention.ms min 2h (error): shield a b c, perbroker x y, override orders logs
              new.topic = 8; required cleanup.policy (warn) in override only: orders, logs, new.topic = 3
  durability  env=prod (shield, perbroker, override), replicationFactor min 3 (warn): shield c, perbroker x y = 3
  names       cluster deleting, names [^_].* (not __consumer_offsets): namePattern [a-z]+([.-][a-z]+)* (error):
              oldXorders = 1; maxCount 4 (error): 5 selected topics = 1
  steps       shield and override, retention.ms maxDecrease 10 (error): shield a (7d -> 1h; its exception expired),
              c; b is waived (and unchanged anyway: 1000 -> 1000); override orders (1d -> 1h); new.topic has no
              before = 3
"""

from __future__ import annotations

import textwrap
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from reconciler.impact.inventory import read_inventory
from reconciler.impact.policy_counts import (
    policy_change_counts,
    policy_change_markdown,
    policy_counts,
    policy_markdown,
)
from reconciler.manifests.policy import load_policies
from tests.integration.test_impact_job import AFTER, write_fleet

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LABELS = {c: {"env": "prod" if c in ("shield", "perbroker", "override") else "staging"} for c in AFTER.clusters}
POLICIES = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Policy
    meta: {name: retention}
    spec:
      selector: {clusters: ['*']}
      rules:
        - {id: min-retention, key: retention.ms, min: 2h, message: m}
    ---
    apiVersion: reconciler/v1
    kind: Policy
    meta: {name: cleanup}
    spec:
      selector: {clusters: [override]}
      rules:
        - {id: cleanup-set, required: [cleanup.policy], severity: warn, message: m}
    ---
    apiVersion: reconciler/v1
    kind: Policy
    meta: {name: durability}
    spec:
      selector: {labels: {env: prod}}
      rules:
        - {id: rf, key: replicationFactor, min: 3, severity: warn, message: m}
    ---
    apiVersion: reconciler/v1
    kind: Policy
    meta: {name: names}
    spec:
      selector: {clusters: [deleting], names: ['[^_].*']}
      rules:
        - {id: name, namePattern: '[a-z]+([.-][a-z]+)*', message: m}
        - {id: count, maxCount: 4, message: m}
    ---
    apiVersion: reconciler/v1
    kind: Policy
    meta: {name: steps}
    spec:
      selector: {clusters: [shield, override]}
      rules:
        - {id: cut, key: retention.ms, maxDecrease: 10, message: m}
      exceptions:
        - {entity: topics/b, reason: r, expires: "2999-01-01"}
        - {entity: topics/a, reason: r, expires: "2000-01-01"}
    """)


def test_policy_counts_on_the_hand_worked_fleet(spark: Any, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory"
    write_fleet(inventory, spark)
    (tmp_path / "repo" / "clusters").mkdir(parents=True)
    (tmp_path / "repo" / "clusters" / "policies.yaml").write_text(POLICIES, encoding="utf-8")
    policies, problems = load_policies(tmp_path / "repo")
    assert problems == []
    section = policy_counts(spark, read_inventory(spark, inventory), AFTER, LABELS, policies, date(2026, 11, 27))
    got = {(r["cluster"], r["policy"], r["rule"]): r["violations"] for r in section["byCluster"]}
    assert got == {
        ("shield", "retention", "min-retention"): 3, ("perbroker", "retention", "min-retention"): 2,
        ("override", "retention", "min-retention"): 3,
        ("override", "cleanup", "cleanup-set"): 3,
        ("shield", "durability", "rf"): 1, ("perbroker", "durability", "rf"): 2,
        ("deleting", "names", "name"): 1, ("deleting", "names", "count"): 1,
        ("shield", "steps", "cut"): 2, ("override", "steps", "cut"): 1,
    }
    assert (section["errors"], section["warnings"], section["clusters"]) == (8 + 2 + 3, 3 + 3, 4)
    assert section["rules"][0] == {"policy": "retention", "rule": "min-retention", "severity": "error",
                                   "clusters": 3, "violations": 8}
    text = "\n".join(policy_markdown(section))
    assert "### Policy: 13 error(s), 6 warning(s) in 4 cluster(s), after the change" in text
    assert "| retention | min-retention | error | 3 | 8 |" in text
    # a pull request that raises the retention minimum to 1d: 7d in untouched and deleting still passes; synonyms'
    # z (2d) too; every topic already under 2h stays flagged; nothing else moves
    (tmp_path / "repo" / "clusters" / "policies.yaml").write_text(POLICIES.replace("min: 2h", "min: 1d"))
    head, _ = load_policies(tmp_path / "repo")
    edit = policy_change_counts(spark, read_inventory(spark, inventory), AFTER, LABELS, policies, head,
                                date(2026, 11, 27))
    assert edit["change"]["rows"] == [] and edit["change"]["newly"] == 0
    (tmp_path / "repo" / "clusters" / "policies.yaml").write_text(POLICIES.replace("min: 2h", "min: 3d"))
    head, _ = load_policies(tmp_path / "repo")
    edit = policy_change_counts(spark, read_inventory(spark, inventory), AFTER, LABELS, policies, head,
                                date(2026, 11, 27))
    # 3d: synonyms' z (2d) is newly flagged; untouched t1 and deleting's six topics (7d) are not
    assert edit["change"]["rows"] == [{"cluster": "synonyms", "policy": "retention", "rule": "min-retention",
                                       "base": 0, "head": 1}]
    assert (edit["change"]["newly"], edit["change"]["cleared"]) == (1, 0)
    assert "### Policy edit across the fleet: 1 violation(s) newly flagged, 0 no longer flagged" in "\n".join(
        policy_change_markdown(edit))



@pytest.mark.timeout(300)
def test_a_catastrophic_name_pattern_does_not_hang_the_job(spark: Any, tmp_path: Path) -> None:
    """Issue 38, finding 17 in Spark: a pull request's own pattern went to `rlike` (Java's backtracking engine)
    for every topic; `(.*a){20}` against a 40-letter name ending in `-` takes Java 17 longer than 30 s at 30
    letters (and hours at 40), RE2 microseconds. Names are matched with RE2 on the driver now, with the pure
    evaluator's answers."""
    import time

    from reconciler.impact.inventory import SCHEMAS

    inventory = tmp_path / "inventory"
    write_fleet(inventory, spark)
    long = "a" * 40 + "-"
    spark.createDataFrame([("deleting", long, 1, 1)], SCHEMAS["topics"]).write.mode("append").parquet(
        str(inventory / "topics"))
    spark.createDataFrame([("deleting", long, 0, [1])], SCHEMAS["partitions"]).write.mode("append").parquet(
        str(inventory / "partitions"))
    evil = POLICIES.replace("namePattern: '[a-z]+([.-][a-z]+)*'", "namePattern: '(.*a){20}'")
    (tmp_path / "repo" / "clusters").mkdir(parents=True)
    (tmp_path / "repo" / "clusters" / "policies.yaml").write_text(evil, encoding="utf-8")
    policies, problems = load_policies(tmp_path / "repo")
    assert problems == []
    started = time.monotonic()
    section = policy_counts(spark, read_inventory(spark, inventory), AFTER, LABELS, policies, date(2026, 11, 27))
    assert time.monotonic() - started < 120
    got = {(r["cluster"], r["policy"], r["rule"]): r["violations"] for r in section["byCluster"]}
    # no name has twenty a's and ends in one: `deleting`'s five selected topics and the long one break the rule
    assert got[("deleting", "names", "name")] == 6
