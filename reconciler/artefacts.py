"""Writing what a command produces (`--out` plan files, reports, inventories) where a pull request cannot
redirect it, and never leaving a stale one behind.

In a pull-request job the current directory is the PR's checkout: a committed symlink `plan.json -> ~/.ssh/…`
or a directory link `report -> /etc` would turn `--out` into a write anywhere the job may write, and a committed
`plan.json` would be uploaded as the job's plan artefact if the plan failed. So:

* a path whose final component, or any directory component inside the current directory or the repository, is a
  symbolic link is refused before anything is written (`checked_destination`);
* a file is written to a temporary name beside it and renamed into place (`write_atomically`): a reader sees the
  old file or the whole new one, never a half-written one, and a link planted meanwhile is replaced, not followed;
* a command that may fail after choosing its output removes what is there first (`discard_stale`), so a failure
  leaves no file rather than someone else's.

Standard library only.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from reconciler.errors import ReconcilerError, printable


class UnsafeDestinationError(ReconcilerError):
    """An output path that goes through a symbolic link (or is not a plain file or directory)."""


def _guarded_roots(extra: Sequence[Path]) -> list[Path]:
    roots = [Path.cwd().absolute(), *(p.absolute() for p in extra)]
    return [Path(os.path.normpath(r)) for r in roots]


def checked_destination(path: Path, *, roots: Sequence[Path] = (), directory: bool = False) -> Path:
    """`path` made absolute, after refusing symbolic links: the path itself, and every component at or below
    the current directory or one of `roots` (the repository). Components above them (a runner's `/tmp` link)
    are the machine's, not the pull request's."""
    absolute = Path(os.path.normpath(path.absolute()))
    guarded = _guarded_roots(roots)
    shown = printable(str(path))
    for component in [*reversed(absolute.parents), absolute]:
        inside = any(component == root or root in component.parents for root in guarded)
        if (inside or component == absolute) and component.is_symlink():
            raise UnsafeDestinationError(f"refusing to write {shown}: {printable(str(component))} is a symbolic "
                                         "link (an output never goes through one)")
    if absolute.exists() and not (absolute.is_dir() if directory else absolute.is_file()):
        kind = "a directory" if directory else "a regular file"
        raise UnsafeDestinationError(f"refusing to write {shown}: it exists and is not {kind}")
    return absolute


def discard_stale(path: Path, *, roots: Sequence[Path] = ()) -> Path:
    """Check `path` (see `checked_destination`) and remove a file already there: if the command then fails,
    nothing is left for a workflow to mistake for its output."""
    absolute = checked_destination(path, roots=roots)
    absolute.unlink(missing_ok=True)
    return absolute


def write_atomically(path: Path, text: str, *, roots: Sequence[Path] = ()) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file in the same directory and a rename."""
    absolute = checked_destination(path, roots=roots)
    absolute.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{absolute.name}.", suffix=".tmp", dir=absolute.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, absolute)  # replaces a link planted meanwhile; never writes through it
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
