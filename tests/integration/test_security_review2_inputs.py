"""Issue 28, findings 5, 7, 10 and 11: what manifests and znodes may ask for, and which values may be shown.

Real git repositories (the pull-request check, `plan --git-base`) and a real ZooKeeper. Each test plays the
finding and its variants and checks the mechanism, not the one reproduction:

* 5: partition counts are bounded per topic, per cluster (partitions and replicas) and per load, in
  validation, before any replica assignment exists (the assignment functions are made to fail if called);
* 7: hostile numbers in any numeric config and quota, and quota names ZooKeeper cannot hold, are validation
  errors at the manifest line in `validate` and `plan`; hostile numbers in live znodes never crash a plan;
* 10: the PR check refuses manifests over the operator's aggregate bounds before parsing past them;
* 11: values of keys Kafka cannot type (custom keys a plugin reads) never appear in a plan, `describe`, an
  import, the inventory rows or an impact report.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import git
import pytest
from kazoo.client import KazooClient

from reconciler.model import BrokerRegistration
from reconciler.zk import layout
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import plant

# values of custom keys in the live cluster: the leak scan of the whole run looks for them in every output
LDAP_PW = plant("lk-ldap-bind-pw-5t7y")
S3_SECRET = plant("lk-rsm-s3-secret-9q2w")
TOPIC_CUSTOM = plant("lk-topic-custom-value-4e6r")
QUOTA_CUSTOM = plant("lk-quota-custom-value-1z3x")
HOSTILE = {"retention.ms": ".inf", "segment.ms": "Infinity", "max.compaction.lag.ms": "1e400",
           "min.compaction.lag.ms": "-.inf", "min.cleanable.dirty.ratio": ".nan",
           "delete.retention.ms": "9" * 3_000, "file.delete.delay.ms": "'" + "9" * 5_000 + "'",
           "min.insync.replicas": "'" + "0" * 5_000 + "9" * 30 + "'", "max.message.bytes": "!!float 0x" + "f" * 400}
BROKER_HOSTILE = {"log.cleaner.io.max.bytes.per.second": "1e400", "num.io.threads": "'" + "9" * 5_000 + "'",
                  "background.threads": "'²'", "log.cleaner.threads": "-.inf",
                  "sasl.login.refresh.buffer.seconds": "99999999999999999999999"}


def cluster_yaml(name: str, connect: str, brokers: str = "[1, 2, 3]") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"}}
          brokers: {brokers}
        """)


def topics_yaml(topics: dict[str, str]) -> str:
    body = "".join(f"    {name}: {entry}\n" for name, entry in topics.items())
    return f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{}}\nspec:\n  topics:\n{body}"


def brokers_yaml(config: dict[str, str], static: str | None = None) -> str:
    lines = "".join(f"    {k}: {v}\n" for k, v in config.items())
    extra = f"  static: {{file: {static}}}\n" if static else ""
    return f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: default}}\nspec:\n{extra}  config:\n{lines}"


def quotas_yaml(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Quotas\nmeta: {{}}\nspec:\n{textwrap.indent(body, '  ')}"


@pytest.fixture
def no_limits_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOPIC_PARTITIONS", "CLUSTER_PARTITIONS", "CLUSTER_REPLICAS", "PARTITIONS", "MANIFEST_BYTES",
                 "DOCUMENTS", "ENTITIES"):
        monkeypatch.delenv(f"RECONCILER_MAX_{name}", raising=False)
        monkeypatch.delenv(f"RECONCILER_PR_MAX_{name}", raising=False)
    for name in ("RECONCILER_ZK_ALLOWED_HOSTS", "RECONCILER_ZK_ALLOWED_HOSTS_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_assignment(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every placement the plan would compute is recorded; the tests of refused counts expect none."""
    import reconciler.diff.topics as topics

    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(kwargs.get("seed")))
        raise AssertionError("a replica assignment was computed for counts validation should have refused")

    monkeypatch.setattr(topics, "assign_replicas", refuse)
    monkeypatch.setattr(topics, "assign_new_partitions", refuse)
    return calls


