"""Strict YAML loading: plain data plus the source position of every key, and every problem as a Diagnostic.

Scalars are resolved like the YAML 1.2 core schema, not PyYAML's YAML 1.1 (`yes`/`on` stay strings, no
sexagesimal numbers, no `1_000`, no timestamps). Duplicate keys, anchors, aliases, merge keys,
null/bool/complex keys, non-standard tags, deep nesting, too many nodes and oversized or non-UTF-8 files are
refused. Data is built straight from the parser's event stream (no recursion, no composed node graph), so an
alias is refused before anything could be expanded.

Why our own loader on PyYAML's event stream rather than a library's: PyYAML, ruamel.yaml and StrictYAML
each miss something we need at once: YAML 1.2 scalars (`yes` stays a string, as Kafka would refuse it),
refusal of duplicate keys and aliases before expansion, a file:line:col for every key (diagnostics and the
plan's sources), bounded cost on hostile input, and libyaml's C speed on 10,000-topic files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler.errors import Diagnostic
from reconciler.model import SourceRef

# libyaml's C parser is several times faster than the pure-Python one; both emit the same events.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
# Parser events (nodes, documents) per file. Bytes alone do not bound the cost: 15 MiB of `- a` lines is 4
# million nodes, ~25 s and ~900 MB to read. 500,000 events take ~2 s and ~150 MB and allow ~40,000 topics
# with their configs in one file (a 10,000-topic Topics manifest is ~120,000 events).
MAX_EVENTS = 500_000
MAX_ERRORS = 100  # per file: 100,000 aliases are 100,000 errors, which nobody reads (and take seconds to print)
# Integer scalars of at most this many characters. Python's int() and str() refuse integers of more than 4,300
# decimal digits (CVE-2020-10735); a hex scalar of 4,300 characters is about 5,200 decimal digits, so the
# bound is on characters whatever the base, and low enough that every integer read can be printed.
MAX_INT_CHARS = 3_500
_DOUBLE_BITS = 1024  # integers of more bits are beyond the double range: an infinity, as YAML's !!float reads them

YamlPath = tuple[str | int, ...]

_TAG = "tag:yaml.org,2002:"
_STR, _INT_TAG, _FLOAT_TAG, _BOOL_TAG, _NULL_TAG = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_SCALAR_TAGS = frozenset({_STR, _INT_TAG, _FLOAT_TAG, _BOOL_TAG, _NULL_TAG})
_COLLECTION_TAGS = frozenset({"!", _TAG + "map", _TAG + "seq"})
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_FLOAT = {
    f"{sign}.{inf}": float(f"{sign}inf") for sign in ("", "+", "-") for inf in ("inf", "Inf", "INF")
}
_SPECIAL_FLOAT.update({".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan})
# Characters YAML forbids in a stream (C0 controls but tab/LF/CR, DEL, C1 but NEL, surrogates, U+FFFE/F).
_UNPRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NUMBER_START = frozenset("0123456789+-.")
_MAYBE_TYPED = _NUMBER_START | frozenset("~nNtTfF")  # first characters of plain scalars that may not be str
_PLAIN_KEY_SPECIAL = _NULL | _BOOL.keys() | {"<<"}
_FLOW_BRACKETS = re.compile(r"[\[\]{}\n]")
_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document: plain data, and the position of every mapping key and sequence item in it."""

    file: str
    index: int  # 0-based, counting every document of the file (skipped empty ones included)
    data: Any
    marks: Mapping[YamlPath, SourceRef]  # path -> its key / item; () -> where the content starts

    def mark(self, path: Sequence[str | int]) -> SourceRef:
        """Position of `path`, or of its nearest ancestor that has one."""
        key = tuple(path)
        if type(self.marks) is _Marks:  # the loader's own (hot: every config value asks for its line)
            return self.marks.nearest(key) or SourceRef(self.file, 1, 1)
        while key and key not in self.marks:
            key = key[:-1]
        return self.marks.get(key) or SourceRef(self.file, 1, 1)

    def marker(self, prefix: YamlPath) -> Callable[[str], SourceRef]:
        """`mark` of the keys of the mapping at `prefix` (hot: asked once per config value)."""
        marks = self.marks
        if type(marks) is _Marks:
            nearest, file = marks.nearest, self.file
            return lambda key: nearest((*prefix, key)) or SourceRef(file, 1, 1)
        return lambda key: self.mark((*prefix, key))


