"""The invariant of issue 38, as a property: for any pull request, every write the scheduled apply of the merged
`main` makes to any cluster appears in the PR check's plan, attributed to the cluster whose target it lands on, or
the check fails. Real git, a real ZooKeeper; Hypothesis generates the pull requests.

Each example: a fleet of two clusters (`a`, `b`, each in its own chroot with three registered brokers) plus a
chroot holding state no cluster directory manages (`stray`), applied on `main`. A pull request then makes a few
changes drawn from what reviewers met in the third security review and its variants: config, topics, policies
that delete topics or prune ACLs, broad grants, labels and fleet defaults, a secret file's content, a new
directory on a fresh, a managed (spelled several ways) or a stray target, a rename, a connect string moved onto
another cluster. The PR check runs as the template runs it (`plan --git-base main`, no encoder secret). If it
passes, the branch is merged and `reconcile --once --allow-destructive` (the most a scheduled apply may write)
runs with the production secrets; every znode it changed under the clusters' chroots (configs, topics, topic
deletions, ACLs; not the reconciler's own state) must be one of the PR plan's changes for that chroot.
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reconciler.model import AclEntry, BrokerRegistration
from reconciler.zk import layout
from reconciler.zk.acls import decode_acls, encode_acls
from tests.conftest import ZkServer
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import ENCODER_SECRET, plant

PASSWORD = plant("lk-invariant-pw-5n2q")
OTHER_PASSWORD = plant("lk-invariant-pw2-7c4v")
KEY = "listener.name.internal.ssl.key.password"
WATCHED = ("/config", "/brokers/topics", "/admin/delete_topics", "/kafka-acl", "/kafka-acl-extended")
IGNORED = ("/config/changes",)


def cluster_yaml(name: str, connect: str, labels: str, policy: str = "", meta: str = "", zk_extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {name}, labels: {{{labels}}}{meta}}}
        spec:
          kafkaVersion: "3.9"
          zookeeper: {{connect: "{connect}"{zk_extra}}}
          passwordEncoder: {{secret: {{env: LK_INV_ENCODER}}}}
          brokers: [1, 2, 3]
        """) + (f"  policy: {policy}\n" if policy else "")


def topics_yaml(topics: dict[str, int]) -> str:
    lines = "".join(f"    {name}: {{partitions: 1, replicationFactor: 3, config: {{retention.ms: {ms}}}}}\n"
                    for name, ms in sorted(topics.items()))
    return "apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n" + (lines or "    {}\n")


def brokers_yaml(defaults: dict[str, str], password: bool) -> str:
    body = "".join(f"    {k}: \"{v}\"\n" for k, v in sorted(defaults.items())) or "    {}\n"
    text = f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: default}}\nspec:\n  config:\n{body}"
    if password:
        text += ("---\napiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: 1}\nspec:\n  config:\n"
                 f"    {KEY}: {{secret: {{file: secrets/key.pw}}}}\n")
    return text


def acls_yaml(grants: list[tuple[str, str, str]]) -> str:
    if not grants:
        return "apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec: {resources: []}\n"
    rows = "".join(f"    - {{type: Topic, name: \"{name}\", entries: [{{principal: \"{who}\", operation: {op}}}]}}\n"
                   for name, who, op in grants)
    return "apiVersion: reconciler/v1\nkind: Acls\nmeta: {}\nspec:\n  resources:\n" + rows


