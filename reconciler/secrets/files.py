"""Every file the tool reads on behalf of a manifest: confined to the repository, regular, and bounded.

A pull request controls every file under `clusters/`, including symbolic links. So a path named by a
manifest (a static server.properties, a secret file, a TLS file) or found while walking `clusters/` is
resolved (symlinks followed) and refused unless the result is inside the repository, or inside one of the
directories the operator approves for secret files through the environment (`RECONCILER_SECRET_DIRS`,
`os.pathsep`-separated; e.g. a mounted Kubernetes secret), never through a manifest. The file must be a
regular file (not a FIFO, a device such as /dev/zero, or a directory) and is read up to a size bound.
Errors name the path as written, never the target of a link and never the content. A path that leads outside
those directories gets one message whatever is there: resolving it never looks beyond them (`confine`), so
"does not exist", "permission denied" and "outside" cannot be told apart from outside (a PR's oracle).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reconciler.errors import ReconcilerError, SecretError, clip, printable

SECRET_DIRS_ENV = "RECONCILER_SECRET_DIRS"
MAX_SECRET_BYTES = 64 * 1024  # a password, a key, a PEM bundle of a few certificates


class FileAccessError(ReconcilerError):
    """A file a manifest names is outside the allowed directories, not a regular file, too large or unreadable."""


def approved_secret_dirs() -> tuple[Path, ...]:
    """The operator's directories for secret files (`RECONCILER_SECRET_DIRS`), as written (`confine` resolves
    them, and lets a path reach them through the links they are written with); never from a manifest."""
    raw = os.environ.get(SECRET_DIRS_ENV, "")
    return tuple(Path(p).absolute() for p in raw.split(os.pathsep) if p.strip())


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


MAX_LINKS = 40  # symbolic links followed in one path (Linux's MAXSYMLINKS)


def _outside_error(name: str, allowed: Sequence[Path], scope: str) -> FileAccessError:
    where = scope + (f" or {SECRET_DIRS_ENV}" if allowed else "")
    return FileAccessError(f"{name} is outside {where} (after resolving symbolic links); refusing to read it")


CLUSTERS_DIR = "clusters"


def cluster_scope(directory: Path, root: Path) -> tuple[Path, str]:
    """Where a file named from `directory` may lie, and how errors name it: the cluster's own directory
    (`root/clusters/<cluster>`) when `directory` is inside one, else `root` (the repository).

    Why a cluster's files stay in its own directory: a pull request is planned for the clusters whose files it
    changes, found by path (gitops/changes.py). A file of another cluster's directory, or of the repository
    outside clusters/, would change what merging writes to this cluster without this cluster being planned,
    so the PR comment would not show it (issue 38, finding 6). Secret and TLS files may also lie in the
    operator's RECONCILER_SECRET_DIRS, which no pull request changes."""
    base = Path(os.path.normpath(root.absolute()))
    here = Path(os.path.normpath(directory.absolute()))
    try:
        parts = here.relative_to(base).parts
    except ValueError:
        return root, "the repository"
    if len(parts) >= 2 and parts[0] == CLUSTERS_DIR:
        return base / CLUSTERS_DIR / parts[1], f"the cluster's directory {CLUSTERS_DIR}/{parts[1]}"
    return root, "the repository"


@dataclass(frozen=True)
class _Roots:
    """The directories a path may resolve into (resolved), and the directories that lead to them: their
    ancestors, resolved and as written (which may pass through the operator's own symbolic links, such as
    /var/run -> /run). Only these are ever looked at while resolving."""

    inside: tuple[Path, ...]
    leading: frozenset[Path]

    @classmethod
    def of(cls, written: Sequence[Path]) -> _Roots:
        inside = tuple(dict.fromkeys(r.resolve() for r in written))
        leading: set[Path] = set()
        for r in (*inside, *(Path(os.path.normpath(r.absolute())) for r in written)):
            leading.update((r, *r.parents))
        return cls(inside, frozenset(leading))

    def holds(self, path: Path) -> bool:
        return any(_inside(path, r) for r in self.inside)


