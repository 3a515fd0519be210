"""Every file the tool reads on behalf of a manifest: confined to the repository, regular, and bounded.

A pull request controls every file under `clusters/`, including symbolic links. So a path named by a
manifest (a static server.properties, a secret file, a TLS file) or found while walking `clusters/` is
resolved (symlinks followed) and refused unless the result is inside the repository, or inside one of the
directories the operator approves for secret files through the environment (`RECONCILER_SECRET_DIRS`,
`os.pathsep`-separated; e.g. a mounted Kubernetes secret), never through a manifest. The file must be a
regular file (not a FIFO, a device such as /dev/zero, or a directory) and is read up to a size bound.
Errors name the path as written, never the target of a link and never the content.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from reconciler.errors import ReconcilerError, clip, printable

SECRET_DIRS_ENV = "RECONCILER_SECRET_DIRS"
MAX_SECRET_BYTES = 64 * 1024  # a password, a key, a PEM bundle of a few certificates


class FileAccessError(ReconcilerError):
    """A file a manifest names is outside the allowed directories, not a regular file, too large or unreadable."""


def approved_secret_dirs() -> tuple[Path, ...]:
    """The operator's directories for secret files (`RECONCILER_SECRET_DIRS`), resolved; never from a manifest."""
    raw = os.environ.get(SECRET_DIRS_ENV, "")
    return tuple(Path(p).resolve() for p in raw.split(os.pathsep) if p.strip())


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def confine(path: Path, root: Path, *, shown: str, allowed: Sequence[Path] = ()) -> Path:
    """`path` with every symlink resolved, if that lies inside `root` or one of `allowed`; else FileAccessError.

    `shown` is how the path is named in the error (as the manifest writes it).
    """
    name = printable(clip(shown))
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise FileAccessError(f"{name} does not exist") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop, permission denied on a directory
        raise FileAccessError(f"{name} cannot be resolved: {_reason(exc)}") from None
    roots = [root.resolve(), *allowed]
    if not any(_inside(real, r) for r in roots):
        where = "the repository" + (f" or {SECRET_DIRS_ENV}" if allowed else "")
        raise FileAccessError(
            f"{name} is outside {where} (after resolving symbolic links); refusing to read it"
        )
    return real


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


def read_confined(path: Path, root: Path, limit: int, *, shown: str, allowed: Sequence[Path] = ()) -> bytes:
    """`confine` then `read_regular`: what every manifest-named file goes through."""
    return read_regular(confine(path, root, shown=shown, allowed=allowed), limit, shown=shown)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
