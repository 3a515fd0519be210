"""Resolve secret references (`{env: NAME}`, `{file: path}`) to `Secret`s.

Errors name the variable or the file, never a value. Kafka-encoded references (`{encoded: ...}`) are not
resolved here: their plaintext needs the cluster's encoder secret, see `reconciler.passwords.decode`.
"""

from __future__ import annotations

import os
from pathlib import Path

from reconciler.errors import SecretError
from reconciler.model import Secret, SecretRef


def resolve(ref: SecretRef, base_dir: Path) -> Secret:
    """The plaintext of an env or file reference; a relative file path is relative to `base_dir`."""
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise SecretError(f"environment variable {ref.env} is not set ({ref.describe()})")
        return Secret(value)
    if ref.file is not None:
        path = base_dir / ref.file
        try:
            # bytes, not read_text(): universal-newline translation would silently rewrite '\r' in a secret
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise SecretError(f"secret file {path} does not exist") from None
        except UnicodeDecodeError:
            raise SecretError(f"secret file {path} is not valid UTF-8") from None
        except OSError as exc:  # permission denied, a directory, ...: strerror holds no file content
            reason = exc.strerror or type(exc).__name__
            raise SecretError(f"secret file {path} cannot be read: {reason}") from None
        # one trailing newline is what editors and `echo` add; "\r\n" counts as one newline
        for newline in ("\r\n", "\n"):
            if text.endswith(newline):
                return Secret(text[: -len(newline)])
        return Secret(text)
    raise SecretError(
        f"{ref.describe()} has no plaintext here: decode it with passwords.decode and the cluster's "
        "password encoder secret"
    )


def resolve_optional(ref: SecretRef | None, base_dir: Path) -> Secret | None:
    """`resolve`, or None for an absent reference (a set reference that cannot be resolved still raises)."""
    return None if ref is None else resolve(ref, base_dir)


def available(ref: SecretRef, base_dir: Path) -> bool:
    """Can `resolve` succeed now? False for encoded references (they need the encoder secret instead)."""
    if ref.encoded is not None:
        return False
    try:
        resolve(ref, base_dir)
    except SecretError:
        return False
    return True