def _tag_name(tag: str) -> str:
    return tag.replace(_TAG, "!!", 1)


def _resolve(value: str, tag: str | None) -> Any:
    """A plain (tag None) or explicitly tagged scalar under the core schema; ValueError if it does not fit."""
    if tag is None or tag != _STR:
        if tag in (None, _NULL_TAG) and value in _NULL:
            return None
        if tag in (None, _BOOL_TAG) and value in _BOOL:
            return _BOOL[value]
        if value and value[0] in _NUMBER_START and tag in (None, _INT_TAG, _FLOAT_TAG):
            if _INT.fullmatch(value):
                if len(value) > MAX_INT_CHARS:
                    raise ValueError(f"an integer of {len(value)} digits is too long")
                if value[:2] in ("0x", "0o"):
                    number = int(value[2:], 16 if value[1] == "x" else 8)
                    if tag == _FLOAT_TAG:
                        return float(number) if number.bit_length() <= _DOUBLE_BITS else math.inf
                    return number
                return float(value) if tag == _FLOAT_TAG else int(value)  # float(str) gives inf past the range
            if tag != _INT_TAG and _FLOAT.fullmatch(value):
                return float(value)
            if tag != _INT_TAG and value in _SPECIAL_FLOAT:
                return _SPECIAL_FLOAT[value]
        if tag is not None:
            raise ValueError(f"{value[:50]!r} is not a valid {_tag_name(tag)}")
    return value


class _Marks(Mapping[YamlPath, SourceRef]):
    """The parser's own position objects, turned into SourceRefs only when asked for (most never are)."""

    __slots__ = ("_file", "_raw")

    def __init__(self, file: str, raw: dict[YamlPath, Any]) -> None:
        self._file, self._raw = file, raw

    def __getitem__(self, path: YamlPath) -> SourceRef:
        mark = self._raw[path]
        return SourceRef(self._file, mark.line + 1, mark.column + 1)

    def nearest(self, path: YamlPath) -> SourceRef | None:
        """`Document.mark` without the Mapping protocol's calls: `path` or its nearest recorded ancestor."""
        raw = self._raw
        mark = raw.get(path)  # a recorded path (nearly always): one lookup, no ancestor walk
        while mark is None and path:
            path = path[:-1]
            mark = raw.get(path)
        return None if mark is None else SourceRef(self._file, mark.line + 1, mark.column + 1)

    def __contains__(self, path: object) -> bool:
        return path in self._raw

    def __iter__(self) -> Iterator[YamlPath]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"<{len(self._raw)} marks>"


def _child(frame: list[Any]) -> YamlPath:
    """The path of the next node inside an open collection."""
    container, path, pending = frame[0], frame[1], frame[2]
    return (*path, pending if type(container) is dict else len(container))


class _StopReading(Exception):
    """The file is refused as a whole (too deep, too many nodes or errors); the reason is already reported."""