FLEET = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: FleetDefaults
    meta: {{name: prod}}
    spec:
      selector: {{labels: {{env: prod}}}}
      brokerDefaults: {{log.cleaner.threads: {threads}}}
    """)


@dataclass
class Cluster:
    name: str
    chroot: str
    labels: str = "env: prod"
    policy: str = ""
    meta: str = ""
    topics: dict[str, int] = field(default_factory=lambda: {"orders": 86400000, "events": 604800000})
    defaults: dict[str, str] = field(default_factory=lambda: {"num.io.threads": "8"})
    grants: list[tuple[str, str, str]] = field(default_factory=lambda: [("orders", "User:alice", "Read")])
    password: str | None = None
    extra_host: bool = False  # the connect string names one more host of the same ensemble first
    dns_alias: bool = False  # `localhost` for 127.0.0.1, and its own reconcilerPath: no static check sees it

    def files(self, connect: str) -> dict[str, str | None]:
        base = f"clusters/{self.name}"
        connect = f"127.0.0.9:1,{connect}" if self.extra_host else connect
        connect = connect.replace("127.0.0.1", "localhost") if self.dns_alias else connect
        zk_extra = ", reconcilerPath: /elsewhere" if self.dns_alias else ""
        out: dict[str, str | None] = {
            f"{base}/cluster.yaml": cluster_yaml(self.name, connect, self.labels, self.policy, self.meta, zk_extra),
            f"{base}/topics.yaml": topics_yaml(self.topics),
            f"{base}/acls.yaml": acls_yaml(self.grants),
        }
        if self.defaults or self.password is not None:  # no brokers/<default> document: nothing of it owned
            out[f"{base}/brokers.yaml"] = brokers_yaml(self.defaults, self.password is not None)
        if self.password is not None:
            out[f"{base}/secrets/key.pw"] = self.password + "\n"
        return out


# --- what a pull request does ------------------------------------------------------------------------------

Change = tuple[str, Any]  # (kind, argument)

CHANGES = st.one_of(
    st.tuples(st.just("retention"), st.tuples(st.sampled_from("ab"), st.sampled_from([3600000, 60000, -1]))),
    st.tuples(st.just("add-topic"), st.sampled_from("ab")),
    st.tuples(st.just("drop-topic"), st.sampled_from("ab")),
    st.tuples(st.just("delete-topics-policy"), st.sampled_from("ab")),
    st.tuples(st.just("broker-default"), st.tuples(st.sampled_from("ab"), st.sampled_from(["4", "16", None]))),
    st.tuples(st.just("broad-grant"), st.sampled_from("ab")),
    st.tuples(st.just("prune-acls"), st.sampled_from("ab")),
    st.tuples(st.just("relabel"), st.sampled_from("ab")),
    st.tuples(st.just("fleet"), st.sampled_from([1, 3])),
    st.tuples(st.just("secret-file"), st.just("a")),
    st.tuples(st.just("new-cluster"), st.sampled_from(["fresh", "alias", "alias-respelled", "alias-extra-host",
                                                      "alias-dns", "stray"])),
    st.tuples(st.just("rename"), st.sampled_from("ab")),
    st.tuples(st.just("move-connect"), st.sampled_from("ab")),
)


@dataclass
class Fleet:
    zk: str  # host:port
    root: str  # the example's own chroot
    clusters: dict[str, Cluster]
    fleet_threads: int = 2

    def connect(self, chroot: str) -> str:
        return f"{self.zk}{self.root}/{chroot}"

    def files(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {"clusters/fleet.yaml": FLEET.format(threads=self.fleet_threads)}
        for c in self.clusters.values():
            out.update(c.files(self.connect(c.chroot)))
        return out


def apply_change(fleet: Fleet, change: Change) -> None:
    kind, arg = change
    named = arg[0] if isinstance(arg, tuple) else arg
    if kind not in ("fleet", "new-cluster") and named not in fleet.clusters:
        return  # renamed away by an earlier change
    if kind == "retention":
        name, ms = arg
        fleet.clusters[name].topics["orders"] = ms
    elif kind == "add-topic":
        fleet.clusters[arg].topics["added"] = 3600000
    elif kind == "drop-topic":
        fleet.clusters[arg].topics.pop("events", None)
    elif kind == "delete-topics-policy":
        fleet.clusters[arg].policy = "{allowDestructive: true, deleteTopics: ['*']}"
    elif kind == "broker-default":
        name, value = arg
        if value is None:
            fleet.clusters[name].defaults.pop("num.io.threads", None)
        else:
            fleet.clusters[name].defaults["num.io.threads"] = value
    elif kind == "broad-grant":
        fleet.clusters[arg].grants.append(("*", "User:mallory", "All"))
    elif kind == "prune-acls":
        fleet.clusters[arg].policy = "{pruneAcls: true, allowDestructive: true}"
        fleet.clusters[arg].grants = []
    elif kind == "relabel":
        fleet.clusters[arg].labels = "env: dev"
    elif kind == "fleet":
        fleet.fleet_threads = arg
    elif kind == "secret-file":
        fleet.clusters["a"].password = OTHER_PASSWORD
    elif kind == "new-cluster":
        chroot = {"fresh": f"fresh-{len(fleet.clusters)}", "stray": "stray"}.get(arg, "a")
        new = Cluster(f"n{len(fleet.clusters)}", chroot, labels="env: dev",
                      policy="{allowDestructive: true, deleteTopics: ['*'], pruneAcls: true, prune: true}",
                      topics={}, defaults={"num.io.threads": "16"}, grants=[("*", "User:mallory", "All")])
        fleet.clusters[new.name] = new
        new.chroot = "a/" if arg == "alias-respelled" else new.chroot
        new.extra_host = arg == "alias-extra-host"
        new.dns_alias = arg == "alias-dns"
        if arg == "alias-dns":  # additions only: a grant the comment shows, under the new name
            new.policy, new.defaults = "", {}
    elif kind == "rename":
        old = fleet.clusters.pop(arg)
        renamed = Cluster(f"{arg}-renamed", old.chroot, old.labels, old.policy, ", renamedFrom: " + arg,
                          old.topics, old.defaults, old.grants, old.password)
        fleet.clusters[renamed.name] = renamed
    elif kind == "move-connect":
        other = "b" if arg == "a" else "a"
        if arg in fleet.clusters and other in fleet.clusters:
            fleet.clusters[arg].chroot = fleet.clusters[other].chroot


# --- what ZooKeeper holds -----------------------------------------------------------------------------------


def dump(client: KazooClient, top: str) -> dict[str, bytes]:
    """Every znode under the watched paths of each chroot below `top`: path (relative to `top`) -> data."""
    out: dict[str, bytes] = {}

    def walk(path: str) -> None:
        try:
            data, _ = client.get(path)
            children = client.get_children(path)
        except NoNodeError:
            return
        out[path[len(top):]] = data or b""
        for child in children:
            walk(f"{path}/{child}")

    for chroot in client.get_children(top):
        for watched in WATCHED:
            walk(f"{top}/{chroot}{watched}")
    return {p: d for p, d in out.items() if not any(f"/{p.split('/')[1]}{i}" in p for i in IGNORED)}


def writes(before: dict[str, bytes], after: dict[str, bytes]) -> set[tuple[str, str, str, str]]:
    """(chroot, what, key, value) for every change: config keys set/removed, topics created/grown, topic
    deletions requested, ACL entries added/removed."""
    out: set[tuple[str, str, str, str]] = set()
    for path in sorted(set(before) | set(after)):
        chroot, rest = path.split("/", 2)[1], "/" + path.split("/", 2)[2]
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if rest.startswith("/config/") and rest.count("/") >= 3:
            entity = rest[len("/config/"):]
            a = json.loads(old)["config"] if old else {}
            b = json.loads(new)["config"] if new else {}
            for key in sorted(set(a) | set(b)):
                if key not in b:
                    out.add((chroot, entity, key, "-"))
                elif a.get(key) != b[key]:
                    out.add((chroot, entity, key, b[key] if "password" not in key and "SCRAM" not in key else "*"))
            if old and not new:
                out.add((chroot, entity, "", "deleted"))
        elif rest.startswith("/brokers/topics/") and rest.count("/") == 3:
            topic = rest.rsplit("/", 1)[1]
            partitions = len(json.loads(new)["partitions"]) if new else 0
            out.add((chroot, f"topics/{topic}", "", "created" if old is None else f"partitions={partitions}"))
        elif rest.startswith("/admin/delete_topics/"):
            out.add((chroot, f"topics/{rest.rsplit('/', 1)[1]}", "", "delete"))
        elif rest.startswith(("/kafka-acl/", "/kafka-acl-extended/")) and rest.count("/") >= 3:
            a = decode_acls(old, path) if old else frozenset()
            b = decode_acls(new, path) if new else frozenset()
            resource = rest.split("/", 2)[2]
            out |= {(chroot, f"acl:{resource}", e.display, "+") for e in b - a}
            out |= {(chroot, f"acl:{resource}", e.display, "-") for e in a - b}
    return out


def shown(plans: list[dict[str, Any]], targets: dict[str, str]) -> set[tuple[str, str, str, str]]:
    """The same tuples for what the PR plans show, each under the chroot its cluster's target is."""
    out: set[tuple[str, str, str, str]] = set()
    for p in plans:
        chroot = targets[p["cluster"]]
        for e in p["entities"]:
            entity = e["path"]  # EntityRef.path: `brokers/1`, `users/alice/clients/app` (as under /config)
            for c in e["changes"]:
                value = "-" if c["op"] == "-" else ("*" if c["sensitive"] else c["after"])
                out.add((chroot, entity, c["key"], value))
            if e.get("deleteEntity"):
                out.add((chroot, entity, "", "deleted"))
        for t in p["topicsToCreate"]:
            out.add((chroot, f"topics/{t['name']}", "", "created"))
            out |= {(chroot, f"topics/{t['name']}", k, v) for k, v in t["config"].items()}
        out |= {(chroot, f"topics/{g['name']}", "", f"partitions={g['target']}") for g in p["partitionIncreases"]}
        out |= {(chroot, f"topics/{d['name']}", "", "delete") for d in p.get("topicsToDelete", [])}
        for a in p.get("acls", []):
            r = a["resource"]
            resource = (f"{r['type']}/{r['name']}" if r["pattern"] == "LITERAL"
                        else f"prefixed/{r['type']}/{r['name']}")
            for sign, entries in (("+", a["add"]), ("-", a["remove"])):
                for e in entries:
                    entry = AclEntry(e["principal"], e["host"], e["operation"], e["permission"])
                    out.add((chroot, f"acl:{resource}", entry.display, sign))
    return out


