"""Resolve secret references (`{env: NAME}`, `{file: path}`) to `Secret`s.

Errors name the variable or the file, never a value. Kafka-encoded references (`{encoded: ...}`) are not
resolved here: their plaintext needs the cluster's encoder secret, see `reconciler.passwords.decode`.
"""

from __future__ import annotations

import os
from pathlib import Path

from reconciler.errors import SecretError
from reconciler.model import Secret, SecretRef
from reconciler.secrets.files import MAX_SECRET_BYTES, FileAccessError, approved_secret_dirs, read_named


def resolve(ref: SecretRef, base_dir: Path, root: Path | None = None) -> Secret:
    """The plaintext of an env or file reference; a relative file path is relative to `base_dir`.

    A file must resolve inside the cluster's own directory under `root` (the repository; default `base_dir`;
    `files.cluster_scope`) or an operator-approved secret directory (`files.approved_secret_dirs`), be a regular
    file and at most 64 KiB.
    """
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise SecretError(f"environment variable {ref.env} is not set ({ref.describe()})")
        return Secret(value)
    if ref.file is not None:
        try:
            data = read_named(base_dir / ref.file, base_dir, root or base_dir, MAX_SECRET_BYTES,
                              shown=f"secret file {ref.file}", allowed=approved_secret_dirs())
        except FileAccessError as exc:
            raise SecretError(exc.message) from None
        try:
            # bytes, not read_text(): universal-newline translation would silently rewrite '\r' in a secret
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SecretError(f"secret file {ref.file} is not valid UTF-8") from None
        # one trailing newline is what editors and `echo` add; "\r\n" counts as one newline
        for newline in ("\r\n", "\n"):
            if text.endswith(newline):
                return Secret(text[: -len(newline)])
        return Secret(text)
    raise SecretError(
        f"{ref.describe()} has no plaintext here: decode it with passwords.decode and the cluster's "
        "password encoder secret"
    )


def resolve_optional(ref: SecretRef | None, base_dir: Path, root: Path | None = None) -> Secret | None:
    """`resolve`, or None for an absent reference (a set reference that cannot be resolved still raises)."""
    return None if ref is None else resolve(ref, base_dir, root)


def available(ref: SecretRef, base_dir: Path, root: Path | None = None) -> bool:
    """Can `resolve` succeed now? False for encoded references (they need the encoder secret instead)."""
    if ref.encoded is not None:
        return False
    try:
        resolve(ref, base_dir, root)
    except SecretError:
        return False
    return True
