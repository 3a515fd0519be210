"""`impact --git-base REV`: the clusters a branch changes.

Uses the GitOps module's `changed_clusters` (merge base, FleetDefaults selectors, work tree). If that module
is not importable, a minimal GitPython diff of the work tree against REV stands in: a cluster changes when
a file under `clusters/<cluster>/` changed, and a change to `clusters/fleet.yaml` counts for every cluster.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from reconciler.errors import ReconcilerError


def _gitops() -> Any:
    for module in ("reconciler.gitops.changes", "reconciler.gitops"):
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(found, "changed_clusters"):
            return found.changed_clusters
    return None


def _minimal(repo_root: Path, base_rev: str, known: Iterable[str]) -> set[str]:
    import git

    try:
        repo = git.Repo(repo_root, search_parent_directories=True)
        base = repo.commit(base_rev)
    except (git.GitError, ValueError) as exc:
        raise ReconcilerError(f"--git-base {base_rev}: {exc}") from exc
    prefix = _clusters_prefix(repo, repo_root)
    if prefix is None:
        raise ReconcilerError(f"--git-base {base_rev}: {repo_root}/clusters is outside the git work tree "
                              f"{repo.working_tree_dir}")
    prefix += "/"
    paths = {p for d in base.diff(None) for p in (d.a_path, d.b_path) if p}
    paths |= set(repo.untracked_files)
    changed: set[str] = set()
    for path in paths:
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        if "/" not in rest:
            if rest.startswith("fleet."):
                return set(known)
            continue
        changed.add(rest.split("/", 1)[0])
    return changed & set(known)


def changed_clusters(repo_root: Path, base_rev: str, known: Iterable[str]) -> set[str]:
    """Clusters changed since `base_rev` that exist in the manifests (`known`)."""
    known = set(known)
    finder = _gitops()
    if finder is None:
        return _minimal(repo_root, base_rev, known)
    try:
        result = finder(repo_root, base_rev)
    except ReconcilerError:
        raise
    except Exception as exc:
        raise ReconcilerError(f"--git-base {base_rev}: {exc}") from exc
    names = getattr(result, "clusters", result)
    return set(names) & known


def _clusters_prefix(repo: Any, repo_root: Path) -> str | None:
    """`clusters/`'s path inside the git work tree, or None when it lies outside (a symlinked directory)."""
    top = Path(repo.working_tree_dir or repo_root).resolve()
    try:
        return (repo_root.resolve() / "clusters").relative_to(top).as_posix()
    except ValueError:
        return None


def policies_changed(files: Iterable[str]) -> bool:
    """Whether a policy file (clusters/policies.yaml, clusters/<c>/policies.yaml) is among the changed `files`
    (`assess`: every one, not the report's first 200)."""
    from reconciler.manifests.repo import POLICY_FILE

    return any(PurePosixPath(f).name == POLICY_FILE for f in files)


def write_base_policies(repo_root: Path, base_rev: str, dest: Path) -> bool:
    """The policy files (clusters/policies.yaml, clusters/<c>/policies.yaml, regular blobs only) of the merge base
    with `base_rev` under `dest/clusters/`, so `dest` is a manifests root for `load_policies`. False outside git."""
    import git

    from reconciler.manifests.repo import POLICY_FILE

    try:
        repo = git.Repo(repo_root, search_parent_directories=True)
        base = repo.commit(base_rev)
        bases = repo.merge_base(base, repo.head.commit)
    except (git.GitError, ValueError) as exc:
        raise ReconcilerError(f"--git-base {base_rev}: {exc}") from exc
    prefix = _clusters_prefix(repo, repo_root)
    if prefix is None:
        return False
    commit = bases[0] if bases else base
    try:
        clusters = commit.tree / prefix
    except KeyError:
        return True  # no clusters/ at the base: no policies
    blobs = [b for b in clusters.blobs if b.name == POLICY_FILE]
    blobs += [b for t in clusters.trees for b in t.blobs if b.name == POLICY_FILE]
    for blob in blobs:
        if blob.mode == 0o120000:  # a link never chooses which policies judge (manifests/policy.py)
            continue
        target = dest / "clusters" / PurePosixPath(blob.path).relative_to(prefix)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.data_stream.read())
    return True


def assessed_change(repo_root: Path, base_rev: str | None, limit: int = 200) -> dict[str, Any]:
    """What the report assesses, for its reader: the manifests' commit (and whether the work tree differs),
    and with `base_rev` the first `limit` files changed under clusters/ since it. Empty outside a git repository."""
    change, _ = assess(repo_root, base_rev, limit)
    return change


def assess(repo_root: Path, base_rev: str | None, limit: int = 200) -> tuple[dict[str, Any], list[str]]:
    """`assessed_change` and every changed file under clusters/ (one diff for both)."""
    import git

    try:
        repo = git.Repo(repo_root, search_parent_directories=True)
        head = repo.head.commit
    except (git.GitError, ValueError):
        return {}, []
    prefix = _clusters_prefix(repo, repo_root)
    if prefix is None:  # manifests reached through a link out of the repository: no commit describes them
        return {}, []
    change: dict[str, Any] = {
        "head": head.hexsha[:12],
        "subject": str(head.message).split("\n", 1)[0][:200],
        "dirty": repo.is_dirty(untracked_files=True, path=prefix),
        "base": base_rev,
        "files": None,
    }
    if base_rev is not None:
        try:
            base = repo.commit(base_rev)
        except (git.GitError, ValueError) as exc:
            raise ReconcilerError(f"--git-base {base_rev}: {exc}") from exc
        paths = {p for d in base.diff(None) for p in (d.a_path, d.b_path) if p}
        paths |= set(repo.untracked_files)
        files = sorted(p for p in paths if p.startswith(prefix + "/"))
        change["files"] = files[:limit]
        return change, files
    return change, []
