"""Hostile manifests through the real command line (`validate` and `plan` in a subprocess): every one is
refused quickly, with bounded memory (the process's own peak RSS), and a clear error naming the file; the
loader's own unit tests are in tests/unit/test_load.py.
"""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.manifests.load import MAX_EVENTS, MAX_FILE_BYTES
from tests.integration.reliability import Run, cli, write_repo

MAX_SECONDS = 45  # a hang guard, not a benchmark (unguarded, these take minutes to hours; ~1 s each when refused)
MAX_RSS_MB = 500

pytestmark = pytest.mark.timeout(120)  # a safety net: each process inside has its own timeout


def alias_bomb() -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 30)]  # 9**30 if expanded
    return ("\n".join(lines) + "\n").encode()


def alias_bomb_in_manifest() -> bytes:
    """Aliases where a real document has values: a 1 MiB anchored string referenced 100,000 times."""
    refs = ", ".join(["*big"] * 100_000)
    return (
        "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
        f"    log.retention.ms: &big \"{'9' * (1 << 20)}\"\n    listeners: [{refs}]\n"
    ).encode()


def deep_flow() -> bytes:
    return b"[" * 1_000_000 + b"]" * 1_000_000


def deep_block() -> bytes:
    return "".join("  " * i + f"k{i}:\n" for i in range(3000)).encode()


def deep_mixed() -> bytes:
    return b"spec: " + b"{a: [" * 200_000 + b"]}" * 200_000 + b"\n"


def huge() -> bytes:
    line = b"# " + b"x" * 1021 + b"\n"
    return line * (MAX_FILE_BYTES // len(line) + 2)


def many_nodes() -> bytes:
    """Under the byte limit, but millions of nodes: bounded by the node limit, not by the bytes."""
    return b"- a\n" * (15 * 1024 * 1024 // 4)


def many_documents() -> bytes:
    return b"---\n" * (15 * 1024 * 1024 // 4)


def binary_garbage() -> bytes:
    return random.Random(8).randbytes(1 << 20)


def executable() -> bytes:
    return Path(sys.executable).resolve().read_bytes()[: 4 << 20]


def invalid_utf8() -> bytes:
    return b"apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n    caf\xc3\x28: {}\n"


def utf16() -> bytes:
    return "\ufeffapiVersion: reconciler/v1\nkind: Topics\n".encode("utf-16-le")


def nul_bytes() -> bytes:
    return b"apiVersion: reconciler/v1\nkind: Topics\nmeta: {}\nspec:\n  topics:\n    a\x00b: {}\n"


AT = r"\d+:\d+: error: .*"  # any position
CASES: dict[str, tuple[Callable[[], bytes], str]] = {  # the file's content, the error after FILE: (a regex)
    "alias-bomb": (alias_bomb, AT + r"anchors \(&a0\) are not allowed"),
    "alias-bomb-in-manifest": (alias_bomb_in_manifest, AT + r"anchors \(&big\) are not allowed"),
    "deep-flow": (deep_flow, AT + "nested deeper than 64 levels"),
    "deep-block": (deep_block, AT + "nested deeper than 64 levels"),
    "deep-mixed": (deep_mixed, AT + "nested deeper than 64 levels"),
    "huge": (huge, AT + f"over the limit of {MAX_FILE_BYTES} bytes"),
    "many-nodes": (many_nodes, AT + f"more than {MAX_EVENTS} YAML nodes"),
    "many-documents": (many_documents, AT + f"more than {MAX_EVENTS} YAML nodes"),
    "binary-garbage": (binary_garbage, AT + "not valid UTF-8"),
    "executable": (executable, AT + "(not valid UTF-8|NUL byte)"),
    "invalid-utf8": (invalid_utf8, r"6:8: error: not valid UTF-8 \(byte 0xc3\)"),
    "utf16": (utf16, AT + r"not valid UTF-8 \(byte 0xff\)"),
    "nul": (nul_bytes, "6:6: error: file contains a NUL byte"),
}


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each hostile file generated once (some are 16 MiB)."""
    directory = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, (make, _) in CASES.items():
        out[name] = directory / f"{name}.bin"
        out[name].write_bytes(make())
    return out


def assert_refused(run: Run, files: dict[str, str], last_line: str) -> None:
    assert run.code == 1, run
    for name, error in files.items():
        assert re.search(rf"^clusters/c1/{name}\.yaml:" + error, run.stderr, re.M), (name, run)
    assert re.fullmatch(last_line, run.stderr.rstrip().splitlines()[-1]), run
    assert "Traceback" not in run.stderr and run.stdout == "", run
    assert len(run.stderr) < 20_000 * len(files), run  # at most 100 errors a file (an alias bomb has 100,000)
    assert run.seconds < MAX_SECONDS, run
    assert 0 < run.max_rss_mb < MAX_RSS_MB, run


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_refuses_quickly_with_bounded_memory(
    case: str, hostile_files: dict[str, Path], tmp_path: Path
) -> None:
    repo = write_repo(tmp_path, "127.0.0.1:1/unused", topics={"orders": {"retention.ms": "1000"}})
    # a hard link: a regular file of the repository (and the 16 MiB ones need no copy); a symlink to a file
    # outside the repository is refused before reading (docs/security.md)
    os.link(hostile_files[case], repo / "clusters" / "c1" / f"{case}.yaml")
    run = cli(repo, "validate", timeout=60)
    assert_refused(run, {case: CASES[case][1]}, r"invalid: \d+ error\(s\), 0 warning\(s\)")


def test_plan_refuses_them_all_before_reading_zookeeper(
    hostile_files: dict[str, Path], tmp_path: Path, zk_connect: str
) -> None:
    """Every hostile file at once in one cluster: each is named, none is used, and ZooKeeper is not read."""
    repo = write_repo(tmp_path, zk_connect, topics={"orders": {"retention.ms": "1000"}})
    for case, path in hostile_files.items():
        os.link(path, repo / "clusters" / "c1" / f"{case}.yaml")
    run = cli(repo, "plan", timeout=60)
    assert_refused(run, {case: error for case, (_, error) in CASES.items()}, r"error: \d+ validation error\(s\)")
    assert "ZooKeeper" not in run.stderr


def test_hostile_cluster_file_is_refused_before_connecting(
    hostile_files: dict[str, Path], tmp_path: Path
) -> None:
    """The Cluster document itself is the bomb: nothing is known about the cluster, nothing is contacted."""
    repo = write_repo(tmp_path, "127.0.0.1:1/never")
    cluster = repo / "clusters" / "c1" / "cluster.yaml"
    cluster.unlink()
    cluster.write_bytes(hostile_files["alias-bomb"].read_bytes())
    for args in (["validate"], ["plan"], ["apply", "--auto-approve"]):
        run = cli(repo, *args, timeout=60)
        assert run.code == 1, run
        assert "clusters/c1/cluster.yaml:1:5: error: anchors (&a0) are not allowed" in run.stderr, run
        assert "ZooKeeper" not in run.stderr and run.seconds < MAX_SECONDS, run
