"""Fleet impact pieces that need no Spark: catalog tables, inventory rows, the after side, risk lookups,
reports (golden Markdown), and the minimal --git-base fallback."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reconciler.impact import keys as K
from reconciler.impact.afterstate import after_rows
from reconciler.impact.deletions import decide, like_pattern
from reconciler.impact.deletions import section as deletion_section
from reconciler.impact.frames import columns
from reconciler.impact.gitbase import _minimal
from reconciler.impact.html import render_html
from reconciler.impact.inventory import SCHEMAS, SENSITIVE, live_rows, static_rows
from reconciler.impact.report import BUDGET, render_json, render_markdown
from reconciler.model import (
    BrokerRegistration,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    LiveEntity,
    LiveState,
    LiveTopic,
    Policy,
    SecretRef,
    ZooKeeperSpec,
    frozen_map,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "impact.md"


def test_synonyms_in_precedence_order_with_factors() -> None:
    rows = {r[0]: r for r in K.synonym_rows()}
    assert rows["log.retention.ms"] == ("log.retention.ms", "retention.ms", 0, 1, True, True)
    assert rows["log.retention.minutes"] == ("log.retention.minutes", "retention.ms", 1, 60_000, False, True)
    assert rows["log.retention.hours"] == ("log.retention.hours", "retention.ms", 2, 3_600_000, False, True)
    assert rows["log.roll.hours"][1:4] == ("segment.ms", 1, 3_600_000)
    assert rows["num.io.threads"] == ("num.io.threads", "num.io.threads", 0, 1, True, False)
    info = {r[0]: r for r in K.key_rows()}
    assert info["retention.ms"] == ("retention.ms", True, "LONG", "604800000", "log.retention.ms")
    assert info["num.io.threads"][:4] == ("num.io.threads", False, "INT", "8")
    assert "cleanup.policy" in K.list_keys() and "retention.ms" not in K.list_keys()


def test_schema_columns() -> None:
    assert columns(SCHEMAS["brokers"]) == ["cluster", "broker", "rack", "endpoints"]
    assert columns(SCHEMAS["sizes"]) == ["cluster", "topic", "partition", "size_bytes"]


def _cluster(**policy: Any) -> ClusterSpec:
    return ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1, 2), policy=Policy(**policy))


def test_live_rows_canonical_and_secrets_masked() -> None:
    live = LiveState(
        cluster="c1",
        brokers={1: BrokerRegistration(1, ("PLAINTEXT://b1:9092",), {"PLAINTEXT": "PLAINTEXT"}, "r1")},
        topics={"t": LiveTopic("t", {0: (1, 2), 1: (2, 1)})},
        entities=frozen_map({
            EntityRef("topics", "t"): LiveEntity(EntityRef("topics", "t"), {"cleanup.policy": "compact, delete"}, 0),
            EntityRef("brokers", "1"): LiveEntity(EntityRef("brokers", "1"), {
                "listener.name.x.ssl.key.password": "encoded", "unclean.leader.election.enable": "TRUE"}, 3),
            EntityRef("users", "bob"): LiveEntity(EntityRef("users", "bob"), {"SCRAM-SHA-512": "salt=..."}, 1),
            EntityRef("users", "bob", "app"): LiveEntity(EntityRef("users", "bob", "app"),
                                                         {"request_percentage": "50"}, 1),
            EntityRef("ips", "<default>"): LiveEntity(EntityRef("ips", "<default>"), {"x": "1"}, None),  # absent
        }),
    )
    rows = live_rows(live)
    assert rows["brokers"] == [("c1", 1, "r1", ["PLAINTEXT://b1:9092"])]
    assert rows["topics"] == [("c1", "t", 2, 2)]
    assert rows["partitions"] == [("c1", "t", 0, [1, 2]), ("c1", "t", 1, [2, 1])]
    assert sorted(rows["configs"]) == sorted([
        ("c1", "topics", "t", "cleanup.policy", "compact,delete"),
        ("c1", "brokers", "1", "listener.name.x.ssl.key.password", SENSITIVE),
        ("c1", "brokers", "1", "unclean.leader.election.enable", "true"),
        ("c1", "users", "bob", "SCRAM-SHA-512", SENSITIVE),
        ("c1", "users", "bob/clients/app", "request_percentage", "50.0"),
    ])


def test_after_rows_follow_ownership_inputs() -> None:
    default = EntityRef("brokers", "<default>")
    state = DesiredState(
        cluster=_cluster(prune=True, ignore_keys=("num.io.threads",)),
        entities=frozen_map({
            default: DesiredEntity(default, frozen_map({
                "log.retention.ms": DesiredValue("3600000"), "num.io.threads": DesiredValue("4")})),
            EntityRef("brokers", "2"): DesiredEntity(EntityRef("brokers", "2"), frozen_map({
                "listener.name.x.ssl.key.password": DesiredValue(SecretRef(env="X"))})),
            EntityRef("clients", "a"): DesiredEntity(EntityRef("clients", "a"), frozen_map({
                "producer_byte_rate": DesiredValue("1")})),
        }),
        topics=frozen_map({"t": DesiredTopic("t", 3, None, frozen_map({"retention.ms": DesiredValue(" 60000 ")})),
                           "u": DesiredTopic("u", None, None, frozen_map({}))}),
        static=frozen_map({"1": frozen_map({"log.retention.hours": DesiredValue("24")})}),
    )
    after = after_rows({"c1": state})
    assert after.clusters == ["c1"] and after.policies == [("c1", True, ["num.io.threads"])]
    assert sorted(after.configs) == sorted([
        ("c1", "brokers", "<default>", "log.retention.ms", "3600000"),  # num.io.threads: ignored, never written
        ("c1", "brokers", "2", "listener.name.x.ssl.key.password", SENSITIVE),
        ("c1", "topics", "t", "retention.ms", "60000"),
    ])
    assert sorted(after.declared) == [("c1", "brokers", "2"), ("c1", "brokers", "<default>"),
                                      ("c1", "topics", "t"), ("c1", "topics", "u")]
    assert after.static == [("c1", "1", "log.retention.hours", "24")] == static_rows(state)
    assert sorted(after.topics) == [("c1", "t", 3, None), ("c1", "u", None, None)]


def summary(keys: int = 2) -> dict[str, Any]:
    by_key = [{"key": "retention.ms", "clusters": 2, "brokers": 6, "topics": 1500, "partitions": 9000,
               "bytes": 5 << 40, "risk": "destructive", "rules": ["retention-lowered"]},
              {"key": "x|<b>@team", "clusters": 1, "brokers": 3, "topics": 0, "partitions": 0, "bytes": 0,
               "risk": "disruptive", "rules": []}]
    by_key += [{**by_key[1], "key": f"custom.{i}"} for i in range(keys - 2)]
    return {
        "format": 1, "clusters": ["prod-1", "prod-2", "dev-1"], "clustersAffected": 2, "brokersAffected": 6,
        "topicsAffected": 1500, "partitionsAffected": 9000, "bytesAffected": 5 << 40,
        "topicsByRisk": {"destructive": 1500, "disruptive": 0, "safe": 0},
        "topicChangesTotal": 1500, "brokerChangesTotal": 9, "byKey": by_key,
        "byRule": [{"rule": "retention-lowered", "risk": "destructive", "keys": ["log.retention.ms", "retention.ms"],
                    "clusters": 2, "brokers": 6, "topics": 1500, "partitions": 9000, "bytes": 5 << 40}],
        "byCluster": [{"cluster": "prod-1", "brokers": 3, "topics": 1000, "partitions": 6000, "bytes": 4 << 40,
                       "changes": 1003, "risk": "destructive", "topicsDeleted": 1, "partitionsDeleted": 6,
                       "topicBytesDeleted": 3 << 30},
                      {"cluster": "prod-2", "brokers": 3, "topics": 500, "partitions": 3000, "bytes": 1 << 40,
                       "changes": 506, "risk": "destructive", "topicsDeleted": 1, "partitionsDeleted": 12,
                       "topicBytesDeleted": None}],
        "inventory": {"clusters": 3, "brokers": 9, "topics": 3000, "partitions": 20000},
        "missingClusters": [], "topicsCreated": 1, "partitionIncreases": 0,
        "topicChanges": [{"cluster": "prod-1", "topic": "orders", "key": "retention.ms", "before": "604800000",
                          "after": "259200000", "partitions": 12, "risk": "destructive",
                          "rules": ["retention-lowered"], "reasons": [RETENTION_REASON]}],
        "brokerChanges": [{"cluster": "prod-1", "broker": 1, "key": "log.retention.ms", "before": "604800000",
                           "after": "259200000", "risk": "destructive", "rules": ["retention-lowered"],
                           "reasons": [RETENTION_REASON]}],
        "source": {"before": "the inventory fleet (snapshot of 2026-01-01T00:00:00Z)", "after": "manifests",
                   "gitBase": None},
        "topicsDeleted": deletion_section(DELETED),
    }


DELETED = [  # as `deletions.decide` makes them
    {"cluster": "prod-1", "topic": "tmp-load|test", "partitions": 6, "replicationFactor": 3, "replicas": 18,
     "bytes": 3 << 30, "matched": "tmp-*", "risk": "destructive",
     "reasons": ["topic deleted (6 partitions × 3 replicas): every record it holds is lost; policy.deleteTopics "
                 "entry 'tmp-*'", "3.0 GiB in its partitions (3,221,225,472 bytes, the inventory's sizes)"]},
    {"cluster": "prod-2", "topic": "orders.v1", "partitions": 12, "replicationFactor": 3, "replicas": 36,
     "bytes": None, "matched": "orders.v1", "risk": "destructive",
     "reasons": ["topic deleted (12 partitions × 3 replicas): every record it holds is lost; policy.deleteTopics "
                 "entry 'orders.v1'"]},
]


RETENTION_REASON = "retention lowered from 7d to 3d: data older than 3d is deleted"


def test_markdown_golden() -> None:
    text = render_markdown(summary())
    assert text == GOLDEN.read_text(encoding="utf-8")
    assert "`x\\|<b>@team`" in text  # inside a code span: no HTML, no mention; the pipe cannot end the cell


def test_deletions_come_first_in_every_report() -> None:
    """The Markdown opens with the topics to delete (headline, then their section, before the comparison), the
    HTML likewise (before "Change assessed"), with sizes and the plan's reasons; without deletions neither shows
    the section."""
    md = render_markdown(summary())
    assert md.startswith("## Fleet impact: 2 topic(s) deleted (18 partitions, at least 3.0 GiB); 2 cluster(s)")
    assert md.index("### 🛑 Topics to DELETE (2 in 2 cluster(s))") < md.index("Compared:")
    assert "| `prod-1` | `tmp-load\\|test` | 6 | 18 | 3.0 GiB |" in md  # the pipe cannot end the cell
    html = render_html(summary())
    top = html[html.index("Topics to delete"):html.index("Change assessed")]
    assert "<code>tmp-load|test</code>" in top and "3.0 GiB" in top and "orders.v1" in top
    assert "3,221,225,472 bytes" in top  # the reasons, sizes included
    plain = summary()
    plain["topicsDeleted"] = deletion_section([])
    assert "DELETE" not in render_markdown(plain) and "Topics to delete" not in render_html(plain)
    del plain["topicsDeleted"]  # a summary made before deletions were reported
    assert render_markdown(plain).startswith("## Fleet impact: 2 cluster(s)")


def test_deletion_section_counts_known_bytes() -> None:
    d = deletion_section(DELETED)
    assert {k: d[k] for k in ("topics", "partitions", "replicas", "bytes", "bytesUnknown", "clusters")} == {
        "topics": 2, "partitions": 18, "replicas": 54, "bytes": 3 << 30, "bytesUnknown": 1, "clusters": 2}
    assert [c["cluster"] for c in d["byCluster"]] == ["prod-1", "prod-2"]  # most bytes first
    assert d["byCluster"][1]["bytes"] is None  # nothing known: null, never 0
    assert deletion_section([])["bytes"] is None and deletion_section([])["topics"] == 0


NAMES = ["tmp-a", "tmp_a", "tmpXa", "old.orders", "oldXorders", "a%b", "a_b", "ab", "x\\y", "__consumer_offsets",
         "consumer_offsets", "orders-1", "orders-9", "orders-x", "[lit", "q", ""]


@pytest.mark.parametrize("entry", ["tmp-*", "tmp_a", "old.orders", "a%b", "*_offsets", "orders-[0-8]",
                                   "orders-[!x]", "?", "[lit", "x\\y", "*", "a*b?"])
def test_like_pattern_keeps_every_name_the_entry_names(entry: str) -> None:
    """The Spark prefilter may keep more names than the entry matches, never fewer; emulated here with the LIKE
    semantics Spark applies (`%` any run, `_` one character, backslash escapes)."""
    from reconciler.diff.topics import policy_match

    pattern = like_pattern(entry)
    regex, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            regex += re.escape(pattern[i + 1])
            i += 2
            continue
        regex += ".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
        i += 1
    for name in NAMES:
        if policy_match([entry], name) is not None:
            assert re.fullmatch(regex, name, re.S), (entry, name, pattern)
    assert like_pattern("tmp-*") == "tmp-%" and like_pattern("a_b%") == "a\\_b\\%"  # exact where it can be


def test_deletions_are_decided_as_the_plan_decides() -> None:
    """`decide` keeps what `plan_deletions` would delete from the same live topics: undeclared, named, never
    internal; and only in the cluster whose policy names it."""
    from reconciler.diff.topics import plan_deletions

    names = ["tmp-a", "tmp-kept", "__tmp", "__consumer_offsets", "keep", "old.orders"]
    entries = ("tmp-*", "__*", "*offsets", "old.orders")
    cluster = ClusterSpec("c1", "3.6", ZooKeeperSpec("zk:2181"), (1, 2), policy=Policy(delete_topics=entries))
    desired = DesiredState(cluster=cluster, entities=frozen_map({}),
                           topics=frozen_map({"tmp-kept": DesiredTopic("tmp-kept", None, None, frozen_map({}))}))
    live = LiveState(cluster="c1", brokers={}, topics={n: LiveTopic(n, {0: (1, 2)}, version=1) for n in names},
                     entities=frozen_map({}))
    planned = [(t.name, t.matched) for t in plan_deletions(desired, live)[0]]
    rows = [{"cluster": c, "topic": n, "partitions": 1, "rf": 2, "replicas": 2, "bytes": None}
            for c in ("c1", "c2") for n in names]
    decided = decide(rows, {"c1": entries}, [("c1", "tmp-kept")])
    assert [(r["topic"], r["matched"]) for r in decided] == planned == [("old.orders", "old.orders"),
                                                                         ("tmp-a", "tmp-*")]
    assert {r["cluster"] for r in decided} == {"c1"}


def test_markdown_stays_a_comment_at_fleet_scale() -> None:
    text = render_markdown(summary(keys=5000))
    assert len(text) < BUDGET and "… and 4,960 more keys in report.json" in text


def test_json_has_the_spec_shape() -> None:
    data = json.loads(render_json(summary()))
    for key in ("clustersAffected", "topicsAffected", "partitionsAffected", "bytesAffected", "byKey", "byCluster"):
        assert key in data
    assert set(data["byKey"][0]) >= {"key", "clusters", "topics", "partitions", "risk"}
    assert set(data["byCluster"][0]) >= {"cluster", "topics", "partitions", "changes"}


def test_html_is_self_contained() -> None:
    html = render_html(summary())
    assert html.startswith("<!doctype html>") and html.count("<svg") == 3
    for banned in ("<script", "http://", "https://", "<link", "@import", "url("):
        assert banned not in html
    assert "x|&lt;b&gt;@team" in html  # escaped


HOSTILE = "<script>alert('x')</script>&\"q\""


def test_reports_show_each_rating_with_its_reasons() -> None:
    """Every example row shows its reasons next to its risk, escaped in the HTML (autoescape) and in the
    Markdown (no markup, mention or cell break from a value); a safe row says that no rule fires; the rule table
    says what each rule means."""
    s = summary()
    s["topicChanges"].append({**s["topicChanges"][0], "topic": "audit", "risk": "safe", "rules": [], "reasons": []})
    s["brokerChanges"][0]["reasons"] = [f"{HOSTILE} | @team [x](y)\nnext"]
    html = render_html(s)
    rows = html[html.index("Examples of topic changes"):html.index("Broker config changes")]
    assert rows.count("<li>" + RETENTION_REASON + "</li>") == 1 and "no risk rule fires" in rows
    brokers = html[html.index("Broker config changes"):]
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#34;q&#34; | @team [x](y)" in brokers
    assert "<script" not in html
    assert "retention lowered from X to Y: data older than Y is deleted" in html  # the rule's meaning
    md = render_markdown(s)
    assert f"| {RETENTION_REASON.replace(':', chr(92) + ':')} |" in md
    line = next(x for x in md.splitlines() if x.startswith("| `prod-1` | 1 |"))
    assert not re.search(r"(?<!\\)[<>|@\[]", line.split("🛑 destructive | ")[1].rstrip(" |"))  # all escaped
    assert "\\<script\\>" in line and "\\|" in line and "\\@team" in line
    assert line.count(" | ") == 6 - 1 and "next" in line  # one cell each, the line break gone


def test_sensitive_rows_keep_no_value_in_their_reasons() -> None:
    s = summary()
    s["brokerChanges"][0] |= {"key": "listener.name.x.ssl.key.password", "before": "old-secret",
                              "after": "new-secret", "reasons": ["changed from old-secret to new-secret"]}
    out = json.loads(render_json(s))["brokerChanges"][0]
    assert out["reasons"] == ["changed from (sensitive) to (sensitive)"]


def test_html_escapes_hostile_names_everywhere() -> None:
    """Topic, cluster and key names come from manifests or live state: the template's autoescaping must turn
    every one into text, in tables, chart labels and tooltips alike."""
    s = summary()
    s["topicChanges"][0]["topic"] = HOSTILE
    s["byCluster"][0]["cluster"] = HOSTILE
    s["clusters"] = [HOSTILE]
    s["source"]["change"] = {"head": "abc", "subject": HOSTILE, "dirty": True, "base": "origin/main",
                             "files": [f"clusters/{HOSTILE}/topics.yaml"]}
    html = render_html(s)
    assert "<script" not in html and "alert(&#39;x&#39;)" in html
    assert html.count("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&#34;q&#34;") >= 5


def test_html_says_which_change_is_assessed() -> None:
    s = summary()
    s["source"]["gitBase"] = "origin/main"
    s["source"]["change"] = {"head": "0123456789ab", "subject": "Lower retention on orders", "dirty": False,
                             "base": "origin/main", "files": ["clusters/prod-1/topics.yaml"]}
    html = render_html(s)
    section = html[html.index("Change assessed"):html.index('<div class="cards">')]
    for text in ("the inventory fleet (snapshot of 2026-01-01T00:00:00Z)", "0123456789ab",
                 "Lower retention on orders", "<code>origin/main</code> → <code>0123456789ab</code>",
                 "clusters/prod-1/topics.yaml", "prod-1"):
        assert text in section, text
    markdown = render_markdown(s)
    assert ("Compared: the manifests at `0123456789ab` (changes since `origin/main`: 1 file(s) under clusters/) "
            "against the inventory fleet") in markdown
    assert "Lower retention" not in markdown  # a commit subject is the author's text: HTML/JSON only


def test_html_charts_have_labelled_axes() -> None:
    html = render_html(summary())
    charts = [c for c in html.split("<svg")[1:] if "aria-label=\"topics by risk\"" not in c]
    assert len(charts) == 2
    for chart, y_label in zip(charts, ("key", "cluster"), strict=True):
        assert f'class="axis">{y_label}</text>' in chart  # the y axis names the categories
        assert 'class="axis">topics affected</text>' in chart  # the x axis names the measure
        assert chart.count("<line") >= 3  # both axes and at least one tick


def test_clusters_most_at_risk_come_first() -> None:
    from reconciler.impact.tally import _by_cluster

    rows = {"topics": [{"cluster": "big-safe", "level": 0, "topics": 900, "partitions": 900, "bytes": None},
                       {"cluster": "small-bad", "level": 2, "topics": 1, "partitions": 1, "bytes": None},
                       {"cluster": "mid-bad", "level": 2, "topics": 5, "partitions": 5, "bytes": None}],
            "keys": [], "brokerKeys": [], "hitBrokers": []}
    ordered = [r["cluster"] for r in _by_cluster(rows, False, {})]
    assert ordered == ["mid-bad", "small-bad", "big-safe"]


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    for name in ("a", "b"):
        (tmp_path / "clusters" / name).mkdir(parents=True)
        (tmp_path / "clusters" / name / "cluster.yaml").write_text(f"name: {name}\n")
    (tmp_path / "clusters" / "fleet.yaml").write_text("x: 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    return tmp_path


def test_git_base_fallback(git_repo: Path) -> None:
    assert _minimal(git_repo, "HEAD", ["a", "b"]) == set()
    (git_repo / "clusters" / "a" / "topics.yaml").write_text("new: 1\n")  # untracked counts
    assert _minimal(git_repo, "HEAD", ["a", "b"]) == {"a"}
    (git_repo / "clusters" / "fleet.yaml").write_text("x: 2\n")
    assert _minimal(git_repo, "HEAD", ["a", "b"]) == {"a", "b"}


def test_manifests_linked_from_outside_the_repository(git_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A manifest directory reached through a symlink from inside a repository is not described by that
    repository's commits: the report says nothing about a change rather than failing (or naming the wrong one)."""
    from reconciler.impact.gitbase import assessed_change

    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "clusters").mkdir()
    (git_repo / "linked").symlink_to(elsewhere)
    assert assessed_change(git_repo / "linked", None) == {}
    assert assessed_change(git_repo, None)["head"]


def test_declared_topics_count_those_that_exist_and_those_that_grow() -> None:
    """`topicsCreated` and `partitionIncreases` from the live partition counts of the declared topics (a
    predicate in Spark, no join): a missing topic is created, a larger declared count is an increase, an equal
    one or an undeclared count (None: the manifest leaves it to the live topic) is not."""
    from reconciler.impact.facts import _declared_topics

    declared = [("c1", "grows", 6, 3), ("c1", "same", 3, 3), ("c1", "open", None, None), ("c1", "new", 3, 3),
                ("c2", "grows", 2, 3)]  # the same name in another cluster is another topic
    live = [{"cluster": "c1", "topic": "grows", "partitions": 3}, {"cluster": "c1", "topic": "same", "partitions": 3},
            {"cluster": "c1", "topic": "open", "partitions": 12}, {"cluster": "c2", "topic": "grows", "partitions": 4}]
    assert _declared_topics(declared, live) == (4, 1)
    assert _declared_topics(declared, []) == (0, 0)