class _Reader:
    """Turns one file's event stream into Documents; collects every problem it can see.

    The common cases (untagged, unanchored scalars and keys) take an inline fast path; everything else goes
    through `key` / `node`, which check and report.
    """

    def __init__(self, file: str) -> None:
        self.file = file
        self.diags: list[Diagnostic] = []

    def error(self, message: str, line: int = 1, col: int = 1, key: str | None = None) -> None:
        self.diags.append(Diagnostic("error", message, SourceRef(self.file, line, col), key))
        if len(self.diags) >= MAX_ERRORS:
            self.diags.append(Diagnostic("error", f"{MAX_ERRORS} errors: stopped reading this file",
                                         SourceRef(self.file, line, col)))
            raise _StopReading()

    def error_at(self, message: str, text: str, offset: int) -> None:
        line_start = text.rfind("\n", 0, offset) + 1
        self.error(message, text.count("\n", 0, offset) + 1, offset - line_start + 1)

    def key(self, event: Any, frame: list[Any], marks: dict[YamlPath, Any]) -> None:
        """Checks a mapping key and makes it the frame's pending key (False: its value is discarded)."""
        frame[2] = False
        line, col = event.start_mark.line + 1, event.start_mark.column + 1
        if type(event) is not yaml.ScalarEvent:
            what = "an alias" if type(event) is yaml.AliasEvent else "a mapping or a list"
            self.error(f"a mapping key must be a string, not {what}", line, col)
            return
        plain, tag, name = not event.style, event.tag, event.value
        if event.anchor is not None:
            self.error(f"anchors (&{event.anchor}) are not allowed; write the value out", line, col, name)
        elif tag not in (None, "!", _STR, _INT_TAG, _FLOAT_TAG):
            self.error(f"a mapping key must be a string, not tagged {_tag_name(tag)}", line, col)
        elif plain and tag is None and (name in _NULL or name in _BOOL):
            what = "null" if name in _NULL else "a boolean"
            self.error(f"a mapping key must be a string, not {what} ({name or 'empty'}); quote it", line, col)
        elif plain and tag is None and name == "<<":
            self.error("merge keys (<<) are not allowed; write the keys out", line, col, name)
        elif name in frame[0]:
            first = marks.get((*frame[1], name)) if frame[3] else None
            where = f" (first at line {first.line + 1})" if first is not None else ""
            self.error(f"duplicate key {name!r}{where}", line, col, name)
        else:  # plain keys that look like numbers (`1:` under brokers) are kept as their source text
            frame[2] = name
            if frame[3]:
                marks[(*frame[1], name)] = event.start_mark

    def node(self, event: Any, path: YamlPath, depth: int) -> tuple[Any, bool]:
        """The value of a node that is not a plain untagged scalar; (value, whether to skip its content)."""
        kind, line, col = type(event), event.start_mark.line + 1, event.start_mark.column + 1
        name = next((part for part in reversed(path) if type(part) is str), None)
        if kind is yaml.AliasEvent:
            self.error(f"aliases (*{event.anchor}) are not allowed; write the value out", line, col, name)
            return None, False
        if event.anchor is not None:
            self.error(f"anchors (&{event.anchor}) are not allowed; write the value out", line, col, name)
        tag = event.tag
        if kind is yaml.ScalarEvent:
            tag = _STR if tag == "!" or (tag is None and event.style) else tag
            if tag is not None and tag not in _SCALAR_TAGS:
                self.error(f"tag {_tag_name(tag)} is not allowed here", line, col, name)
                tag = _STR
            try:
                return _resolve(event.value, tag), False
            except ValueError as exc:
                self.error(f"invalid value: {str(exc)[:200]}", line, col, name)
                return None, False
        if tag is not None and tag not in _COLLECTION_TAGS:
            self.error(f"tag {_tag_name(tag)} is not allowed here", line, col, name)
        if depth >= MAX_DEPTH:
            # the rest of the file is not read: libyaml's scanner costs O(depth) per token beyond this point,
            # so a million `[` would take hours
            self.error(f"nested deeper than {MAX_DEPTH} levels", line, col, name)
            raise _StopReading()
        return ({} if kind is yaml.MappingStartEvent else []), False

    def read(self, text: str) -> list[Document]:
        """The documents of one file: those read before a syntax error too, none when it is refused whole."""
        docs: list[Document] = []
        loader = _Loader(text)
        try:
            self._consume(loader, docs)
        except _StopReading:  # the problem is reported; nothing of this file is used
            return []
        except yaml.MarkedYAMLError as exc:
            # libyaml's scanner reads ahead and may refuse a deep flow collection before our depth check sees
            # its events (and in its own words, which vary by release): report our own limit where it is
            # crossed
            deep = _flow_too_deep(text, exc.problem_mark.line + 1 if exc.problem_mark else None)
            if deep is not None:
                self.error(f"nested deeper than {MAX_DEPTH} levels", *deep)
            else:
                self.error(*_describe(exc, text))
        except yaml.YAMLError as exc:  # e.g. a reader error on a control character
            self.error(f"invalid YAML: {exc}".replace("\n", " "))
        finally:
            loader.dispose()
        return docs

    def _consume(self, loader: Any, docs: list[Document]) -> None:
        """The event loop: every node placed in its parent, its mark recorded, documents appended to `docs`.

        Long because it is the loader's hot path (once per YAML event): the common cases stay inline, the rare
        ones go through `_take_key`/`key`, `node` and `_typed`. Placing a value in its parent through a
        function cost 4% of a 10,000-topic load (CPU time, same run), so that step stays inline too.
        """
        scalar, alias, map_start, seq_start = yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, \
            yaml.SequenceStartEvent
        file, index, skip, empty_root, budget = self.file, -1, 0, False, MAX_EVENTS
        marks: dict[YamlPath, Any] = {}
        root: Any = None
        # One frame per open collection: [container, path, pending key, record marks?]. The pending key of
        # a mapping is None while a key is expected, False when the next value is to be discarded.
        stack: list[list[Any]] = []
        while (event := loader.get_event()) is not None:
            budget -= 1
            if budget < 0:
                self.error(f"more than {MAX_EVENTS} YAML nodes; split the file into several",
                           event.start_mark.line + 1, event.start_mark.column + 1)
                raise _StopReading()
            kind = type(event)
            if skip:  # inside a refused collection (too deep, or a complex key): only track its end
                skip += 1 if kind in _START else -1 if kind in _END else 0
                continue
            if kind is scalar or kind is map_start or kind is seq_start or kind is alias:
                frame = stack[-1] if stack else None
                if frame is not None and frame[2] is None and type(frame[0]) is dict:
                    skip = self._take_key(event, kind, frame, marks)
                    continue
                value: Any = None
                if event.anchor is not None or kind is alias or event.tag is not None:
                    value, skipping = self.node(event, _child(frame) if frame else (), len(stack))
                    skip = 1 if skipping else 0
                elif kind is scalar:
                    value = event.value
                    if not event.style and (not value or value[0] in _MAYBE_TYPED):
                        value = self._typed(event, frame)
                    if frame is None:
                        empty_root = not event.style and event.value == ""
                elif len(stack) < MAX_DEPTH:
                    value = {} if kind is map_start else []
                else:
                    value, skipping = self.node(event, _child(frame) if frame else (), len(stack))
                    skip = 1 if skipping else 0
                path: YamlPath
                if frame is None:
                    root, path, record = value, (), True
                    marks[()] = event.start_mark
                else:  # placed in its parent (inline: once per value)
                    container, record = frame[0], frame[3]
                    if type(container) is dict:
                        record = record and frame[2] is not False
                        path = (*frame[1], frame[2]) if record else ()
                        if frame[2] is not False:
                            container[frame[2]] = value
                        frame[2] = None
                    else:
                        path = (*frame[1], len(container))
                        if record:
                            marks[path] = event.start_mark
                        container.append(value)
                if type(value) is dict or type(value) is list:
                    stack.append([value, path, None, record])
            elif kind in _END:
                stack.pop()
            elif kind is yaml.DocumentStartEvent:
                index, marks, root = index + 1, {}, None
            elif kind is yaml.DocumentEndEvent:
                if not empty_root:  # a document with no content (`---` alone, comments) is skipped
                    docs.append(Document(file, index, root, _Marks(file, marks)))
                empty_root = False

    def _take_key(self, event: Any, kind: type, frame: list[Any], marks: dict[YamlPath, Any]) -> int:
        """A node where a mapping key is expected; how many collection levels to skip (a complex key: 1)."""
        name = event.value if kind is yaml.ScalarEvent else None
        if (
            name is not None
            and event.tag is None
            and event.anchor is None
            and (event.style or name not in _PLAIN_KEY_SPECIAL)
            and name not in frame[0]
        ):
            frame[2] = name
            if frame[3]:
                marks[(*frame[1], name)] = event.start_mark
            return 0
        self.key(event, frame, marks)
        return 1 if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent else 0

    def _typed(self, event: Any, frame: list[Any] | None) -> Any:
        """A plain scalar that may be a number, boolean or null (YAML 1.2 core schema)."""
        value = event.value
        if value.isdigit() and value.isascii() and len(value) <= MAX_INT_CHARS:
            return int(value)
        try:
            return _resolve(value, None)
        except ValueError:  # let node() report it, with the key's name
            return self.node(event, _child(frame) if frame else (), 0)[0]


