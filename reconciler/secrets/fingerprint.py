"""Fingerprints that let a plan without the encoder secret tell an untouched password from a changed one.

Kafka salts every encoding, and without `password.encoder.secret` a live password cannot be decoded. What a
secret-less plan (a pull-request check) can still know: whether the manifest's *reference* to the secret
(`env: NAME`, `file: path`, a sealed ciphertext) and the *stored* encoded value are the ones the last apply
wrote. Apply records both fingerprints in its audit entry; a plan that finds the same two treats the password
as unchanged (not verified: one warning per cluster says so). Both are SHA-256 digests of values that are
no secret themselves (a variable name, a path, ciphertext), truncated: they identify, they reveal nothing.
"""

from __future__ import annotations

import hashlib

from reconciler.model import EntityRef, SecretRef

__all__ = ["password_key", "reference_fingerprint", "stored_fingerprint"]


def password_key(ref: EntityRef, key: str) -> str:
    """The audit entry's name for one password: `brokers/1|listener.name.x.ssl.key.password`."""
    return f"{ref.display}|{key}"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def reference_fingerprint(ref: EntityRef, key: str, secret: SecretRef) -> str:
    """Which secret the manifest names for this password (not its value)."""
    if secret.env is not None:
        kind, name = "env", secret.env
    elif secret.file is not None:
        kind, name = "file", secret.file
    else:
        kind, name = "sealed", (secret.encoded or "").strip()
    return _digest(password_key(ref, key), kind, name)


def stored_fingerprint(stored: str) -> str:
    """Which encoding is stored (each encoding is salted, so this names one write)."""
    return _digest(stored.strip())
