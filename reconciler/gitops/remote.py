"""A bare mirror of a remote manifests repository, for `reconcile --repo-url`.

Bare, so there is no work tree to get dirty, reset or conflict: each pass fetches the branch and reads the
manifests of its tip with `tree.materialize`. Full history is kept (no shallow fetch): the drift report reads
the manifests of the revision last applied. Credentials come from git itself (SSH agent, credential helper,
a token in the URL); the URL's user-info is never printed.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import git

from reconciler.gitops.revision import GitError

REMOTE_PREFIX = "refs/remotes/origin/"


def redact(url: str) -> str:
    """The URL without user-info (`https://token@host/x` -> `https://***@host/x`)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def mirror_path(cache_dir: Path, url: str) -> Path:
    """One directory per URL: a readable stem plus a hash (two URLs never share a mirror)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", redact(url).rstrip("/").rsplit("/", 1)[-1]).strip("-") or "repo"
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]
    return cache_dir / f"{stem.removesuffix('.git')}-{digest}.git"


def sync_remote(url: str, branch: str, cache_dir: Path, timeout_s: float = 300.0) -> tuple[Path, str]:
    """Fetch `branch` of `url` into the mirror; returns (mirror path, the ref to read: origin/<branch>)."""
    path = mirror_path(cache_dir, url)
    try:
        repo = git.Repo(path) if path.is_dir() else git.Repo.init(path, bare=True, mkdir=True)
    except (git.InvalidGitRepositoryError, git.GitCommandError, OSError) as exc:
        raise GitError(f"cannot use the cache {path} for {redact(url)}: {exc}; delete it and retry") from exc
    ref = f"{REMOTE_PREFIX}{branch}"
    try:
        repo.git.fetch("--no-tags", "--prune", url, f"+refs/heads/{branch}:{ref}", kill_after_timeout=timeout_s)
    except git.GitCommandError as exc:
        stderr = str(exc.stderr or "").replace(url, redact(url)).strip()
        raise GitError(f"cannot fetch branch {branch!r} of {redact(url)}: {stderr or exc.status}") from None
    return path, ref
