"""Which clusters a revision range changes: what a pull request plans and the impact job covers.

A cluster is changed when
  * a file under `clusters/<cluster>/` changed (manifests, static properties, secret files, its labels);
  * a FleetDefaults document of `clusters/fleet.yaml` changed (added, removed or edited; comments and
    formatting do not count) and its selector, before or after the change, matches the cluster's labels
    before or after the change.
Like a pull request's diff, the range starts at the merge base of the base and the head, so commits that
landed on the base branch meanwhile are not attributed to the branch. The head is a revision or the work
tree (untracked files included). Clusters deleted by the range are reported apart: they cannot be planned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import git

from reconciler.errors import has_errors
from reconciler.gitops.revision import clusters_path, open_repo, resolve_commit
from reconciler.gitops.tree import blob_bytes, clusters_tree
from reconciler.manifests.fleet import selector_matches
from reconciler.manifests.load import MAX_FILE_BYTES, Document, load_text
from reconciler.manifests.repo import CLUSTER_FILE, FLEET_FILE
from reconciler.secrets.files import FileAccessError, read_confined

_EVERYTHING: Mapping[str, Any] = {}  # an unreadable selector is treated as matching every cluster


@dataclass(frozen=True, slots=True)
class ChangeSet:
    base: str  # the merge base the range starts at (sha)
    head: str | None  # sha, None for the work tree
    clusters: frozenset[str]  # changed clusters that exist at the head (to plan)
    removed: frozenset[str] = frozenset()  # cluster directories the range deletes
    reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # cluster -> why it is included


class _Side(Protocol):
    """The `clusters/` directory at one end of the range."""

    def read(self, relative: str) -> bytes | None: ...

    def clusters(self) -> set[str]: ...


class _TreeSide:
    def __init__(self, tree: git.Tree | None) -> None:
        self.tree = tree

    def read(self, relative: str) -> bytes | None:
        return None if self.tree is None else blob_bytes(self.tree, relative)

    def clusters(self) -> set[str]:
        if self.tree is None:
            return set()
        return {t.name for t in self.tree.trees if not t.name.startswith(".")}


class _DiskSide:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def read(self, relative: str) -> bytes | None:
        """The file's content; None when it is missing, not a regular file, too large, or a link out of
        `clusters/` (the work tree is the pull request's: it may hold any symlink)."""
        try:
            return read_confined(self.directory / relative, self.directory, MAX_FILE_BYTES, shown=relative)
        except FileAccessError:
            return None

    def clusters(self) -> set[str]:
        if not self.directory.is_dir():
            return set()
        return {p.name for p in self.directory.iterdir() if p.is_dir() and not p.name.startswith(".")}


def _changed_paths(repo: git.Repo, base: str, head: str | None, prefix: str) -> list[str]:
    """Paths under `clusters/` that differ, relative to it (renames as a deletion plus an addition)."""
    scope = clusters_path(prefix)
    args = ["--name-only", "--no-renames", "-z", base, *([head] if head else []), "--", scope]
    names = repo.git.diff(*args).split("\0")
    if head is None:  # the work tree: untracked files count too (a new cluster not yet added)
        names += repo.git.ls_files("--others", "--exclude-standard", "-z", "--", scope).split("\0")
    return sorted({n[len(scope) + 1:] for n in names if n.startswith(scope + "/")})


def _documents(side: _Side, relative: str) -> list[Document] | None:
    """The documents of a file; [] when it is missing, None when it does not parse."""
    data = side.read(relative)
    if data is None:
        return []
    docs, diags = load_text(data, relative)
    return None if has_errors(diags) else docs


def _labels(side: _Side, cluster: str) -> dict[str, str] | None:
    """A cluster's labels, None when its cluster.yaml is missing or unreadable."""
    docs = _documents(side, f"{cluster}/{CLUSTER_FILE}")
    for doc in docs or ():
        if isinstance(doc.data, dict) and doc.data.get("kind") == "Cluster":
            meta = doc.data.get("meta")
            labels = meta.get("labels") if isinstance(meta, dict) else None
            return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
    return None


def _keyed(docs: list[Document]) -> dict[tuple[str, str], Any]:
    """FleetDefaults by name (edits and moves within the file then compare document to document); by
    position when names are missing or repeated."""
    names = [(d.data.get("meta") or {}).get("name") if isinstance(d.data, dict) else None for d in docs]
    by_name = all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
    return {
        ("name", str(name)) if by_name else ("index", str(i)): doc.data
        for i, (name, doc) in enumerate(zip(names, docs, strict=True))
    }


def _selector(data: Any) -> Mapping[str, Any]:
    spec = data.get("spec") if isinstance(data, dict) else None
    selector = spec.get("selector") if isinstance(spec, dict) else None
    return selector if isinstance(selector, dict) else _EVERYTHING


def _doc_label(key: tuple[str, str]) -> str:
    return f"FleetDefaults {key[1]!r}" if key[0] == "name" else f"document #{int(key[1]) + 1}"


def _fleet_changes(old: _Side, new: _Side) -> list[tuple[str, Mapping[str, Any]]] | None:
    """(description, selector) for every changed FleetDefaults; None when either version does not parse."""
    before, after = _documents(old, FLEET_FILE), _documents(new, FLEET_FILE)
    if before is None or after is None:
        return None
    a, b = _keyed(before), _keyed(after)
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) == b.get(key):
            continue
        verb = "added" if key not in a else "removed" if key not in b else "changed"
        for data in (a.get(key), b.get(key)):
            if data is not None:
                out.append((f"fleet.yaml: {_doc_label(key)} {verb}", _selector(data)))
    return out


