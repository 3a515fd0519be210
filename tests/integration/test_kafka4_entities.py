"""Kafka 4.x entities on a real KRaft Kafka 4.1.1 node (issue 41): group configs (KIP-848), client-metrics
subscriptions (KIP-714) and feature levels, each planned, applied, verified (`apply --verify`), shown by Kafka's own
tools (kafka-configs.sh's `ConfigCommand`, kafka-features.sh's `FeatureCommand`), in sync on the next plan, drift
reported after an outside change, imported into manifests that plan no changes, and refused to be lowered without
--allow-downgrade."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from reconciler.kraft.admin import DELETE, KraftAdmin
from reconciler.kraft.features import finalized_levels
from reconciler.kraft.groups import CLIENT_METRICS, GROUP
from reconciler.model import FEATURES_ENTITY, AdminClientSpec
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.integration.test_kraft_backend import KRAFT_CLUSTER
from tests.kraftbrokers import REPO, KraftCluster


def kafka_tool(main: str, kraft: KraftCluster, *args: str) -> str:
    """One of Kafka's own command-line tools (the 4.1.1 jars of kafka/pom-4.xml), its stdout."""
    libs = subprocess.run(["bash", "scripts/kafka-jars.sh", "--pom", "kafka/pom-4.xml"], cwd=REPO, check=True,
                          capture_output=True, text=True, timeout=900).stdout.strip()
    done = subprocess.run(["java", "-cp", f"{libs}/*", main, "--bootstrap-server", kraft.bootstrap, *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def config_command(kraft: KraftCluster, *args: str) -> str:
    return kafka_tool("kafka.admin.ConfigCommand", kraft, *args)


def feature_levels(kraft: KraftCluster) -> dict[str, str]:
    """`kafka-features.sh describe`: feature -> FinalizedVersionLevel, as FeatureCommand prints it."""
    out = kafka_tool("org.apache.kafka.tools.FeatureCommand", kraft, "describe")
    levels = {}
    for line in out.splitlines():
        fields = dict(part.split(": ", 1) for part in line.split("\t") if ": " in part)
        if "Feature" in fields:
            levels[fields["Feature"]] = fields["FinalizedVersionLevel"]
    return levels


def documents(group: str, subscription: str, share: int, session_ms: int = 50000) -> dict[str, str]:
    return {"k4.yaml": f"""apiVersion: reconciler/v1
kind: Groups
meta: {{}}
spec:
  groups:
    {group}: {{consumer.session.timeout.ms: {session_ms}, consumer.heartbeat.interval.ms: 6000}}
---
apiVersion: reconciler/v1
kind: ClientMetrics
meta: {{}}
spec:
  subscriptions:
    {subscription}:
      metrics: [org.apache.kafka.producer.node.request.latency, org.apache.kafka.consumer.fetch.manager]
      interval.ms: 30000
      match: {{client_software_name: apache-kafka-java, client_id: "orders-.*"}}
---
apiVersion: reconciler/v1
kind: Features
meta: {{}}
spec:
  features:
    metadata.version: "4.1"
    group.version: 1
    share.version: {share}
"""}


@pytest.fixture
def allow_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", "127.0.0.1")


@pytest.mark.usefixtures("allow_local")
def test_groups_client_metrics_and_features_on_kafka_4_1(kraft4: KraftCluster, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    group, sub = f"orders-{uuid.uuid4().hex[:6]}", f"latency-{uuid.uuid4().hex[:6]}"
    repo = make_repo(tmp_path / "manifests")
    root = Path(repo.working_tree_dir or ".")
    # its own state topic: the shared node's default one records cluster k1 as its owner (ownership.py)
    state = f", stateTopic: _kr-k4-{uuid.uuid4().hex[:6]}"
    cluster = KRAFT_CLUSTER.format(name="k4", version="4.1", bootstrap=kraft4.bootstrap, extra=state)
    files = {"clusters/k4/cluster.yaml": cluster,
             **{f"clusters/k4/{n}": t for n, t in documents(group, sub, share=1).items()}}
    commit(repo, "Kafka 4.x entities", files)
    admin = KraftAdmin(AdminClientSpec((kraft4.bootstrap,)), None, request_timeout_s=30.0)
    assert finalized_levels(admin)["share.version"] == 0  # a fresh 4.1.1 node: share groups not enabled
    base = ("--repo", str(root))

    code, out, err = invoke(capsys, *base, "plan", "k4", "--format", "json", "--detailed-exitcode")
    assert code == 2, err
    plan = json.loads(out)["plans"][0]
    changes = {(e["entity"]["type"], e["entity"]["name"], c["key"]): c for e in plan["entities"]
               for c in e["changes"]}
    assert changes[("groups", group, "consumer.session.timeout.ms")]["after"] == "50000"
    match = "client_software_name=apache-kafka-java,client_id=orders-.*"
    assert changes[("client-metrics", sub, "match")]["after"] == match
    share = changes[("features", FEATURES_ENTITY, "share.version")]
    assert (share["op"], share["before"], share["after"], share["risk"]) == ("~", "0", "1", "disruptive")
    assert ("features", FEATURES_ENTITY, "metadata.version") not in changes  # already 4.1-IV1

    code, _, err = invoke(capsys, *base, "apply", "k4", "--auto-approve", "--verify")
    assert code == 0, err
    assert "verified: every broker took every change" in err

    # Kafka's own tools show what was applied
    shown = config_command(kraft4, "--describe", "--entity-type", "groups", "--entity-name", group)
    assert "consumer.session.timeout.ms=50000" in shown and "consumer.heartbeat.interval.ms=6000" in shown
    shown = config_command(kraft4, "--describe", "--entity-type", "client-metrics", "--entity-name", sub)
    assert "interval.ms=30000" in shown and f"match={match}" in shown
    assert "metrics=org.apache.kafka.producer.node.request.latency,org.apache.kafka.consumer.fetch.manager" in shown
    assert feature_levels(kraft4)["share.version"] == "1"

    code, _, err = invoke(capsys, *base, "plan", "k4", "--detailed-exitcode")
    assert code == 0, err  # in sync

    # a change made outside the reconciler is drift, dated from the last apply
    config_command(kraft4, "--alter", "--entity-type", "groups", "--entity-name", group,
                   "--add-config", "consumer.session.timeout.ms=55000")
    code, out, err = invoke(capsys, *base, "reconcile", "k4", "--once", "--dry-run", "--format", "json",
                            "--audit-log", str(tmp_path / "audit.jsonl"))
    (report,) = json.loads(out)["clusters"]
    drifted = {(i["entity"], i["key"]): i for i in report["drift"]["items"]}
    item = drifted[(f"groups/{group}", "consumer.session.timeout.ms")]
    assert (item["expected"], item["live"]) == ("50000", "55000"), report

    # import (`reconciler import --bootstrap-servers`): the live entities written as manifests, a plan on them empty
    imported = tmp_path / "imported"
    code, _, err = invoke(capsys, "--repo", str(imported), "import", "k4i", "--bootstrap-servers", kraft4.bootstrap,
                          "--kafka-version", "4.1")
    assert code == 0 and "checked: a plan on the imported manifests shows no changes" in err, err
    written = imported / "clusters" / "k4i"
    assert f"{group}:" in (written / "groups.yaml").read_text()
    subscriptions = (written / "client-metrics.yaml").read_text()
    assert f"{sub}:" in subscriptions and "client_id: orders-.*" in subscriptions
    levels = (written / "features.yaml").read_text()
    assert "metadata.version: 4.1-IV1" in levels and "share.version: 1" in levels
    code, out, err = invoke(capsys, "--repo", str(imported), "plan", "k4i", "--detailed-exitcode")
    assert code == 0 and "No changes." in out, err

    # lowering a level needs --allow-downgrade; sent with it, the controller takes the safe downgrade
    commit(repo, "share groups off", {f"clusters/k4/{n}": t for n, t in documents(group, sub, share=0).items()})
    code, _, err = invoke(capsys, *base, "apply", "k4", "--auto-approve")
    assert code != 0 and "--allow-downgrade" in err
    assert finalized_levels(admin)["share.version"] == 1  # nothing sent
    code, _, err = invoke(capsys, *base, "apply", "k4", "--auto-approve", "--allow-downgrade", "--verify")
    assert code == 0, err
    assert feature_levels(kraft4)["share.version"] == "0"

    # leave the shared node as it was: the group config and the subscription removed
    for rtype, name, keys in ((GROUP, group, ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")),
                              (CLIENT_METRICS, sub, ("metrics", "interval.ms", "match"))):
        assert admin.alter_configs(rtype, name, [(k, DELETE, None) for k in keys], validate_only=False) is None
    admin.close()
