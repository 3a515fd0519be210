"""Read a broker's static `server.properties` (validation and impact only; never written to ZooKeeper)."""

from __future__ import annotations

from pathlib import Path

from reconciler.errors import Diagnostic
from reconciler.model import SourceRef
from reconciler.secrets.files import FileAccessError, read_named

MAX_PROPERTIES_BYTES = 1024 * 1024


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java properties lines: a trailing odd backslash continues the line; # and ! start comments."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip() if pending is not None else line.strip()
        if pending is None and (not stripped or stripped[0] in "#!"):
            continue
        if pending is None:
            start = number
        content = (pending or "") + stripped
        trailing = len(content) - len(content.rstrip("\\"))
        if trailing % 2 == 1:
            pending = content[:-1]
            continue
        pending = None
        out.append((start, content))
    if pending is not None:
        out.append((start, pending))
    return out


def _split(content: str) -> tuple[str, str]:
    """Key ends at the first `=`, `:` or blank; one separator (with blanks around it) follows."""
    i = 0
    while i < len(content) and content[i] not in "=:" and not content[i].isspace():
        i += 1
    rest = content[i:].lstrip()
    if rest[:1] in ("=", ":"):
        rest = rest[1:]
    return content[:i], rest.strip()


def parse_properties(text: str, display: str) -> tuple[dict[str, tuple[str, SourceRef]], list[Diagnostic]]:
    values: dict[str, tuple[str, SourceRef]] = {}
    diags: list[Diagnostic] = []
    for line, content in _logical_lines(text):
        key, value = _split(content.strip())
        source = SourceRef(display, line, 1)
        if key in values:
            diags.append(
                Diagnostic("error", f"duplicate property {key!r} (first at line {values[key][1].line})", source, key)
            )
            continue
        values[key] = (value, source)
    return values, diags


def read_properties(
    path: Path, display: str, root: Path, named_at: SourceRef, shown: str
) -> tuple[dict[str, tuple[str, SourceRef]], list[Diagnostic]]:
    """A static properties file named by a manifest (at `named_at`, as `shown`): inside the cluster's own
    directory under `root` (symlinks resolved; `files.cluster_scope`), a regular file, at most 1 MiB. Problems
    never quote the file's content."""
    try:
        raw = read_named(path, (root / named_at.file).parent, root, MAX_PROPERTIES_BYTES,
                         shown=f"static properties file {shown}")
    except FileAccessError as exc:
        return {}, [Diagnostic("error", exc.message, named_at, "static")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # Java's historical properties encoding
    return parse_properties(text, display)
