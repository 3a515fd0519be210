"""One root exception, diagnostics that carry their source, and the exit codes of the command line."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from reconciler.model import SourceRef

Severity = Literal["error", "warning"]

# C0/C1 controls (ANSI escapes, newlines), bidi embeddings/overrides/isolates and marks, line/paragraph
# separators: text from manifests or live state must not reach a terminal, a GitHub annotation or a
# line-based layout as is ("Trojan Source", CVE-2021-42574); it is shown escaped instead.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
MAX_MESSAGE_CHARS = 1000  # a diagnostic's message (a 4 MiB key must not become 16 MiB of stderr)
MAX_KEY_CHARS = 300  # a diagnostic's key (topic names reach 249), and any value quoted through `clip`


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(m.group()) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )


def printable(text: str) -> str:
    """One safe line: control characters and bidi controls escaped (`\\n`, `\\x1b`, `\\u202e`)."""
    return _UNPRINTABLE.sub(_escape, text)


def clip(text: str, limit: int = MAX_KEY_CHARS) -> str:
    """At most `limit` characters of `text` (then `…(N chars)`), for quoting untrusted values in messages."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text)} chars)"


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # invalid input, unreachable cluster, failed apply
    CHANGES = 2  # plan has changes (only with --detailed-exitcode)
    CONFLICT = 3  # stale plan (a znode changed since planning) or another apply holds the lock
    NOT_TAKEN = 4  # written, but `--verify` could not prove every broker took it (not taken / no answer)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found in the input, with where it is and the config key it is about."""

    severity: Severity
    message: str
    source: SourceRef | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        # bounded however the text got here: every output (terminal, GitHub, Markdown, JSON) inherits it
        if len(self.message) > MAX_MESSAGE_CHARS:
            object.__setattr__(self, "message", clip(self.message, MAX_MESSAGE_CHARS))
        if self.key is not None and len(self.key) > MAX_KEY_CHARS:
            object.__setattr__(self, "key", clip(self.key, MAX_KEY_CHARS))

    def render(self) -> str:
        """One line for a terminal: control and bidi characters escaped."""
        where = f"{self.source}: " if self.source else ""
        key = f" [{self.key}]" if self.key else ""
        return printable(f"{where}{self.severity}: {self.message}{key}")

    def sort_key(self) -> tuple[str, int, int, str]:
        if self.source is None:
            return ("", 0, 0, self.message)
        return (self.source.file, self.source.line, self.source.column, self.message)


class ReconcilerError(Exception):
    """Root of every error the reconciler raises on purpose. `exit_code` tells the CLI how to end."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, diagnostics: Iterable[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)


class ValidationError(ReconcilerError):
    """The manifests break one or more rules; every problem is in `diagnostics`."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        diags = tuple(sorted(diagnostics, key=Diagnostic.sort_key))
        errors = sum(1 for d in diags if d.severity == "error")
        super().__init__(f"{errors} validation error(s)", diags)


class LiveStateError(ReconcilerError):
    """Live ZooKeeper data is missing, corrupt or of an unexpected shape (names the znode)."""


class ConflictError(ReconcilerError):
    """The plan is stale or another apply holds the cluster lock; nothing of the batch was written."""

    exit_code = ExitCode.CONFLICT


class NotTakenError(ReconcilerError):
    """The writes succeeded but the brokers did not all report them (`apply --verify`)."""

    exit_code = ExitCode.NOT_TAKEN


class RefusedError(ReconcilerError):
    """A guard refused the operation (KRaft controller, destructive change without the flag, ...)."""


class SecretError(ReconcilerError):
    """A secret reference cannot be resolved or a stored password cannot be decoded (never holds the secret)."""


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


class Interrupted(ReconcilerError):
    """SIGINT/SIGTERM arrived: the work stopped at a safe point (before anything was written)."""


# Set by the command line's signal handling; long computations (key derivation) check it between steps so
# that a signal ends any command within a couple of seconds.
CANCELLED = threading.Event()


def check_cancelled() -> None:
    if CANCELLED.is_set():
        raise Interrupted("interrupted by a signal; stopped before writing anything more")


class ApplyInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM during an apply's writes: it stopped between two batches (each batch is one ZooKeeper
    multi: all of it committed or none), or a second signal ended the wait for a batch's reply; `message` says
    what was committed, what was not (and what is unknown) and what to run next. A KeyboardInterrupt, so that
    it ends whatever runs the apply as the signal would (`reconcile` too); the command line prints `message`."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# While an apply commits its batches, interrupting the wait for a batch's reply would hide whether that batch
# committed (the multi is on its way to ZooKeeper). Within `interrupts_deferred()` the command line's first
# SIGINT/SIGTERM only sets CANCELLED, and the apply stops before its next batch; a second signal interrupts at
# once. Only the main thread receives KeyboardInterrupt, so only its deferral counts (a thread-local depth).
_DEFERRAL = threading.local()


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    _DEFERRAL.depth = getattr(_DEFERRAL, "depth", 0) + 1
    try:
        yield
    finally:
        _DEFERRAL.depth -= 1


def interrupt_deferred() -> bool:
    """Is the calling thread (the signal handler runs in the main thread) inside `interrupts_deferred()`?"""
    return bool(getattr(_DEFERRAL, "depth", 0))
