"""Issue 28 (second security review), findings 2, 3, 4 and 8, against a real ZooKeeper, logging TCP proxies and
real git repositories.

2. No line of output, on any stream, in any format, can be a GitHub workflow command unless the tool wrote it
   as one: a cluster directory, a file name, a commit subject or an audit field read from ZooKeeper that
   starts with `::` (after spaces, ANSI escapes or a CR) or holds `##[cmd]` is neutralized by the one sink
   behind stdout and stderr (`cli/plain.CommandSafeStream` applying `render.github.neutralize`).
3. The allow-list matches exactly the hosts kazoo dials: `10.1.2.3@127.0.0.1:PORT` and its variants are
   refused before any socket is opened (the proxy sees no connection), at validation with the manifest line.
4. The reconciler's znodes are never inside a Kafka namespace of any chroot on the ensemble: a reconcilerPath
   or chroot with a Kafka root as a component is refused at validation, at connect, and where the lock and
   audit znodes are created; nothing is written under the other cluster's `/brokers/ids`.
8. A set-but-empty allow-list refuses every host, with a message, and connects to nothing.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import textwrap
import traceback
import warnings
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import click
import git
import pytest
from kazoo.client import KazooClient

from reconciler.allowlist import NotAllowedError
from reconciler.cli.context import configure_logging
from reconciler.cli.plain import CommandSafeStream, command_safe_stdio, write_workflow_command
from reconciler.errors import RefusedError
from reconciler.model import ZooKeeperSpec
from reconciler.render.github import annotation, neutralize
from reconciler.zk.audit import write_audit
from reconciler.zk.lock import cluster_lock
from reconciler.zk.session import ZooKeeperError, close, connect
from reconciler.zk.write import ApplyOptions
from tests.conftest import ZkServer
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import ZK_CREDENTIALS
from tests.tcpproxy import LoggingProxy, logging_proxy

# --- the runner, as far as these tests need it -------------------------------------------------------------

# actions/runner: a line (split at LF, CR, CRLF) is a command when after TrimStart it starts with `::` (v2), or
# when `##[NAME ...]` names a registered command anywhere in it (v1). We also strip ANSI escapes first, in
# case a log viewer does: the stricter reading.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_V1 = re.compile(r"##\[(add-mask|set-output|save-state|add-path|set-env|add-matcher|remove-matcher|warning|"
                 r"error|notice|debug|group|endgroup|echo|stop-commands)[\] ]", re.IGNORECASE)
# The only commands the tool writes: an annotation whose properties and message are escaped.
_OURS = re.compile(r"::(error|warning|notice)( file=[^,:]*(,line=\d+)?(,col=\d+)?(,title=[^,:]*)?)?::.*")


def runner_commands(text: str) -> list[str]:
    lines = re.split(r"\r\n|\r|\n", text)
    return [line for line in lines if _ANSI.sub("", line).lstrip().startswith("::") or _V1.search(line)]


def injected(text: str) -> list[str]:
    """Commands the runner would execute that are not the tool's own annotations."""
    return [c for c in runner_commands(text) if not _OURS.fullmatch(c)]


# Directory names, file names and commit subjects a pull request controls.
EVIL_DIRS = [
    "::add-mask::lkmask1",
    "::error file=a::b",
    "  ::stop-commands::lktoken",
    "\x1b[31m::add-mask::lkmask2",
    "x ##[add-mask]lkmask3",
    "##[set-output name=a]b",
    "x\n::add-mask::lkmask4",
    "x\r::set-output name=lk::v",
    "x%0A::add-mask::lkmask5",
]
EVIL_SUBJECT = "::add-mask::lkmask6\n\n##[set-output name=s]t\n::warning::subject"