def _walk(path: Path, roots: _Roots, name: str, allowed: Sequence[Path], scope: str) -> Path:
    """`path` with every symbolic link resolved, one component at a time, never looking at anything that is
    neither inside a root nor on the way to one: as soon as the walk leaves them, the one "outside" error,
    whatever is or is not there (so the messages are no oracle for the rest of the filesystem)."""
    # a relative path starts at the working directory, which the kernel reports resolved
    current = Path(path.anchor) if path.is_absolute() else Path.cwd()
    pending = list(reversed(path.parts[1:] if path.is_absolute() else path.parts))
    links = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        if not roots.holds(candidate) and candidate not in roots.leading:
            raise _outside_error(name, allowed, scope)
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            raise FileAccessError(f"{name} does not exist") from None
        except OSError as exc:  # permission denied on a directory, a file used as a directory
            raise FileAccessError(f"{name} cannot be resolved: {_reason(exc)}") from None
        if not stat.S_ISLNK(mode):
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            raise FileAccessError(f"{name} cannot be resolved: too many levels of symbolic links")
        target = Path(os.readlink(candidate))
        if target.is_absolute():
            current = Path(target.anchor)
        pending.extend(reversed(target.parts[1:] if target.is_absolute() else target.parts))
    if not roots.holds(current):
        raise _outside_error(name, allowed, scope)
    return current


def confine(path: Path, root: Path, *, shown: str, allowed: Sequence[Path] = (), scope: str = "the repository"
            ) -> Path:
    """`path` with every symlink resolved, if that lies inside `root` or one of `allowed`; else FileAccessError.

    `shown` is how the path is named in the error (as the manifest writes it). A path that leads outside them
    gets one message whatever is there (nothing, a file, a directory it may not enter, a link): the walk stops
    where it leaves them and never looks further. Inside, the messages say what is wrong. `scope` names `root`
    in that message.
    """
    return _walk(path, _Roots.of([root, *allowed]), printable(clip(shown)), allowed, scope)


def read_regular(path: Path, limit: int, *, shown: str) -> bytes:
    """The content of a regular file of at most `limit` bytes (never reads more than limit + 1)."""
    name = printable(clip(shown))
    try:
        # O_NONBLOCK: opening a FIFO must not hang; the type is checked on the open descriptor (no race)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileAccessError(f"{name} cannot be read: {_reason(exc)}") from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        raise FileAccessError(f"{name} is not a regular file; refusing to read it")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileAccessError(f"{name} is larger than {limit} bytes; refusing to read it")
    return data


def read_confined(path: Path, root: Path, limit: int, *, shown: str, allowed: Sequence[Path] = (),
                  scope: str = "the repository") -> bytes:
    """`confine` then `read_regular`: what every manifest-named file goes through."""
    return read_regular(confine(path, root, shown=shown, allowed=allowed, scope=scope), limit, shown=shown)


def read_named(path: Path, directory: Path, root: Path, limit: int, *, shown: str,
               allowed: Sequence[Path] = ()) -> bytes:
    """A file a manifest in `directory` names: `read_confined` within the cluster's own directory
    (`cluster_scope`) or `allowed`."""
    scope, where = cluster_scope(directory, root)
    return read_confined(path, scope, limit, shown=shown, allowed=allowed, scope=where)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__


def checked_pem(name: str | None, directory: Path, root: Path, *, what: str, section: str) -> Path | None:
    """A TLS file a manifest names (CA, certificate, key), relative to `directory`: confined and checked like every
    manifest-named file (inside the repository or RECONCILER_SECRET_DIRS, regular, bounded); the client then loads
    it by path. `section` (`cluster c1: zookeeper.tls`) starts the error."""
    if name is None:
        return None
    shown = f"{what} {name}"
    scope, where = cluster_scope(directory, root)
    try:
        path = confine(directory / name, scope, shown=shown, allowed=approved_secret_dirs(), scope=where)
        read_regular(path, MAX_SECRET_BYTES, shown=shown)
    except FileAccessError as exc:
        raise SecretError(f"{section}: {exc.message}") from None
    return path