def _flow_too_deep(text: str, last_line: int | None) -> tuple[int, int] | None:
    """(line, col) where flow brackets first nest deeper than MAX_DEPTH, up to `last_line`; None if they don't.

    Only called after the parser failed, so an approximation (brackets inside quoted scalars count too) can
    only change which words describe a file that is refused either way.
    """
    depth, line, line_start = 0, 1, 0
    for match in _FLOW_BRACKETS.finditer(text):
        char = match.group()
        if char == "\n":
            line, line_start = line + 1, match.end()
            if last_line is not None and line > last_line:
                return None
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line, match.start() - line_start + 1
        else:
            depth = max(depth - 1, 0)
    return None


def _describe(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, int, int]:
    """A parser error as `problem while context (started at line N)`, at the problem's position."""
    mark, context_mark = exc.problem_mark or exc.context_mark, exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    message = f"invalid YAML: {exc.problem or 'syntax error'}"
    if exc.context:
        started = (
            f" started at line {context_mark.line + 1}"
            if context_mark and context_mark.line + 1 != line
            else ""
        )
        message += f" {exc.context}{started}"
    lines = text.split("\n", line)
    source_line = lines[line - 1] if len(lines) >= line else ""
    indent = source_line[: len(source_line) - len(source_line.lstrip())]
    if "\t" in indent or source_line[col - 1 : col] == "\t":
        message += "; indent with spaces, not tabs"
    else:
        message += _indentation_hint(exc.problem or "", line, len(indent), context_mark)
    return message, line, col


