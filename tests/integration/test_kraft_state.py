"""The KRaft backend's state in the cluster, on a real Kafka 4.1 node (`kraft4`): what an apply records is read
by a plan on another machine; two applies serialise on the lease and the loser names the holder; a killed
applier's lease is taken over and audited; the README's two-mechanism SCRAM user applies and verifies; a
refusal in the middle of the writes is reported exactly and the next plan and apply finish the job. What
counts is what Kafka reports (kafka-python's Admin client and a plain consumer of the state topic), never our
own read-back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePatternFilter,
    ResourceType,
)

from kafka import KafkaConsumer, TopicPartition
from tests.integration.brokerrepo import cli
from tests.integration.test_kraft_backend import admin, kraft_repo
from tests.kraftbrokers import KraftCluster

REPO = Path(__file__).resolve().parents[2]

README_SCRAM = """apiVersion: reconciler/v1
kind: Quotas
meta: {{}}
spec:
  users:
    {user}: {{producer_byte_rate: 1048576}}
  scramUsers:
    {user}:
      SCRAM-SHA-256: {{password: {{secret: {{env: ALICE_PW}}}}, iterations: 8192}}
      SCRAM-SHA-512: {{password: {{secret: {{file: secrets/alice.pw}}}}}}
"""


def state_records(kraft: KraftCluster, topic: str) -> list[tuple[Any, dict[str, Any] | None]]:
    """Every record of the state topic, as a plain read_committed consumer sees it."""
    consumer = KafkaConsumer(bootstrap_servers=[kraft.bootstrap], group_id=None, enable_auto_commit=False,
                             isolation_level="read_committed")
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out = []
        while consumer.position(tp) < end:
            for batch in consumer.poll(timeout_ms=500).values():
                out += [(json.loads(m.key), json.loads(m.value) if m.value else None) for m in batch]
        return out
    finally:
        consumer.close()


def audit_entries(kraft: KraftCluster, topic: str) -> list[dict[str, Any]]:
    return [v for k, v in state_records(kraft, topic) if k[0] == "audit" and v]


@pytest.fixture
def machine_a(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process runs as "machine A": its own state home, no RECONCILER_AUDIT_LOG."""
    home = tmp_path / "machine-a"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv("RECONCILER_AUDIT_LOG", raising=False)
    monkeypatch.setenv("RECONCILER_USER", "alice@machine-a")
    return home


def scram_repo(tmp_path: Path, kraft: KraftCluster, user: str, topic: str, extra: str = "") -> Path:
    root = tmp_path / "repo"
    (root / "clusters" / "k1" / "secrets").mkdir(parents=True, exist_ok=True)
    (root / "clusters" / "k1" / "secrets" / "alice.pw").write_text("alice's 512 password")
    docs = {
        "quotas.yaml": README_SCRAM.format(user=user),
        "brokers.yaml": ("apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
                         "    listener.name.internal.ssl.key.password: {secret: {file: secrets/alice.pw}}\n"),
    }
    return kraft_repo(root, kraft, docs, extra=f", allowPlaintextPasswords: true, stateTopic: {topic}{extra}")