# --- the example ------------------------------------------------------------------------------------------


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("RECONCILER_ZK_ALLOWED_HOSTS", "RECONCILER_ZK_ALLOWED_HOSTS_FILE"):
        monkeypatch.delenv(name, raising=False)
    yield


def _registered(client: KazooClient, chroot: str) -> None:
    for broker in (1, 2, 3):
        reg = BrokerRegistration(broker, (f"PLAINTEXT://b{broker}:9092",), {"PLAINTEXT": "PLAINTEXT"}, None)
        client.create(f"{chroot}{layout.broker_path(broker)}", layout.encode_broker_registration(reg), makepath=True)


def run_example(zk_server: ZkServer, workdir: Path, changes: list[Change], capsys: pytest.CaptureFixture[str],
                monkeypatch: pytest.MonkeyPatch) -> None:
    top = f"/inv-{uuid.uuid4().hex[:10]}"
    client = KazooClient(hosts=zk_server.connect, timeout=10)
    client.start(timeout=15)
    try:
        for chroot in ("a", "b", "stray", *(f"fresh-{i}" for i in range(2, 8))):
            _registered(client, f"{top}/{chroot}")
        # state that no cluster directory manages: a topic with its config, a client quota, an ACL
        stray = f"{top}/stray"
        client.create(f"{stray}/config/topics/precious", layout.encode_entity_config({"retention.ms": "-1"}),
                      makepath=True)
        client.create(f"{stray}{layout.topic_path('precious')}", layout.encode_topic_assignment({0: [1, 2, 3]}),
                      makepath=True)
        client.create(f"{stray}/config/clients/legacy-app", layout.encode_entity_config(
            {"producer_byte_rate": "1048576"}), makepath=True)
        client.create(f"{stray}/kafka-acl/Topic/precious", encode_acls([AclEntry("User:bob", "*", "Read", "Allow")]),
                      makepath=True)
        fleet = Fleet(zk_server.connect, top, {"a": Cluster("a", "a", password=PASSWORD), "b": Cluster("b", "b")})
        root = workdir / f"repo-{uuid.uuid4().hex[:6]}"
        repo = make_repo(root)
        commit(repo, "main", fleet.files())
        monkeypatch.setenv("LK_INV_ENCODER", ENCODER_SECRET)
        code, _out, err = invoke(capsys, "--repo", str(root), "reconcile", "--once", "--audit-log",
                                 str(workdir / "audit.jsonl"))
        assert code == 0, err
        before = dump(client, top)
        base_chroots = {c.name: c.chroot for c in fleet.clusters.values()}
        repo.git.checkout("-b", "feature")
        old_files = fleet.files()
        for change in changes:
            apply_change(fleet, change)
        new_files = fleet.files()
        delta = {p: t for p, t in new_files.items() if old_files.get(p) != t}
        delta.update({p: None for p in old_files if p not in new_files})
        commit(repo, "pull request", delta)
        _drop_empty_dirs(root)
        monkeypatch.delenv("LK_INV_ENCODER")  # the PR job: no encoder secret (the template's default)
        code, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "json")
        if code == 1:
            return  # the check failed, saying why: the invariant holds by failing
        assert code == 0, err
        plans = json.loads(out)["plans"]
        targets = attribution(fleet, base_chroots)
        for p in plans:
            assert p["cluster"] in targets
        repo.git.checkout("main")
        repo.git.merge("--no-ff", "-m", "merge", "feature")
        _drop_empty_dirs(root)
        monkeypatch.setenv("LK_INV_ENCODER", ENCODER_SECRET)
        invoke(capsys, "--repo", str(root), "reconcile", "--once", "--allow-destructive", "--audit-log",
               str(workdir / "audit.jsonl"))
        written = writes(before, dump(client, top))
        unshown = written - shown(plans, targets)
        assert not unshown, (changes, sorted(unshown), [e for p in plans for e in p["entities"]])
    finally:
        client.stop()
        client.close()


