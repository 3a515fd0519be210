"""The manifests of any revision, without a checkout: `clusters/` of the commit's tree written to a directory.

Why a directory and not an in-memory file source: the manifests are not only YAML. `static:` server.properties
and `{secret: {file: …}}` paths are resolved relative to the manifest that names them, by code that reads the
file system. Writing the revision's blobs gives exactly what a checkout would give those readers (the same
relative paths, the same `clusters/<cluster>/file.yaml` names in diagnostics) with no change to them, and
costs one file write per manifest. Only `fleet.yaml` and the wanted clusters are written.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import git

from reconciler.gitops.revision import (
    CLUSTERS_DIR,
    Revision,
    clusters_path,
    open_repo,
    resolve_commit,
    revision_info,
)

_BLOB, _TREE = "blob", "tree"
_SYMLINK_MODE = 0o120000


def clusters_tree(commit: git.Commit, prefix: str) -> git.Tree | None:
    """The commit's `clusters/` tree, None when the revision has none."""
    try:
        item = commit.tree / clusters_path(prefix)
    except KeyError:
        return None
    return item if item.type == _TREE else None


def blob_bytes(tree: git.Tree, relative: str) -> bytes | None:
    """A file's content under `tree`, None when it is missing or not a file."""
    try:
        item = tree / relative
    except KeyError:
        return None
    if item.type != _BLOB or item.mode == _SYMLINK_MODE:
        return None
    data: bytes = item.data_stream.read()
    return data


def _write_tree(tree: git.Tree, base: str, dest: Path) -> int:
    """Every regular file under `tree` to `dest` (paths relative to `base`); symlinks and submodules are
    skipped: a manifest repo has no use for them and a link could point outside the directory."""
    written = 0
    for item in tree.traverse():
        if not isinstance(item, git.Blob) or item.mode == _SYMLINK_MODE:
            continue
        relative = PurePosixPath(item.path).relative_to(base)
        target = dest.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(item.data_stream.read())
        written += 1
    return written


def materialize(repo_root: Path, rev: str, dest: Path, only: Collection[str] = ()) -> Revision:
    """Write `clusters/` of revision `rev` under `dest` (so `dest` is a manifests root).

    With `only`, just the files directly in `clusters/` (fleet.yaml) and those clusters' directories.
    A revision without `clusters/` gives an empty `dest/clusters`.
    """
    repo, prefix = open_repo(repo_root)
    commit = resolve_commit(repo, rev)
    target = dest / CLUSTERS_DIR
    target.mkdir(parents=True, exist_ok=True)
    tree = clusters_tree(commit, prefix)
    if tree is None:
        return revision_info(commit)
    wanted = set(only)
    for item in tree:
        if item.type == _BLOB and item.mode != _SYMLINK_MODE:
            (target / item.name).write_bytes(item.data_stream.read())
        elif item.type == _TREE and (not wanted or item.name in wanted):
            _write_tree(item, str(tree.path), target)
    return revision_info(commit)


@contextmanager
def manifests_at(repo_root: Path, rev: str, only: Collection[str] = ()) -> Iterator[tuple[Path, Revision]]:
    """`with manifests_at(root, "origin/main") as (path, revision):` a temporary manifests root at `rev`."""
    directory = Path(tempfile.mkdtemp(prefix="reconciler-rev-"))
    try:
        yield directory, materialize(repo_root, rev, directory, only)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