def pr_repo(root: Path, connect: str) -> git.Repo:
    """main: cluster a (one small topic); the test commits its pull request on branch `feature`."""
    repo = make_repo(root)
    orders = topics_yaml({"orders": "{partitions: 3, replicationFactor: 3}"})
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", connect), "clusters/a/topics.yaml": orders})
    repo.git.checkout("-b", "feature")
    return repo


def pr_check(capsys: pytest.CaptureFixture[str], root: Path, fmt: str = "markdown") -> tuple[int, str, str]:
    return invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", fmt)


def registered(client: KazooClient, brokers: tuple[int, ...] = (1, 2, 3)) -> None:
    for broker in brokers:
        reg = BrokerRegistration(broker, (f"PLAINTEXT://b{broker}:9092",), {"PLAINTEXT": "PLAINTEXT"}, None)
        client.create(layout.broker_path(broker), layout.encode_broker_registration(reg), makepath=True)


# --- finding 5: partition counts ----------------------------------------------------------------------------


@pytest.mark.usefixtures("no_limits_env")
def test_a_pr_asking_for_huge_partition_counts_is_refused_at_its_line_before_any_assignment(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, no_assignment: list[str],
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered(zk_client)
    root = tmp_path / "m"
    repo = pr_repo(root, zk_connect)
    # the reproduction, and its variants: a topic over the per-topic bound (int32 max, then just over the
    # default), in an existing cluster and in a cluster new in the PR (planned offline)
    for count in ("2147483647", "10001"):
        commit(repo, f"partitions {count}", {
            "clusters/a/topics.yaml": topics_yaml({"orders": "{partitions: 3, replicationFactor: 3}",
                                                    "huge": f"{{partitions: {count}, replicationFactor: 3}}"}),
            "clusters/n/cluster.yaml": cluster_yaml("n", zk_connect),
            "clusters/n/topics.yaml": topics_yaml({"big": f"{{partitions: {count}, replicationFactor: 1}}"})})
        code, out, err = pr_check(capsys, root)
        assert code == 1
        assert "clusters/a/topics.yaml:7:" in out + err and "clusters/n/topics.yaml:6:" in out + err
        assert "RECONCILER_MAX_TOPIC_PARTITIONS" in out + err and "Traceback" not in err
    # many topics under the per-topic bound, over the cluster's (lowered here: the test stays small)
    monkeypatch.setenv("RECONCILER_MAX_CLUSTER_PARTITIONS", "100")
    many = {f"t{i}": "{partitions: 30, replicationFactor: 1}" for i in range(5)}
    commit(repo, "many topics", {"clusters/a/topics.yaml": topics_yaml(many), "clusters/n/cluster.yaml": None,
                                 "clusters/n/topics.yaml": None})
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_MAX_CLUSTER_PARTITIONS" in out + err
    assert "clusters/a/topics.yaml:9:" in out + err  # t3: 120 > 100, where the bound is crossed
    # partitions x replication factor
    monkeypatch.delenv("RECONCILER_MAX_CLUSTER_PARTITIONS")
    monkeypatch.setenv("RECONCILER_MAX_CLUSTER_REPLICAS", "50")
    commit(repo, "replicas", {"clusters/a/topics.yaml": topics_yaml({"r": "{partitions: 20, replicationFactor: 3}"})})
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_MAX_CLUSTER_REPLICAS" in out + err and "replicationFactor" in out + err
    assert no_assignment == []
    # within the bounds the same check plans (and places the replicas): the bounds are what refused above
    monkeypatch.delenv("RECONCILER_MAX_CLUSTER_REPLICAS")
    monkeypatch.undo()
    code, out, err = pr_check(capsys, root)
    assert code == 0, err


@pytest.mark.usefixtures("no_limits_env")
def test_topics_without_a_count_get_num_partitions_and_are_bounded_by_it(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, no_assignment: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`num.partitions` from a static server.properties is what a topic without `partitions:` is created with:
    the bound applies to it, at the line of the properties file."""
    registered(zk_client)
    root = tmp_path / "m"
    repo = pr_repo(root, zk_connect)
    commit(repo, "defaults", {"clusters/a/brokers.yaml": brokers_yaml({"log.retention.ms": 3600000},
                                                                        "server.properties"),
                              "clusters/a/server.properties": "broker.id=1\nnum.partitions=2147483647\n",
                              "clusters/a/topics.yaml": topics_yaml({"plain": "{replicationFactor: 1}"})})
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "num.partitions" in out + err and "clusters/a/server.properties:2" in out + err
    assert no_assignment == []


@pytest.mark.usefixtures("no_limits_env")
def test_the_partitions_of_every_cluster_a_pr_check_loads_are_bounded(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    no_assignment: list[str],
) -> None:
    """Each cluster under its own bounds, all of them over the PR check's (RECONCILER_PR_MAX_PARTITIONS);
    `validate` (not a PR check) has the higher RECONCILER_MAX_PARTITIONS."""
    root = tmp_path / "m"
    repo = pr_repo(root, zk_connect)
    monkeypatch.setenv("RECONCILER_PR_MAX_PARTITIONS", "100")
    files: dict[str, str | None] = {}
    for name in ("n1", "n2", "n3"):
        files[f"clusters/{name}/cluster.yaml"] = cluster_yaml(name, f"{zk_connect}/{name}")  # a target each
        files[f"clusters/{name}/topics.yaml"] = topics_yaml({"t": "{partitions: 40, replicationFactor: 1}"})
    commit(repo, "three new clusters", files)
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_PR_MAX_PARTITIONS" in out + err
    assert "clusters/n3/topics.yaml:6:" in out + err and no_assignment == []
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err


# --- finding 7: hostile numbers and names ---------------------------------------------------------------


@pytest.mark.usefixtures("no_limits_env")
def test_hostile_numbers_are_validation_errors_at_their_line_in_validate_and_plan(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    registered(zk_client)
    root = tmp_path / "m"
    cluster = root / "clusters" / "a"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(cluster_yaml("a", zk_connect))
    config = ", ".join(f"{k}: {v}" for k, v in HOSTILE.items())
    entry = f"{{partitions: 1, replicationFactor: 1, config: {{{config}}}}}"
    (cluster / "topics.yaml").write_text(topics_yaml({"t": entry}))
    (cluster / "brokers.yaml").write_text(brokers_yaml(BROKER_HOSTILE))
    (cluster / "quotas.yaml").write_text(quotas_yaml(
        "users:\n  alice: {producer_byte_rate: .inf, request_percentage: 1e400}\n"
        "clients:\n  app: {controller_mutation_rate: .nan, consumer_byte_rate: '" + "9" * 5_000 + "'}\n"))
    for command in (["validate"], ["plan", "a"], ["validate", "--format", "json"]):
        code, out, err = invoke(capsys, "--repo", str(root), *command)
        assert code == 1 and "Traceback" not in err and "Error" not in err.split(":")[0]
        text = out + err
        if "json" in command:
            problems = json.loads(out)["diagnostics"]
            keyed = {p["key"] for p in problems if p["severity"] == "error"}
        else:
            keyed = {k for k in [*HOSTILE, *BROKER_HOSTILE] if f"[{k}]" in text}
        # every hostile value but the zero-padded one (`000…0999…9` is a valid INT for Java) is an error
        expected = ({*HOSTILE, *BROKER_HOSTILE} - {"min.insync.replicas"})
        assert expected <= keyed, expected - keyed
        for key in ("producer_byte_rate", "request_percentage", "controller_mutation_rate", "consumer_byte_rate"):
            assert key in text
        assert "9" * 100 not in text  # a 5,000-digit value is shown shortened


@pytest.mark.usefixtures("no_limits_env")
def test_quota_names_zookeeper_cannot_hold_are_refused_before_apply(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    """Kafka's Sanitizer URL-encodes user and client names but keeps '.', so '.', '..' and '' are no znode
    name; the manifest is refused at its line, and nothing is written (apply never starts)."""
    registered(zk_client)
    root = tmp_path / "m"
    cluster = root / "clusters" / "a"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(cluster_yaml("a", zk_connect))
    for body, line in (("users:\n  '.': {producer_byte_rate: 1024}\n", 6),
                       ("clients:\n  '..': {producer_byte_rate: 1024}\n", 6),
                       ("users:\n  '': {producer_byte_rate: 1024}\n", 6),
                       ("userClients:\n  alice:\n    '..': {producer_byte_rate: 1024}\n", 7)):
        (cluster / "quotas.yaml").write_text(quotas_yaml(body))
        for command in (["validate"], ["plan", "a", "--out", str(tmp_path / "plan.json")]):
            code, _, err = invoke(capsys, "--repo", str(root), *command)
            assert code == 1 and f"clusters/a/quotas.yaml:{line}:" in err and "Sanitizer" in err, err
            assert "Traceback" not in err
        assert not (tmp_path / "plan.json").exists()
    assert not zk_client.exists("/config/users") and not zk_client.exists("/config/clients")
    # names Kafka's Sanitizer does encode are fine: '/' and '%' and a leading dot
    (cluster / "quotas.yaml").write_text(quotas_yaml("users:\n  'a/b': {producer_byte_rate: 1024}\n"
                                                     "clients:\n  '.hidden': {producer_byte_rate: 1024}\n"))
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err


@pytest.mark.usefixtures("no_limits_env")
def test_hostile_numbers_in_live_znodes_never_crash_a_plan(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str],
) -> None:
    """ZooKeeper contents are untrusted too: live values that no parser should meet whole."""
    registered(zk_client)
    zk_client.create("/config/brokers/<default>", layout.encode_entity_config(
        {"log.retention.ms": "9" * 5_000, "num.io.threads": "²", "min.insync.replicas": "Infinity",
         "log.cleaner.threads": "1e400", "num.network.threads": "-" + "9" * 4_400}), makepath=True)
    zk_client.create("/config/topics/orders", layout.encode_entity_config(
        {"retention.ms": "Infinity", "min.insync.replicas": "9" * 5_000}), makepath=True)
    zk_client.create("/brokers/topics/orders", layout.encode_topic_assignment({0: [1, 2, 3]}), makepath=True)
    root = tmp_path / "m"
    cluster = root / "clusters" / "a"
    cluster.mkdir(parents=True)
    (cluster / "cluster.yaml").write_text(cluster_yaml("a", zk_connect))
    (cluster / "brokers.yaml").write_text(brokers_yaml({"log.retention.ms": 604800000, "num.io.threads": 8,
                                                        "log.cleaner.threads": 2, "num.network.threads": 3}))
    (cluster / "topics.yaml").write_text(topics_yaml(
        {"orders": "{partitions: 1, replicationFactor: 3, config: {retention.ms: 3600000, min.insync.replicas: 2}}"}))
    for fmt in ("text", "json", "markdown"):
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--format", fmt)
        assert code == 0 and "Traceback" not in err, err
        assert "log.retention.ms" in out and "min.insync.replicas" in out
    code, out, err = invoke(capsys, "--repo", str(root), "describe", "a", "brokers/<default>", "--format", "json")
    assert code == 0 and "Traceback" not in err, err


# --- finding 10: manifest size --------------------------------------------------------------------------


@pytest.mark.usefixtures("no_limits_env")
def test_a_pr_check_refuses_manifests_over_the_aggregate_bounds_before_parsing_past_them(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import reconciler.manifests.repo as repo_module

    parsed: list[str] = []
    real_load_file = repo_module.load_file

    def recording(path: Path, display: str | None = None, kinds: frozenset[str] | None = None) -> Any:
        parsed.append(display or str(path))
        return real_load_file(path, display, kinds)

    monkeypatch.setattr(repo_module, "load_file", recording)
    root = tmp_path / "m"
    repo = pr_repo(root, zk_connect)
    topics = {f"t{i}": "{partitions: 1, replicationFactor: 1}" for i in range(40)}
    commit(repo, "four files of topics", {f"clusters/a/topics-{i}.yaml": topics_yaml(
        {f"f{i}-{n}": e for n, e in topics.items()}) for i in range(4)})
    # entities: 3 + 40 + 40 > 80 in the third file; the fourth is never read
    monkeypatch.setenv("RECONCILER_PR_MAX_ENTITIES", "80")
    parsed.clear()
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_PR_MAX_ENTITIES" in out + err and "clusters/a/topics-1.yaml:1:" in out + err
    assert "clusters/a/topics-3.yaml" not in parsed and "clusters/a/topics.yaml" not in parsed
    # the trusted tier is not the PR check's: `validate` loads the same repository
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err
    # bytes: checked on the file's size, before reading it
    monkeypatch.delenv("RECONCILER_PR_MAX_ENTITIES")
    size = sum((root / "clusters" / "a" / n).stat().st_size for n in ("cluster.yaml", "topics-0.yaml"))
    monkeypatch.setenv("RECONCILER_PR_MAX_MANIFEST_BYTES", str(size + 10))
    parsed.clear()
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_PR_MAX_MANIFEST_BYTES" in out + err
    assert "clusters/a/topics-1.yaml" not in parsed  # refused on its size: never parsed
    # documents: a file of many small documents
    monkeypatch.delenv("RECONCILER_PR_MAX_MANIFEST_BYTES")
    monkeypatch.setenv("RECONCILER_PR_MAX_DOCUMENTS", "20")
    many = "---\n".join(brokers_yaml({"log.retention.ms": 3600000}).replace("default", str(b)) for b in (1, 2, 3))
    commit(repo, "documents", {"clusters/a/docs.yaml": "---\n".join([many] * 10)})
    code, out, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_PR_MAX_DOCUMENTS" in out + err and "Traceback" not in err
    # a setting that is no number is an error naming it
    monkeypatch.setenv("RECONCILER_PR_MAX_DOCUMENTS", "lots")
    code, _, err = pr_check(capsys, root)
    assert code == 1 and "RECONCILER_PR_MAX_DOCUMENTS" in err and "Traceback" not in err


# --- finding 11: values of keys of unknown type ------------------------------------------------------------


@pytest.fixture
def custom_keys(zk_client: KazooClient) -> None:
    registered(zk_client)
    zk_client.create("/config/brokers/<default>", layout.encode_entity_config(
        {"log.retention.ms": "86400000", "ldap.bind.pw": LDAP_PW, "rsm.config.s3.secret.access.key": S3_SECRET}),
        makepath=True)
    zk_client.create("/config/topics/orders", layout.encode_entity_config(
        {"retention.ms": "3600000", "x.custom.token": TOPIC_CUSTOM}), makepath=True)
    zk_client.create("/brokers/topics/orders", layout.encode_topic_assignment({0: [1, 2, 3]}), makepath=True)
    zk_client.create("/config/users/alice", layout.encode_entity_config(
        {"producer_byte_rate": "1024", "custom_quota_secret": QUOTA_CUSTOM}), makepath=True)


def _no_custom_values(text: str) -> None:
    for value in (LDAP_PW, S3_SECRET, TOPIC_CUSTOM, QUOTA_CUSTOM):
        assert value not in text


@pytest.mark.usefixtures("no_limits_env", "custom_keys")
def test_custom_key_values_stay_out_of_the_pr_comment_and_plan_files(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """Declaring brokers/<default> owns it: the live custom keys are removed, shown as (sensitive)."""
    root = tmp_path / "m"
    repo = pr_repo(root, zk_connect)
    commit(repo, "declare the defaults", {
        "clusters/a/brokers.yaml": brokers_yaml({"log.retention.ms": 3600000}),
        "clusters/a/topics.yaml": topics_yaml({"orders": "{partitions: 1, replicationFactor: 3, "
                                                         "config: {retention.ms: 7200000}}"}),
        "clusters/a/quotas.yaml": quotas_yaml("users:\n  alice: {producer_byte_rate: 2048}\n")})
    for fmt in ("markdown", "json", "text"):
        code, out, err = pr_check(capsys, root, fmt)
        assert code == 0, err
        _no_custom_values(out + err)
        assert "ldap.bind.pw" in out and "x.custom.token" in out and "custom_quota_secret" in out
    code, out, err = invoke(capsys, "--repo", str(root), "plan", "a", "--format", "json")
    removals = {c["key"]: c for p in json.loads(out)["plans"] for e in p["entities"] for c in e["changes"]
                if c["op"] == "-"}
    assert {removals[k]["sensitive"] for k in ("ldap.bind.pw", "rsm.config.s3.secret.access.key",
                                               "x.custom.token", "custom_quota_secret")} == {True}


@pytest.mark.usefixtures("no_limits_env", "custom_keys")
def test_describe_import_and_the_inventory_hide_custom_key_values(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str],
) -> None:
    from reconciler.impact.html import render_html
    from reconciler.impact.report import render_json, render_markdown
    from reconciler.impact.snapshot import collect_rows
    from reconciler.manifests.validate import load_and_validate

    # import: the custom keys are not written; a plan on the import is still empty (policy.ignoreKeys)
    out_root = tmp_path / "imported"
    code, out, err = invoke(capsys, "import", "a", "--zookeeper", zk_connect, "--out", str(out_root),
                            "--kafka-version", "3.6")
    assert code == 0, err
    written = "".join(p.read_text() for p in (out_root / "clusters" / "a").glob("*.yaml"))
    _no_custom_values(out + err + written)
    assert "ldap.bind.pw" in written and "ignoreKeys" in written
    code, out, err = invoke(capsys, "--repo", str(out_root), "plan", "a", "--detailed-exitcode")
    assert code == 0, out + err
    # describe: every layer, text and JSON
    for args in (["brokers/<default>", "ldap.bind.pw", "--format", "json"], ["brokers/<default>"],
                 ["topics/orders", "--format", "json"], ["users/alice"]):
        code, out, err = invoke(capsys, "--repo", str(out_root), "describe", "a", *args)
        assert code == 0, err
        _no_custom_values(out + err)
    # the inventory rows a snapshot writes (without Spark: the rows themselves)
    _, states, _ = load_and_validate(out_root, ["a"])
    rows = collect_rows(states, out_root, parallel=1)
    stored = {(r[3], r[4]) for r in rows["configs"]}
    assert ("ldap.bind.pw", "(sensitive)") in stored and ("x.custom.token", "(sensitive)") in stored
    assert ("custom_quota_secret", "(sensitive)") in stored and ("log.retention.ms", "86400000") in stored
    _no_custom_values(repr(rows))
    # the impact reports, from a summary carrying a live value of such a key
    summary = _summary(before=S3_SECRET)
    for text in (render_json(summary), render_markdown(summary), render_html(summary)):
        _no_custom_values(text)
        assert "rsm.config.s3.secret.access.key" in text


def _summary(before: str) -> dict[str, Any]:
    change = {"cluster": "a", "broker": "<default>", "key": "rsm.config.s3.secret.access.key", "before": before,
              "after": None, "risk": "disruptive"}
    return {
        "inventory": {"clusters": 1, "brokers": 3, "topics": 1, "partitions": 1}, "clusters": ["a"],
        "clustersAffected": 1, "brokersAffected": 3, "topicsAffected": 0, "partitionsAffected": 0,
        "bytesAffected": None, "topicsByRisk": {"disruptive": 0}, "byKey": [], "byCluster": [], "byRule": [],
        "missingClusters": [], "topicsCreated": 0, "partitionIncreases": 0, "topicChanges": [],
        "topicChangesTotal": 0, "brokerChanges": [change], "brokerChangesTotal": 1,
    }
