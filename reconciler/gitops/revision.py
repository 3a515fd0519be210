"""The git side of a manifest repository: where it is, which revision it is at, whether it is dirty.

The manifests root (`--repo`) may be any directory of a git work tree (a monorepo keeps them in
`infra/kafka/`); paths inside git are then prefixed with that directory. A bare repository (the mirror
`reconcile --repo-url` keeps) has no work tree: its prefix is "".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import git

from reconciler.errors import ReconcilerError, RefusedError

CLUSTERS_DIR = "clusters"


class GitError(ReconcilerError):
    """A git repository or revision is missing or unreadable (says which, and what to do)."""


class DirtyTreeError(RefusedError):
    """The manifests have uncommitted changes and applying them was not explicitly allowed."""


@dataclass(frozen=True, slots=True)
class Revision:
    """A commit as plans, audit entries and reports name it."""

    sha: str
    author: str  # "Name <email>"
    time: str  # commit time, ISO-8601 UTC
    subject: str
    dirty: bool = False  # the manifests in the work tree differ from `sha`

    @property
    def short(self) -> str:
        return self.sha[:12]

    @property
    def recorded(self) -> str:
        """What a plan and its audit entry record: the sha, with `-dirty` when the manifests were not it."""
        return f"{self.sha}-dirty" if self.dirty else self.sha

    def describe(self) -> str:
        return f"{self.short}{' (dirty)' if self.dirty else ''} by {self.author}: {self.subject}"


def open_repo(root: Path) -> tuple[git.Repo, str]:
    """The repository holding `root`, and root's path inside it ("" at the top, else e.g. "infra/kafka")."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except git.NoSuchPathError as exc:
        raise GitError(f"{root} does not exist") from exc
    except git.InvalidGitRepositoryError as exc:
        raise GitError(
            f"{root} is not inside a git repository: GitOps commands need the manifests under git"
        ) from exc
    if repo.bare or repo.working_tree_dir is None:
        return repo, ""
    top = Path(repo.working_tree_dir).resolve()
    try:
        prefix = Path(root).resolve().relative_to(top).as_posix()
    except ValueError:
        prefix = ""
    return repo, "" if prefix == "." else prefix


def clusters_path(prefix: str) -> str:
    """`clusters` (or `<prefix>/clusters`) as git names it."""
    return f"{prefix}/{CLUSTERS_DIR}" if prefix else CLUSTERS_DIR


def resolve_commit(repo: git.Repo, rev: str) -> git.Commit:
    try:
        return repo.commit(rev)
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError) as exc:
        raise GitError(
            f"unknown git revision {rev!r} in {repo.git_dir}: fetch it first (CI checkouts are shallow by "
            "default: use `fetch-depth: 0` with actions/checkout)"
        ) from exc


def revision_info(commit: git.Commit, dirty: bool = False) -> Revision:
    when = commit.committed_datetime.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    author = f"{commit.author.name} <{commit.author.email}>"
    subject = str(commit.summary) if commit.summary else ""
    return Revision(commit.hexsha, author, when, subject, dirty)


def dirty_paths(repo: git.Repo, prefix: str) -> list[str]:
    """Modified, staged, deleted or untracked files under the manifests' `clusters/` (ignored files excepted).

    Only the manifests count: an edited README must not stop an apply.
    """
    if repo.bare:
        return []
    # GIT_OPTIONAL_LOCKS=0: a read-only status, never the index refresh a plain `git status` may write
    out = repo.git.status("--porcelain", "-z", "--untracked-files=all", "--", clusters_path(prefix),
                          env={"GIT_OPTIONAL_LOCKS": "0"})
    paths: list[str] = []
    entries = iter(out.split("\0"))
    for entry in entries:
        if not entry:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":  # renames and copies carry the original path as the next entry
            next(entries, None)
    return paths


def current_revision(root: Path) -> Revision:
    """HEAD of the repository holding `root`, dirty when its manifests have uncommitted changes."""
    repo, prefix = open_repo(root)
    try:
        head = repo.head.commit
    except ValueError as exc:
        raise GitError(f"the git repository at {repo.working_tree_dir} has no commit yet") from exc
    return revision_info(head, dirty=bool(dirty_paths(repo, prefix)))


def require_clean(root: Path, allow_dirty: bool) -> Revision | None:
    """The revision to record for an apply from `root`'s work tree; refuses uncommitted manifests.

    With `allow_dirty` the revision is recorded as `<sha>-dirty`, and a directory outside git is accepted
    (recorded as no revision).
    """
    try:
        repo, prefix = open_repo(root)
    except GitError:
        if allow_dirty:
            return None
        raise
    paths = dirty_paths(repo, prefix)
    if paths and not allow_dirty:
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        raise DirtyTreeError(
            f"refusing to apply: the manifests have uncommitted changes ({shown}); commit them so the audit "
            "trail names the revision that was applied, or pass --allow-dirty"
        )
    return current_revision(root)