def test_a_fresh_machine_plans_no_changes_after_an_apply_elsewhere(
        kraft4: KraftCluster, tmp_path: Path, machine_a: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The README's two-mechanism SCRAM user applies (one AlterUserScramCredentials request per mechanism) and
    verifies; a plan on another machine, with no local file at all, shows no changes, passwords and SCRAM
    included, because the fingerprints are in the cluster's state topic (salted digests, never values)."""
    user, topic = f"alice-{uuid.uuid4().hex[:6]}", f"_kr-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("ALICE_PW", "alice's 256 password")
    root = scram_repo(tmp_path, kraft4, user, topic)
    assert cli(root, "apply", "k1", "--auto-approve", "--allow-dirty", "--verify") == 0, capsys.readouterr().err
    client = admin(kraft4.bootstrap)
    try:
        creds = client.describe_user_scram_credentials([user])[user]["credential_infos"]
        assert sorted((c["mechanism"].name, c["iterations"]) for c in creds) == [("SCRAM_SHA_256", 8192),
                                                                                 ("SCRAM_SHA_512", 4096)]
    finally:
        client.close()
    records = json.dumps(state_records(kraft4, topic))
    assert "256 password" not in records and "512 password" not in records and f'"{user}"' not in records[:0]
    # machine B: a fresh state home, nothing local
    fresh = tmp_path / "machine-b"
    monkeypatch.setenv("XDG_STATE_HOME", str(fresh))
    capsys.readouterr()
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0
    out = capsys.readouterr().out
    assert "3 unchanged (the secret's value matches the digest the last apply recorded)" in out, out
    assert not fresh.exists()
    # a new value behind the same reference is a change, seen from machine B too
    monkeypatch.setenv("ALICE_PW", "a new 256 password")
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 2


class Paused:
    """Holds an in-process apply in its first write, lease taken, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import reconciler.kraft.backend as backend

        self.entered, self.release = threading.Event(), threading.Event()
        real = backend.write

        def paused(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            assert self.release.wait(120)
            return real(*args, **kwargs)

        monkeypatch.setattr(backend, "write", paused)


def reconciler(root: Path, *args: str, env: dict[str, str] | None = None,
               timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reconciler", "--repo", str(root), "--no-color", *args],
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          check=False)


def test_two_concurrent_applies_serialise_and_the_loser_names_the_holder(
        kraft4: KraftCluster, tmp_path: Path, machine_a: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topic, name = f"_kr-{uuid.uuid4().hex[:8]}", f"ser-{uuid.uuid4().hex[:6]}"
    root = kraft_repo(tmp_path / "repo", kraft4, {"topics.yaml": (
        f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {name}:\n"
        "      partitions: 1\n      replicationFactor: 1\n      config: {retention.ms: \"86400000\"}\n")},
        extra=f", stateTopic: {topic}")
    paused = Paused(monkeypatch)
    first: dict[str, int] = {}
    holder = threading.Thread(target=lambda: first.setdefault("code", cli(root, "apply", "k1", "--auto-approve",
                                                                            "--allow-dirty")))
    holder.start()
    try:
        assert paused.entered.wait(120)
        # another machine's apply, not waiting: exit 3, naming who holds the lock, which plan, since when
        loser = reconciler(root, "apply", "k1", "--auto-approve", "--allow-dirty", "--lock-timeout", "0",
                           env={"RECONCILER_USER": "bob@machine-b", "XDG_STATE_HOME": str(tmp_path / "b")})
        assert loser.returncode == 3, loser.stderr
        assert "another apply holds the lock (state topic " in loser.stderr
        assert "alice@machine-a (host " in loser.stderr and "nothing was written" in loser.stderr
        # one that waits (another team's checkout, its own topic): it applies once the first apply is done
        other = kraft_repo(tmp_path / "repo2", kraft4, {"topics.yaml": (
            f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {name}-2:\n"
            "      partitions: 1\n      replicationFactor: 1\n")}, extra=f", stateTopic: {topic}")
        waiter = subprocess.Popen([sys.executable, "-m", "reconciler", "--repo", str(other), "--no-color", "apply",
                                   "k1", "--auto-approve", "--allow-dirty", "--lock-timeout", "90"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "RECONCILER_USER": "carol@machine-c",
                                       "XDG_STATE_HOME": str(tmp_path / "c")})
        time.sleep(10)  # it planned, and now waits for the lease
        assert waiter.poll() is None
    finally:
        paused.release.set()
        holder.join(120)
    assert first["code"] == 0
    _, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert "waiting up to 90 s for the apply lock (state topic" in err and "held by alice@machine-a" in err
    entries = audit_entries(kraft4, topic)
    assert [(e["user"], e["result"]) for e in entries] == [("alice@machine-a", "applied"),
                                                           ("carol@machine-c", "applied")]


def _held_by_a_killed_process(root: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    """An apply in another process that stops in its first write, holding the lease."""
    marker = tmp_path / "holding"
    script = (
        "import pathlib, sys, time\nimport reconciler.kraft.backend as b\n"
        f"def stuck(*a, **k):\n    pathlib.Path({str(marker)!r}).touch()\n    time.sleep(3600)\n"
        "b.write = stuck\nfrom reconciler.cli.main import run\n"
        f"sys.exit(run(['--repo', {str(root)!r}, 'apply', 'k1', '--auto-approve', '--allow-dirty']))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "RECONCILER_USER": "dave@machine-d",
                                 "XDG_STATE_HOME": str(tmp_path / "d")})
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the apply to kill never took the lease"
        time.sleep(0.2)
    return proc


def test_a_killed_appliers_lock_is_taken_over_and_audited(kraft4: KraftCluster, tmp_path: Path,
                                                          machine_a: Path) -> None:
    topic, name = f"_kr-{uuid.uuid4().hex[:8]}", f"kil-{uuid.uuid4().hex[:6]}"
    root = kraft_repo(tmp_path / "repo", kraft4, {"topics.yaml": (
        f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {name}:\n"
        "      partitions: 1\n      replicationFactor: 1\n")}, extra=f", stateTopic: {topic}")
    proc = _held_by_a_killed_process(root, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    lock = [v for k, v in state_records(kraft4, topic) if k == ["lock"]][-1]
    assert lock is not None and lock["claim"]["user"] == "dave@machine-d" and not lock.get("released")
    done = reconciler(root, "apply", "k1", "--auto-approve", "--allow-dirty", "--lock-timeout", "0")
    assert done.returncode == 0, done.stderr
    assert "took over the apply lock of dave@machine-d" in done.stderr and "no longer exists" in done.stderr
    (entry,) = audit_entries(kraft4, topic)
    assert entry["result"] == "applied" and entry["lockTakeovers"][0]["user"] == "dave@machine-d"
    client = admin(kraft4.bootstrap)
    try:
        assert name in {t["name"] for t in client.describe_topics([name]) if t["error_code"] == 0}
    finally:
        client.close()


@pytest.fixture
def competitor(kraft4: KraftCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Creates `race["topic"]` with Kafka's Admin client just before the apply's own CreateTopics is sent (after
    validateOnly accepted it): a refusal only the write itself can meet."""
    from reconciler.kraft.admin import KraftAdmin

    race: dict[str, str] = {}
    real = KraftAdmin.create_topics

    def racing(self: KraftAdmin, topics: Any, validate_only: bool) -> Any:
        if not validate_only and race.get("topic") in topics:
            other = admin(kraft4.bootstrap)
            try:
                other.create_topics([NewTopic(race.pop("topic"), 1, 1)])
            finally:
                other.close()
        return real(self, topics, validate_only)

    monkeypatch.setattr(KraftAdmin, "create_topics", racing)
    yield race


def test_a_refusal_mid_writes_is_reported_exactly_and_the_next_apply_finishes(
        kraft4: KraftCluster, tmp_path: Path, machine_a: Path, monkeypatch: pytest.MonkeyPatch,
        competitor: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    user, topic, name = f"u-{uuid.uuid4().hex[:6]}", f"_kr-{uuid.uuid4().hex[:8]}", f"mid-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("ALICE_PW", "alice's 256 password")
    root = scram_repo(tmp_path, kraft4, user, topic)
    (root / "clusters" / "k1" / "brokers.yaml").unlink()
    (root / "clusters" / "k1" / "app.yaml").write_text(
        f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {name}:\n"
        "      partitions: 2\n      replicationFactor: 1\n      config: {retention.ms: \"691200000\"}\n---\n"
        "apiVersion: reconciler/v1\nkind: Acls\nmeta: {cluster: k1}\nspec:\n  resources:\n"
        f"    - type: Topic\n      name: {name}\n      entries: [{{principal: 'User:{user}', operation: Read}}]\n")
    competitor["topic"] = name
    capsys.readouterr()
    assert cli(root, "apply", "k1", "--auto-approve", "--allow-dirty") == 1
    err = capsys.readouterr().err
    assert "the cluster refused a write; the apply stopped after that request" in err, err
    assert (f"written (3): users/{user} SCRAM-SHA-256 (set), users/{user} SCRAM-SHA-512 (set), ACL Topic:LITERAL:"
            f"{name}: Allow User:{user} Read from * (added)") in err
    assert f"refused: create topic {name}: TopicAlreadyExistsError: Topic '{name}' already exists." in err
    assert f"not written (1): quotas of users/{user} (1 key(s))" in err
    assert "next: `reconciler plan k1` shows exactly what is left" in err
    client = admin(kraft4.bootstrap)
    try:  # Kafka's view: credentials and the ACL are there, the quota is not
        assert len(client.describe_user_scram_credentials([user])[user]["credential_infos"]) == 2
        acls, _ = client.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                 ResourcePatternFilter(ResourceType.TOPIC, name,
                                                                       ACLResourcePatternType.LITERAL)))
        assert [a.principal for a in acls] == [f"User:{user}"]
    finally:
        client.close()
    (entry,) = audit_entries(kraft4, topic)
    assert entry["result"] == "failed: refused" and entry["writes"]["writtenCount"] == 3
    # the next plan shows exactly the rest: the topic as the competitor made it, and the quota
    capsys.readouterr()
    assert cli(root, "plan", "k1", "--detailed-exitcode", "--format", "json") == 2
    plan = json.loads(capsys.readouterr().out)["plans"][0]
    changed = sorted(f"{e['entity']['type']}/{e['entity']['name']} {c['key']}" for e in plan["entities"]
                     for c in e["changes"])
    assert changed == [f"topics/{name} retention.ms", f"users/{user} producer_byte_rate"], changed
    assert [p["name"] for p in plan["partitionIncreases"]] == [name]
    assert cli(root, "apply", "k1", "--auto-approve", "--allow-dirty") == 0, capsys.readouterr().err
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0, capsys.readouterr().out


