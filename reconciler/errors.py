"""One root exception, diagnostics that carry their source, and the exit codes of the command line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from reconciler.model import SourceRef

Severity = Literal["error", "warning"]


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # invalid input, unreachable cluster, failed apply
    CHANGES = 2  # plan has changes (only with --detailed-exitcode)
    CONFLICT = 3  # stale plan (a znode changed since planning) or another apply holds the lock


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found in the input, with where it is and the config key it is about."""

    severity: Severity
    message: str
    source: SourceRef | None = None
    key: str | None = None

    def render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        key = f" [{self.key}]" if self.key else ""
        return f"{where}{self.severity}: {self.message}{key}"

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


class RefusedError(ReconcilerError):
    """A guard refused the operation (KRaft controller, destructive change without the flag, ...)."""


class SecretError(ReconcilerError):
    """A secret reference cannot be resolved or a stored password cannot be decoded (never holds the secret)."""


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)
