"""Issue 39 item 10: every count and colour of the impact report comes from the plan's own ratings.

The user's lab: `<default>` log.retention.ms 7d -> 1d on a cluster whose only topic is compact-only, so the topic
deletes nothing (the plan's `retention-lowered` needs `delete` in cleanup.policy: safe) while the broker value's
own change is destructive (the plan rates brokers/<default> so). Broker 6 is declared in cluster.yaml but was down
(not registered) when the state was read. Before the fix the report coloured `retention.ms` destructive while its
only topic was safe and the headline said "destructive on 0 topic(s)", and the brokers card said "5 of 5".
Real local Spark; the Markdown is a golden file (`UPDATE_GOLDEN=1` rewrites it after an intended change).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from reconciler.impact.afterstate import AfterRows
from reconciler.impact.inventory import read_inventory, write_tables

pytestmark = [pytest.mark.spark]

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "impact-ratings.md"
D = "<default>"


@pytest.fixture(scope="module")
def summary(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from reconciler.impact.aggregate import summary as summarize
    from reconciler.impact.job import compute_changes

    directory = tmp_path_factory.mktemp("inv-ratings")
    write_tables(spark, {
        "brokers": [("lab", b, None, [f"PLAINTEXT://b{b}.lab:9092"]) for b in range(1, 6)],  # 6 is down
        "topics": [("lab", "events", 3, 3)],
        "partitions": [("lab", "events", p, [1 + p, 2 + p, 3 + p]) for p in range(3)],
        "configs": [("lab", "brokers", D, "log.retention.ms", "604800000"),
                    ("lab", "topics", "events", "cleanup.policy", "compact")],
        "static": [],
    }, directory)
    after = AfterRows(clusters=["lab"], configs=[("lab", "brokers", D, "log.retention.ms", "86400000")],
                      declared=[("lab", "brokers", D)], policies=[("lab", False, [])],
                      brokers=[("lab", b) for b in range(1, 7)])
    return summarize(spark, compute_changes(spark, read_inventory(spark, directory), after))


def test_markdown_counts_and_colours_are_the_plans(summary: dict[str, Any]) -> None:
    from reconciler.impact.report import render_markdown

    text = render_markdown(summary)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_each_key_has_the_rating_of_what_it_names(summary: dict[str, Any]) -> None:
    by_key = {k["key"]: k for k in summary["byKey"]}
    assert by_key["retention.ms"]["risk"] == "safe"  # the topic's own rating: compact-only deletes nothing
    assert by_key["log.retention.ms"]["risk"] == "destructive"  # brokers/<default>'s change, as the plan rates it
    assert summary["topicsByRisk"] == {"destructive": 0, "disruptive": 0, "safe": 1}
    assert summary["brokerValuesByRisk"] == {"destructive": 5, "disruptive": 0, "safe": 0}
    assert summary["inventory"]["brokers"] == 6 and summary["brokersAffected"] == 5
    assert summary["brokersNotRegistered"] == [{"cluster": "lab", "brokers": [6]}]


def test_html_colours_and_cards_agree(summary: dict[str, Any]) -> None:
    from reconciler.impact.html import COLOURS, render_html

    html = render_html(summary)
    row = re.search(r"<tr><td><code>retention.ms</code></td><td><span class=\"pill\" style=\"background:([^\"]+)\">"
                    r"(\w+)</span>", html)
    assert row is not None and row.groups() == (COLOURS["safe"], "safe")
    bar = re.search(r"<title>retention.ms: 1 topics affected \((\w+)\)</title>", html)
    assert bar is not None and bar.group(1) == "safe"
    assert re.search(r"<div class=\"l\">brokers</div><div class=\"n\">5</div>\s*<div class=\"of\">of 6</div>", html)
    assert "broker(s) 6" in html and "destructive: 5" in html