def config_command(kraft: KraftCluster, *args: str) -> None:
    """Kafka's own `kafka-configs.sh` (kafka.admin.ConfigCommand from the 4.1.1 jars)."""
    libs = subprocess.run(["bash", str(REPO / "scripts" / "kafka-jars.sh"), "--pom", "kafka/pom-4.xml"],
                          capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    done = subprocess.run(["java", "-Xmx128m", "-cp", f"{libs}/*", "kafka.admin.ConfigCommand",
                           "--bootstrap-server", kraft.bootstrap, *args], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_drift_dates_the_reconcilers_change_and_flags_configcommands(
        kraft4: KraftCluster, tmp_path: Path, machine_a: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Drift since the last successful apply, on KRaft: a value a later (failed) apply wrote is dated by that
    apply's record in the state topic; a value set with Kafka's ConfigCommand is flagged as changed outside
    the reconciler; a topic deleted behind its back too."""
    from reconciler.kraft.admin import KraftAdmin
    from tests.integration.test_gitops import commit, invoke, make_repo

    topic, one, two = f"_kr-{uuid.uuid4().hex[:8]}", f"d1-{uuid.uuid4().hex[:6]}", f"d2-{uuid.uuid4().hex[:6]}"
    repo = make_repo(tmp_path / "manifests")
    root = Path(repo.working_tree_dir or ".")
    cluster = ("apiVersion: reconciler/v1\nkind: Cluster\nmeta: {name: k1}\nspec:\n  kafkaVersion: \"4.1\"\n"
               f"  kraft: {{bootstrapServers: \"{kraft4.bootstrap}\", stateTopic: {topic}}}\n  brokers: [1]\n")

    def topics(retention: str, with_two: bool) -> str:
        text = (f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{name: app}}\nspec:\n  topics:\n    {one}:\n"
                "      partitions: 1\n      replicationFactor: 1\n"
                f"      config: {{retention.ms: \"{retention}\", max.message.bytes: \"2097152\"}}\n")
        return text + (f"    {two}:\n      partitions: 1\n      replicationFactor: 1\n" if with_two else "")

    # the shared node holds other tests' topics: an operator's apply takes it over for this state topic (the
    # scheduled reconcile never first-applies to a cluster that is not new: ownership.py)
    commit(repo, "rev0", {"clusters/k1/cluster.yaml": cluster, "clusters/k1/topics.yaml": topics("604800000", True)})
    assert invoke(capsys, "--repo", str(root), "apply", "k1", "--auto-approve")[0] == 0
    commit(repo, "rev1", {"clusters/k1/topics.yaml": topics("691200000", True)})
    code, out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--format", "json")
    assert code == 0 and json.loads(out)["clusters"][0]["status"] == "applied", err
    # rev2 changes one retention and deletes the other topic; someone deletes that topic first: the apply's
    # last request (DeleteTopics) is refused, after the retention was written
    policy = cluster.replace("  brokers: [1]\n", f"  brokers: [1]\n  policy: {{deleteTopics: [\"{two}\"]}}\n")
    commit(repo, "rev2", {"clusters/k1/cluster.yaml": policy, "clusters/k1/topics.yaml": topics("777600000", False)})
    real = KraftAdmin.delete_topics

    def racing(self: KraftAdmin, names: Any) -> Any:
        other = admin(kraft4.bootstrap)
        try:
            other.delete_topics(list(names))
        finally:
            other.close()
        time.sleep(2)
        return real(self, names)

    monkeypatch.setattr(KraftAdmin, "delete_topics", racing)
    monkeypatch.setenv("RECONCILER_USER", "bob@machine-b")
    code, _, err = invoke(capsys, "--repo", str(root), "apply", "k1", "--auto-approve", "--allow-destructive")
    assert code == 1 and f"refused: delete topic {two}" in err, err
    monkeypatch.undo()
    monkeypatch.setenv("XDG_STATE_HOME", str(machine_a))
    # someone changes a managed value with Kafka's own tool
    config_command(kraft4, "--alter", "--entity-type", "topics", "--entity-name", one,
                   "--add-config", "max.message.bytes=3000000")
    code, out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--dry-run", "--format", "json")
    drift = json.loads(out)["clusters"][0]["drift"]
    assert drift["since"]["user"].startswith("alice@machine-a") and drift["note"] is None, drift
    items = {(i["entity"], i["key"]): i for i in drift["items"]}
    retention = items[(f"topics/{one}", "retention.ms")]
    assert (retention["expected"], retention["live"]) == ("691200000", "777600000")
    assert retention["by"].startswith("the reconciler: failed: refused apply ") and "by bob@machine-b" in \
        retention["by"] and retention["modified"], retention
    by_hand = items[(f"topics/{one}", "max.message.bytes")]
    assert (by_hand["live"], by_hand["by"].split(" (")[0]) == ("3000000", "outside the reconciler"), by_hand
    assert items[(f"topics/{two}", "(topic)")]["by"].startswith("outside the reconciler")


def test_a_store_read_again_fetches_only_what_came_since_and_sees_what_a_fresh_reader_sees(
        kraft4: KraftCluster) -> None:
    """kraft/state.py keeps the records it has read and fetches only the later ones: after writes by this store and
    by another writer (replacing keys, a tombstone), its state is the one a fresh reader of the topic folds, and a
    second read fetched only the records written since."""
    from reconciler.kraft.admin import KraftAdmin
    from reconciler.kraft.state import TopicStore
    from reconciler.kraft.statedata import Record
    from reconciler.model import AdminClientSpec

    topic = f"_state-incr-{uuid.uuid4().hex[:6]}"
    spec = AdminClientSpec(tuple(kraft4.bootstrap.split(",")))
    with KraftAdmin(spec, request_timeout_s=15.0) as one, KraftAdmin(spec, request_timeout_s=15.0) as two:
        ours, other = TopicStore(one, topic, "k1"), TopicStore(two, topic, "k1")  # type: ignore[arg-type]
        ours.transact(lambda _s: [Record(json.dumps(["written", "topics/a", f"k{i}"]), {"value": str(i)})
                                  for i in range(50)])
        assert len(ours.read().written) == 50
        fetched: list[int] = []
        real = TopicStore._fetch

        def counted(self: TopicStore) -> Any:
            got = real(self)
            fetched.append(len(got))
            return got

        other.transact(lambda _s: [Record(json.dumps(["written", "topics/a", "k0"]), {"value": "new"}),
                                   Record(json.dumps(["written", "topics/a", "k1"]), None),
                                   Record(json.dumps(["written", "topics/b", "x"]), {"value": "1"})])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(TopicStore, "_fetch", counted)
            again = ours.read()
        fresh = TopicStore(two, topic, "k1").read()
        assert fetched == [3]  # the three records since, not the 53 of the log
        assert again.written == fresh.written and len(fresh.written) == 50  # k1 gone, b/x added, k0 replaced
        assert again.written[("topics/a", "k0")] == fresh.written[("topics/a", "k0")]
        assert ("topics/a", "k1") not in again.written and ("topics/b", "x") in again.written
