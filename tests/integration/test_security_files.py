"""Issue 12, findings 2, 9 and 10 (file paths): every file a manifest names or the walk finds is confined to
the repository (symlinks resolved), regular and bounded; diagnostics never echo another file's content.

A real git repository (a committed symlink is what a pull request can carry) and the real command line.
"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from reconciler.errors import SecretError
from reconciler.model import Secret, SecretRef
from reconciler.secrets.refs import resolve
from tests.integration.test_gitops import commit, invoke, make_repo
from tests.leakcheck import OUTSIDE_FILE_SECRET

CLUSTER = textwrap.dedent("""\
    apiVersion: reconciler/v1
    kind: Cluster
    meta: {name: a}
    spec:
      kafkaVersion: "3.6"
      zookeeper: {connect: "127.0.0.1:1/a"}
      brokers: [1, 2, 3]
    """)


def brokers_yaml(static_file: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: reconciler/v1
        kind: BrokerConfig
        meta: {{broker: 1}}
        spec:
          static: {{file: {static_file}}}
          config: {{num.io.threads: 8}}
        """)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files outside the repository: a secret (in YAML- and properties-looking shapes) and a directory."""
    base = tmp_path / "outside-secret"
    (base / "dir").mkdir(parents=True)
    (base / "token").write_text(f"{OUTSIDE_FILE_SECRET}\n")
    (base / "dir" / "stolen.yaml").write_text(f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{}}\n"
                                              f"spec: {{topics: {{{OUTSIDE_FILE_SECRET}: {{}}}}}}\n")
    (base / "server.properties").write_text(f"{OUTSIDE_FILE_SECRET}=1\nnum.io.threads=8\n")
    return base


def run_everything(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, str]:
    """validate in every format and plan --format github: all they print."""
    texts = []
    code = 0
    for fmt in ("text", "github", "json"):
        code, out, err = invoke(capsys, "--repo", str(root), "validate", "--format", fmt)
        texts.append(out + err)
    _, out, err = invoke(capsys, "--repo", str(root), "plan", "--format", "github")
    texts.append(out + err)
    return code, "\n".join(texts)


def test_committed_symlinks_out_of_the_repository_are_refused_and_never_echoed(
    tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster", {"clusters/a/cluster.yaml": CLUSTER})
    (root / "clusters/a/topics.yaml").symlink_to(outside / "token")  # a file link
    (root / "clusters/a/more").symlink_to(outside / "dir")  # a directory link
    (root / "clusters/b").symlink_to(outside / "dir")  # a whole cluster directory
    (root / "clusters/a/static.properties").symlink_to(outside / "server.properties")
    commit(repo, "links", {"clusters/a/brokers.yaml": brokers_yaml("static.properties")})
    assert repo.git.ls_files("-s", "clusters/a/topics.yaml").startswith("120000")  # really a committed link
    code, text = run_everything(capsys, root)
    assert code == 1
    assert OUTSIDE_FILE_SECRET not in text and str(outside) not in text
    assert ("clusters/a/topics.yaml:1:1: error: a symbolic link that leads outside the cluster's directory "
            "clusters/a") in text
    assert "clusters/a/more:1:1: error: a symbolic link" in text and "clusters/b:1:1: error" in text
    assert "static properties file static.properties is outside the cluster's directory clusters/a" in text


def test_symlinks_inside_the_cluster_directory_still_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster", {"clusters/a/cluster.yaml": CLUSTER, "clusters/a/shared/server.properties":
                             "num.io.threads=8\n", "clusters/a/brokers.yaml": brokers_yaml("static.properties")})
    (root / "clusters/a/static.properties").symlink_to(root / "clusters/a/shared/server.properties")
    code, _out, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 0, err


def test_a_cluster_reads_no_file_outside_its_own_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 38, finding 6: a file elsewhere in the repository (or in another cluster's directory) would change
    what merging writes to this cluster without the PR check planning it. Named directly, through `..`, or
    through a link, it is refused at the manifest line, naming the rule."""
    root = tmp_path / "manifests"
    repo = make_repo(root)
    commit(repo, "cluster", {"clusters/a/cluster.yaml": CLUSTER, "shared/server.properties": "num.io.threads=8\n",
                             "clusters/b/server.properties": "num.io.threads=8\n",
                             "clusters/a/brokers.yaml": brokers_yaml("../../shared/server.properties")})
    code, _out, err = invoke(capsys, "--repo", str(root), "validate", "a")
    assert code == 1 and "outside the cluster's directory clusters/a" in err, err
    commit(repo, "other cluster", {"clusters/a/brokers.yaml": brokers_yaml("../b/server.properties")})
    code, _out, err = invoke(capsys, "--repo", str(root), "validate", "a")
    assert code == 1 and "outside the cluster's directory clusters/a" in err, err
    commit(repo, "link", {"clusters/a/brokers.yaml": brokers_yaml("static.properties")})
    (root / "clusters/a/static.properties").symlink_to(root / "shared/server.properties")
    (root / "clusters/a/more.yaml").symlink_to(root / "clusters/b/server.properties")
    code, _out, err = invoke(capsys, "--repo", str(root), "validate", "a")
    assert code == 1, err
    assert "clusters/a/more.yaml:1:1: error: a symbolic link that leads outside the cluster's directory" in err
    assert "static properties file static.properties is outside the cluster's directory clusters/a" in err
    for structural in ("clusters/fleet.yaml", "clusters/c"):
        (root / structural).symlink_to(root / ("shared/server.properties" if structural.endswith("yaml")
                                              else "clusters/a"))
    code, _out, err = invoke(capsys, "--repo", str(root), "validate")
    assert "clusters/fleet.yaml:1:1: error: a symbolic link where the repository's structure" in err
    assert "clusters/c:1:1: error: a symbolic link where the repository's structure" in err


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "big"])
def test_static_files_must_be_small_regular_files(
    tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`static: {file: /dev/zero}` read until memory ran out (finding 9): now refused at once."""
    root = tmp_path / "manifests"
    (root / "clusters/a").mkdir(parents=True)
    (root / "clusters/a/cluster.yaml").write_text(CLUSTER)
    if target == "fifo":
        os.mkfifo(root / "clusters/a/fifo")  # opening it for reading would block forever
    elif target == "big":
        (root / "clusters/a/big").write_bytes(b"a=1\n" * 300_000)  # 1.2 MB
    (root / "clusters/a/brokers.yaml").write_text(brokers_yaml(target))
    started = time.monotonic()
    code, _out, err = invoke(capsys, "--repo", str(root), "validate")
    assert code == 1 and time.monotonic() - started < 10
    why = {"/dev/zero": "outside the cluster's directory clusters/a", "fifo": "not a regular file",
           "big": "larger than"}[target]
    assert f"clusters/a/brokers.yaml:5:12: error: static properties file {target}" in err and why in err


def test_secret_files_are_confined_regular_and_bounded(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret `{file: …}` anywhere on disk, /dev/zero or a FIFO: refused, naming the path as written."""
    monkeypatch.delenv("RECONCILER_SECRET_DIRS", raising=False)
    repo = tmp_path / "repo"
    (repo / "clusters/a").mkdir(parents=True)
    os.mkfifo(repo / "clusters/a/pipe")
    (repo / "clusters/a/huge").write_bytes(b"x" * 100_000)
    (repo / "clusters/a/link").symlink_to(outside / "token")
    where = repo / "clusters/a"
    own = "outside the cluster's directory clusters/a"
    cases = {"/dev/zero": own, str(outside / "token"): own, "link": own, "../../../outside-secret/token": own,
             "pipe": "not a regular file", "huge": "larger than 65536 bytes", "/proc/self/environ": "outside"}
    for name, why in cases.items():
        with pytest.raises(SecretError, match=why) as err:
            resolve(SecretRef(file=name), where, repo)
        assert OUTSIDE_FILE_SECRET not in str(err.value)
    # a directory the operator approves (a mounted secret), through the environment only
    monkeypatch.setenv("RECONCILER_SECRET_DIRS", f"/nonexistent{os.pathsep}{outside}")
    assert resolve(SecretRef(file=str(outside / "token")), where, repo) == Secret(OUTSIDE_FILE_SECRET)
    assert resolve(SecretRef(file="link"), where, repo) == Secret(OUTSIDE_FILE_SECRET)
    with pytest.raises(SecretError, match="outside"):
        resolve(SecretRef(file="/proc/self/environ"), where, repo)


def test_change_detection_does_not_read_through_links_out_of_the_work_tree(tmp_path: Path, outside: Path) -> None:
    """`plan --git-base` reads the PR's work tree to compare labels and fleet selectors: links out are unread."""
    from reconciler.gitops.changes import _DiskSide

    clusters = tmp_path / "clusters"
    (clusters / "a").mkdir(parents=True)
    (clusters / "a/cluster.yaml").symlink_to(outside / "token")
    (clusters / "fleet.yaml").write_text("kind: FleetDefaults\n")
    side = _DiskSide(clusters)
    assert side.read("a/cluster.yaml") is None and side.read("fleet.yaml") == b"kind: FleetDefaults\n"