def _matches(selector: Mapping[str, Any], labels: dict[str, str]) -> bool:
    if selector is _EVERYTHING:
        return True  # unreadable: plan the cluster rather than miss it
    try:
        return selector_matches(selector, labels)
    except AttributeError:  # a malformed selector (validation reports it)
        return True


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def compute_changes(
    old: _Side, new: _Side, paths: Iterable[str], base: str, head: str | None
) -> ChangeSet:
    reasons: dict[str, list[str]] = {}
    fleet_changed = False
    for path in paths:
        first, _, rest = path.partition("/")
        if not rest:
            fleet_changed = fleet_changed or first == FLEET_FILE  # other top-level files belong to no cluster
        elif not first.startswith("."):
            reasons.setdefault(first, []).append(f"clusters/{path} changed")
    existing = new.clusters()
    for cluster in list(reasons):
        if cluster in existing and _labels(old, cluster) != _labels(new, cluster):
            reasons[cluster].insert(0, "labels changed")
    if fleet_changed:
        for cluster, why in _fleet_affected(old, new, existing):
            reasons.setdefault(cluster, []).append(why)
    return ChangeSet(
        base=base,
        head=head,
        clusters=frozenset(c for c in reasons if c in existing),
        removed=frozenset(c for c in reasons if c not in existing),
        reasons={c: _dedupe(r) for c, r in sorted(reasons.items())},
    )


def _fleet_affected(old: _Side, new: _Side, clusters: set[str]) -> Iterator[tuple[str, str]]:
    changes = _fleet_changes(old, new)
    for cluster in sorted(clusters):
        if changes is None:
            yield cluster, "fleet.yaml changed and cannot be parsed at both revisions: every cluster is planned"
            continue
        # labels before or after: a relabelled cluster leaves one selector and joins another
        known = [labels for labels in (_labels(old, cluster), _labels(new, cluster)) if labels is not None]
        for why, selector in changes:
            if not known or any(_matches(selector, labels) for labels in known):
                yield cluster, why


def changed_clusters(repo_root: Path, base_rev: str, head_rev: str | None = None) -> ChangeSet:
    """The clusters changed between the merge base of `base_rev` and the head (`head_rev`, or the work tree
    of `repo_root` when None)."""
    repo, prefix = open_repo(repo_root)
    base_commit = resolve_commit(repo, base_rev)
    head_commit = resolve_commit(repo, head_rev if head_rev is not None else "HEAD")
    merge_bases = repo.merge_base(base_commit, head_commit)
    start = merge_bases[0] if merge_bases else base_commit  # unrelated histories: plain two-point diff
    old = _TreeSide(clusters_tree(start, prefix))
    new: _Side
    if head_rev is None:
        if repo.working_tree_dir is None:
            raise ValueError("a bare repository has no work tree: give a head revision")
        new = _DiskSide(Path(repo.working_tree_dir) / clusters_path(prefix))
    else:
        new = _TreeSide(clusters_tree(head_commit, prefix))
    paths = _changed_paths(repo, start.hexsha, head_commit.hexsha if head_rev is not None else None, prefix)
    return compute_changes(old, new, paths, start.hexsha, head_commit.hexsha if head_rev is not None else None)