def cluster_yaml(name: str, connect: str, zookeeper_extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: Cluster
        meta: {{name: {json.dumps(name)}}}
        spec:
          kafkaVersion: "3.6"
          zookeeper: {{connect: "{connect}"{zookeeper_extra}}}
          brokers: [1]
        """)


TOPICS = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Topics
    meta: {}
    spec:
      topics:
        orders: {partitions: 1, replicationFactor: 1, config: {retention.ms: 3600000}}
    """)


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LK_ZK_AUTH", ZK_CREDENTIALS)
    for name in ("RECONCILER_ZK_ALLOWED_HOSTS", "RECONCILER_ZK_ALLOWED_HOSTS_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def proxy(zk_server: ZkServer) -> Iterator[LoggingProxy]:
    with logging_proxy(("127.0.0.1", zk_server.port)) as proxy:
        yield proxy


def pr_repo(root: Path, connect: str) -> git.Repo:
    """main: cluster a (on `connect`); feature: a retention change, a file and directories with evil names."""
    repo = make_repo(root)
    commit(repo, "cluster a", {"clusters/a/cluster.yaml": cluster_yaml("a", connect), "clusters/a/topics.yaml": TOPICS})
    repo.git.checkout("-b", "feature")
    files = {"clusters/a/topics.yaml": TOPICS.replace("3600000", "7200000"),
             "clusters/a/::add-mask::lkmask7.yaml": TOPICS.replace("orders", "audit")}
    for name in EVIL_DIRS:
        files[f"clusters/{name}/cluster.yaml"] = cluster_yaml("x", "127.0.0.1:1/x")
    commit(repo, EVIL_SUBJECT, files)
    return repo


# --- finding 2: one sink, every line -----------------------------------------------------------------------


PR_RUNS = [
    ["plan", "--git-base", "main", "--format", "github"],
    ["plan", "--git-base", "main", "--format", "markdown"],
    ["plan", "--git-base", "main", "--format", "text"],
    ["plan", "--git-base", "main", "--format", "json"],
    ["-v", "-v", "plan", "--git-base", "main", "--format", "github"],
    ["validate", "--format", "github"],
    ["validate", "--format", "json"],
    ["-v", "validate"],
]


def test_pr_text_cannot_become_a_workflow_command_in_any_command_or_format(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "manifests"
    pr_repo(root, zk_connect)
    seen = ""
    for args in PR_RUNS:
        code, out, err = invoke(capsys, "--repo", str(root), *args)
        assert code in (0, 1, 2), (args, err)
        assert injected(out) == [] and injected(err) == [], (args, injected(out + "\n" + err))
        seen += out + err
    # the hostile names were printed (escaped), so the check above had something to catch
    assert "\\u003a:add-mask::lkmask1" in seen and "##\\u005badd-mask]lkmask3" in seen
    # and the tool's own annotations still reach the runner, one per problem
    assert any(_OURS.fullmatch(c) for c in runner_commands(seen))


def test_without_the_sink_the_same_run_injects_commands(
    tmp_path: Path, zk_connect: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above can fail: with the sink removed, `plan --git-base` writes runnable commands."""
    root = tmp_path / "manifests"
    pr_repo(root, zk_connect)
    monkeypatch.setattr("reconciler.cli.main.command_safe_stdio", nullcontext)
    _, out, err = invoke(capsys, "--repo", str(root), "plan", "--git-base", "main", "--format", "github")
    assert injected(out + "\n" + err)


def test_plan_apply_describe_and_reconcile_output_carries_no_command(
    tmp_path: Path, zk_connect: str, zk_client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """Manifest file names, audit fields read from ZooKeeper (anyone with write access controls them) and
    -v logs, through plan, apply, describe and reconcile."""
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, EVIL_SUBJECT, {"clusters/a/cluster.yaml": cluster_yaml("a", zk_connect),
                                "clusters/a/::add-mask::lkmask8.yaml": TOPICS,
                                "clusters/a/##[add-mask]lkmask9.yaml": TOPICS.replace("orders", "audit")})
    record = {"planId": "::add-mask::lkmask10", "cluster": "a", "revision": "##[add-mask]lkmask11", "time": "t",
              "user": "::set-output name=x::y", "counts": {}, "result": "::error::applied"}
    zk_client.create("/reconciler/audit/entry-", json.dumps(record).encode(), sequence=True, makepath=True)
    runs = [
        ["-v", "plan", "a", "--out", str(tmp_path / "plan.json")],
        ["-v", "-v", "apply", str(tmp_path / "plan.json"), "--auto-approve"],
        ["describe", "a", "topics/orders", "retention.ms"],
        ["describe", "a", "topics/audit", "retention.ms", "--format", "json"],
        ["-v", "reconcile", "--once", "--dry-run"],
        ["reconcile", "--once", "--dry-run", "--format", "json"],
    ]
    for args in runs:
        code, out, err = invoke(capsys, "--repo", str(root), *args)
        assert code in (0, 2), (args, err)
        assert injected(out) == [] and injected(err) == [], (args, injected(out + "\n" + err))


def test_the_sink_neutralizes_every_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    """click, print, logging (the CLI's handler), warnings, rich, a traceback, and writes that split a
    command across calls: only `write_workflow_command` writes a command."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    root = logging.getLogger()
    handlers = list(root.handlers)
    with command_safe_stdio():
        configure_logging(1)
        click.echo("::add-mask::a1")
        click.echo("ok\n  ::add-mask::a2\r::add-mask::a3", err=True)
        print("##[add-mask]a4", file=sys.stderr)
        logging.getLogger("reconciler").warning("cluster %s", "x\n::add-mask::a5")
        logging.getLogger("reconciler").warning("::add-mask::a6")
        sys.stderr.write(warnings.formatwarning("x\n::add-mask::a7", UserWarning, "f.py", 1))  # what warn() writes
        from rich.console import Console

        Console(file=sys.stderr, force_terminal=True, color_system="standard").print("::add-mask::a8", style="red")
        try:
            raise KeyError("\n::add-mask::a9")
        except KeyError:
            traceback.print_exc()
        for part in (" ", ":", ":add-mask::a10\n", "x #", "#", "[add-mask]a11\n", "\x1b[3", "1m::", "add-mask::a12\n"):
            sys.stderr.write(part)
            sys.stderr.flush()
        write_workflow_command(annotation("error", "::add-mask::a13", file="::x", line=1))
        sys.stderr.write("end ::")  # an unfinished line is written when the sink closes
    root.handlers[:] = handlers
    text = out.getvalue() + err.getvalue()
    assert injected(text) == [], injected(text)
    assert [c for c in runner_commands(text)] == ["::error file=%3A%3Ax,line=1::::add-mask::a13"]
    for n in range(1, 13):
        assert f"a{n}" in text  # everything was written, escaped
    assert text.endswith("end ::")


def test_neutralize_changes_nothing_else() -> None:
    for text in ("plain line\n", "a::b\n", "key: value:: x\n", "# heading\n", "[x] ##\n", ""):
        assert neutralize(text) == text
    stream = io.StringIO()
    sink = CommandSafeStream(stream)
    sink.write("Type yes to apply: ")
    sink.flush()
    assert stream.getvalue() == "Type yes to apply: "  # a prompt is not held back


# --- finding 3: the allow-list matches what is dialled -----------------------------------------------------


BYPASSES = [
    "10.1.2.3@{proxy}{chroot}",
    "10.1.2.3:2181@{proxy}{chroot}",
    "10.1.2.3%40x@{proxy}{chroot}",
    "{proxy}?@10.1.2.3{chroot}",
    "{proxy}#@10.1.2.3{chroot}",
    "10.1.2.3,{proxy} {chroot}",
    "10.1.2.3:2181,,{proxy}{chroot}",
]


@pytest.mark.parametrize("form", BYPASSES)
def test_url_syntax_cannot_reach_a_host_outside_the_allow_list(
    tmp_path: Path, zk_chroot: str, proxy: LoggingProxy, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, form: str,
) -> None:
    connect_string = form.format(proxy=proxy.address, chroot=zk_chroot)
    root = tmp_path / "manifests"
    commit(make_repo(root), "a", {"clusters/a/cluster.yaml": cluster_yaml(
        "a", connect_string, ", auth: {scheme: digest, credentials: {env: LK_ZK_AUTH}}"),
        "clusters/a/topics.yaml": TOPICS})
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", "10.1.2.*")
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and "cluster.yaml:6:" in err and "[connect]" in err  # at the connect line
    for args in (["plan", "a"], ["apply", "a", "--auto-approve"], ["reconcile", "--once"],
                 ["import", "x", "--zookeeper", connect_string, "--out", str(tmp_path / "imp")]):
        code, _, err = invoke(capsys, "--repo", str(root), *args)
        assert code == 1, (args, err)
    with pytest.raises(NotAllowedError):
        close(connect(ZooKeeperSpec(connect_string), connect_timeout_s=2))
    assert proxy.connections == 0 and not proxy.saw(ZK_CREDENTIALS)


def test_an_allowed_host_is_dialled_through_the_string_that_was_checked(
    tmp_path: Path, zk_chroot: str, proxy: LoggingProxy, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", f"127.0.0.1:{proxy.port}")
    client = connect(ZooKeeperSpec(f"127.0.0.1:{proxy.port:05d}/{zk_chroot.strip('/')}//"), connect_timeout_s=10)
    try:
        assert client.hosts == [("127.0.0.1", proxy.port)] and client.chroot == zk_chroot
        assert client.exists("/") is not None
    finally:
        close(client)
    assert proxy.connections >= 1


# --- finding 8: a set-but-empty allow-list -----------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "  ", ",", " ,\t, "])
def test_a_set_but_empty_allow_list_connects_to_nothing(
    tmp_path: Path, zk_chroot: str, proxy: LoggingProxy, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, value: str,
) -> None:
    root = tmp_path / "manifests"
    commit(make_repo(root), "a", {"clusters/a/cluster.yaml": cluster_yaml("a", f"{proxy.address}{zk_chroot}"),
                                  "clusters/a/topics.yaml": TOPICS})
    monkeypatch.setenv("RECONCILER_ZK_ALLOWED_HOSTS", value)
    for args in (["plan", "a"], ["apply", "a", "--auto-approve"], ["reconcile", "--once"]):
        code, _, err = invoke(capsys, "--repo", str(root), *args)
        assert code == 1 and "RECONCILER_ZK_ALLOWED_HOSTS" in err and "names no host" in err, (args, err)
    assert proxy.connections == 0
    monkeypatch.delenv("RECONCILER_ZK_ALLOWED_HOSTS")  # unset: allowed, as docs/security.md says
    code, _, err = invoke(capsys, "--repo", str(root), "plan", "a")
    assert code == 0, err
    assert proxy.connections >= 1


# --- finding 4: never inside a Kafka namespace of any chroot -----------------------------------------------


def other_cluster(zk_client_root: KazooClient, chroot: str) -> list[str]:
    """A cluster `pad` at `chroot` with one registered broker; returns its /brokers/ids children."""
    zk_client_root.create(f"{chroot}/brokers/ids/1", b'{"version":5,"host":"pad","port":9092}', makepath=True)
    zk_client_root.ensure_path(f"{chroot}/config/changes")
    return sorted(zk_client_root.get_children(f"{chroot}/brokers/ids"))


@pytest.fixture
def root_client(zk_server: ZkServer) -> Iterator[KazooClient]:
    client = connect(ZooKeeperSpec(zk_server.connect, session_timeout_s=10.0), connect_timeout_s=15.0)
    yield client
    close(client)


@pytest.mark.parametrize("relative", ["pad/brokers/ids", "pad/config/changes", "pad/brokers", "pad/admin/x",
                                      "pad/controller", "pad/kafka-acl-changes", "pad/feature", "pad/x/cluster"])
def test_a_reconciler_path_in_another_clusters_namespace_is_refused_everywhere(
    tmp_path: Path, zk_server: ZkServer, zk_chroot: str, root_client: KazooClient,
    capsys: pytest.CaptureFixture[str], relative: str,
) -> None:
    """The finding: a chroot-less connect string and reconcilerPath /<chroot>/pad/brokers/ids."""
    brokers = other_cluster(root_client, f"{zk_chroot}/pad")
    path = f"{zk_chroot}/{relative}"
    root = tmp_path / "manifests"
    commit(make_repo(root), "a", {
        "clusters/a/cluster.yaml": cluster_yaml("a", zk_server.connect, f", reconcilerPath: {path}"),
        "clusters/a/topics.yaml": TOPICS})
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and "cluster.yaml:6:" in err and "[reconcilerPath]" in err, err
    for args in (["apply", "a", "--auto-approve"], ["reconcile", "--once"]):
        code, _, err = invoke(capsys, "--repo", str(root), *args)
        assert code == 1, (args, err)
    with pytest.raises(Exception, match="Kafka owns"):  # the writer's own check, whatever validated it
        ApplyOptions(reconciler_path=path)
    assert sorted(root_client.get_children(f"{zk_chroot}/pad/brokers/ids")) == brokers
    assert not root_client.exists(f"{zk_chroot}/pad/brokers/ids/lock")
    assert not root_client.exists("/config/topics/orders")  # nothing written at the ensemble's root either


def test_a_chroot_inside_another_clusters_namespace_is_refused(
    tmp_path: Path, zk_server: ZkServer, zk_chroot: str, root_client: KazooClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    brokers = other_cluster(root_client, f"{zk_chroot}/pad")
    connect_string = f"{zk_server.connect}{zk_chroot}/pad/brokers/ids"
    root = tmp_path / "manifests"
    commit(make_repo(root), "a", {"clusters/a/cluster.yaml": cluster_yaml("a", connect_string),
                                  "clusters/a/topics.yaml": TOPICS})
    code, _, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and "cluster.yaml:6:" in err and "[connect]" in err, err
    for args in (["apply", "a", "--auto-approve"], ["import", "x", "--zookeeper", connect_string, "--out",
                                                    str(tmp_path / "imp")]):
        code, _, err = invoke(capsys, "--repo", str(root), *args)
        assert code == 1, (args, err)
    with pytest.raises(ZooKeeperError):
        close(connect(ZooKeeperSpec(connect_string), connect_timeout_s=5))
    assert sorted(root_client.get_children(f"{zk_chroot}/pad/brokers/ids")) == brokers


def test_lock_and_audit_refuse_a_kafka_namespace_at_apply_time(
    zk_server: ZkServer, zk_chroot: str, root_client: KazooClient
) -> None:
    """What validation refuses at the manifest line, the lock and the audit writer refuse again, on the
    server-side path (the client's chroot + the path): a caller that skipped validation writes nothing."""
    brokers = other_cluster(root_client, f"{zk_chroot}/pad")
    client = connect(ZooKeeperSpec(f"{zk_server.connect}{zk_chroot}"), connect_timeout_s=15.0)
    try:
        with pytest.raises(RefusedError), cluster_lock(client, "/pad/brokers/ids/lock", b"{}", 1.0, "a"):
            pass
        with pytest.raises(RefusedError):
            write_audit(client, "/pad/brokers/ids", {"x": 1}, lambda _p: [], None)
        with cluster_lock(client, "/pad/reconciler/lock", b"{}", 1.0, "a") if client.ensure_path(
                "/pad/reconciler/lock") else nullcontext():
            pass  # beside the namespace, under the same chroot: allowed
    finally:
        close(client)
    assert sorted(root_client.get_children(f"{zk_chroot}/pad/brokers/ids")) == brokers