def _indentation_hint(problem: str, line: int, indent: int, context: yaml.Mark | None) -> str:
    """The usual cause of libyaml's two indentation errors, said for the line that is wrong."""
    if problem.startswith("did not find expected key") and context is not None:
        return (f"; line {line} is indented {indent} space(s): a key must line up with the keys of the mapping "
                f"started at line {context.line + 1} (indented {context.column}) or of one that encloses it")
    if problem.startswith("mapping values are not allowed"):
        return (f"; line {line} is indented deeper than the key above it (a key's value goes on the same line or "
                "in a block indented under it), or a plain value contains ': ' and needs quotes")
    return ""


def load_text(text: str | bytes, file: str) -> tuple[list[Document], list[Diagnostic]]:
    """Parse every document of one file. Never raises: every problem is a Diagnostic (with FILE:LINE:COL).

    Documents are returned even when they have errors (so later stages can report more at once); the caller
    must not act on them when any diagnostic is an error.
    """
    reader = _Reader(file)
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        reader.error(f"file is {size} bytes, over the limit of {MAX_FILE_BYTES}; split it into several files")
        return [], reader.diags
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:  # the position is cheap: everything before the bad byte decodes
            byte = f"0x{exc.object[exc.start]:02x}"
            valid = exc.object[: exc.start].decode("utf-8")
            reader.error_at(f"not valid UTF-8 (byte {byte}); manifests must be UTF-8 text", valid, len(valid))
            return [], reader.diags
    bad = _UNPRINTABLE.search(text)
    if bad:  # checked here rather than by the parser: its offsets are in bytes for one parser, not the other
        char = bad.group()
        what = (
            "a NUL byte (binary data?)"
            if char == "\x00"
            else f"the non-printable character U+{ord(char):04X}"
        )
        reader.error_at(f"file contains {what}; manifests must be YAML text", text, bad.start())
        return [], reader.diags
    try:
        docs = reader.read(text.removeprefix("\ufeff"))
    except _StopReading:  # the 100th error was the parser's own
        docs = []
    return docs, reader.diags


def load_file(
    path: Path, display: str | None = None, kinds: frozenset[str] | None = None
) -> tuple[list[Document], list[Diagnostic]]:
    """Read and parse one manifest file (never more than the size limit). `display` names it in messages.
    With `kinds`, a file none of whose documents can be of one of them is read but not parsed (`may_hold`):
    nothing of it, and none of its problems, is returned."""
    name = display if display is not None else str(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)  # never read more than one byte past the limit
    except OSError as exc:
        return [], [Diagnostic("error", f"cannot read file: {exc.strerror or exc}", SourceRef(name, 1, 1))]
    if len(data) > MAX_FILE_BYTES:
        return [], [
            Diagnostic(
                "error",
                f"file is over the limit of {MAX_FILE_BYTES} bytes; split it into several files",
                SourceRef(name, 1, 1),
            )
        ]
    if kinds is not None and not may_hold(data, kinds):
        return [], []
    return load_text(data, name)


def may_hold(data: bytes, kinds: frozenset[str]) -> bool:
    """Could a document of this file's bytes have one of `kinds` as its `kind`? False only when it certainly
    cannot: the text is UTF-8 without NUL (what `load_text` reads; any other file is parsed, so that its
    problem is reported as before) and spells none of the names. A YAML scalar can only differ from its
    source text by folding lines (which adds spaces) or by escapes (`\\x74`, an escaped line break), which need
    a backslash: a file with any backslash is parsed too. (`apply PLAN` reads only the documents of a few kinds:
    a 10,000-topic Topics file is ~0.2 s of parsing it need not pay.)"""
    if b"\\" in data or b"\x00" in data or any(kind.encode("utf-8") in data for kind in kinds):
        return True
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False