def attribution(fleet: Fleet, base: dict[str, str]) -> dict[str, str]:
    """The chroot a cluster's plan is an account of: a cluster of the base (or one renamed from it) speaks for
    the base's target; a new cluster for its own target, unless that is a base cluster's (then it speaks for no
    target: what lands there must be shown under the base cluster's name)."""
    owned = {chroot.rstrip("/"): name for name, chroot in base.items()}
    out: dict[str, str] = {}
    for c in fleet.clusters.values():
        continues = c.name if c.name in base else (c.meta.split("renamedFrom: ")[-1] if "renamedFrom" in c.meta
                                                   else None)
        chroot = c.chroot.rstrip("/")
        if continues in base:
            out[c.name] = base[continues].rstrip("/")
        else:
            out[c.name] = chroot if chroot not in owned else f"{chroot} (claimed by {c.name}, owned by {owned[chroot]})"
    return out


def _drop_empty_dirs(root: Path) -> None:
    for path in sorted((root / "clusters").rglob("*"), key=lambda p: -len(p.parts)):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


@pytest.mark.usefixtures("env")
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(CHANGES, min_size=1, max_size=4))
@example([("new-cluster", "alias")])  # finding 1
@example([("new-cluster", "stray")])  # a first apply onto state no directory manages
@example([("new-cluster", "alias-dns")])  # another name for a managed host, its own reconcilerPath
@example([("new-cluster", "fresh"), ("broad-grant", "a")])  # finding 2: a new cluster's grants
@example([("secret-file", "a")])  # finding 5
@example([("relabel", "a"), ("fleet", 3)])  # finding 9 and fleet defaults
@example([("rename", "a"), ("retention", ("a", 60000))])
@example([("move-connect", "b"), ("delete-topics-policy", "b")])
def test_what_the_merged_main_writes_is_in_the_pr_comment(
    zk_server: ZkServer, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, changes: list[Change],
) -> None:
    run_example(zk_server, tmp_path_factory.mktemp("inv"), changes, capsys, monkeypatch)
