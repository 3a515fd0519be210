"""Passwords and SCRAM credentials on KRaft, where nothing can be read back: DescribeConfigs answers null for
every sensitive config (`ConfigHelper.describeConfigs`: `isSensitive` values are redacted) and
DescribeUserScramCredentials gives only mechanism and iterations. So "unchanged" is decided from fingerprints,
as a pull request's plan does on ZooKeeper (secrets/fingerprint.py), with one addition: there is no stored
ciphertext to fingerprint, so an apply records, per password it writes, the secret reference's fingerprint
and a salted PBKDF2 digest of the value written (`kraft:<salt>:<digest>`, never the value). A plan that can
resolve the secret recomputes the digest (verified: a changed value behind the same reference is a change);
one that cannot (a pull request's check) trusts the reference's fingerprint (unverified, said once per plan).
A password changed behind the reconciler's back (kafka-configs.sh) is not seen: said in docs/kraft.md.

The fingerprints live in the local JSON-lines audit log (`apply --audit-log`, RECONCILER_AUDIT_LOG): KRaft has
no place for the ZooKeeper audit znodes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets as random
from pathlib import Path
from typing import Any

from reconciler.errors import SecretError
from reconciler.model import DesiredState, EntityRef, LiveState, Secret, SecretRef, SecretState, SourceRef
from reconciler.secrets.compare import Encoders, SecretComparison, TrustedSecret, cluster_encoders, desired_plaintext
from reconciler.secrets.fingerprint import password_key, reference_fingerprint

PRESENT = "(set; KRaft never returns it)"  # a live password's value: the key is set, its value unknown
_SCRAM_PREFIX = "kraft:iterations="
_DIGEST_ITERATIONS = 50_000
_TAIL_BYTES = 8 * 1024 * 1024  # the newest part of the audit log searched for fingerprints


def scram_marker(iterations: int) -> str:
    return f"{_SCRAM_PREFIX}{iterations}"


def scram_iterations(live: str) -> int | None:
    return int(live[len(_SCRAM_PREFIX):]) if live.startswith(_SCRAM_PREFIX) else None


def value_digest(plaintext: Secret, salt: str | None = None) -> str:
    """`kraft:<salt>:<PBKDF2-HMAC-SHA256 of the value>`: identifies a written value, slow to guess from."""
    salt = salt or random.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", plaintext.reveal().encode("utf-8"), bytes.fromhex(salt),
                                 _DIGEST_ITERATIONS).hex()
    return f"kraft:{salt}:{digest}"


def digest_matches(plaintext: Secret, recorded: str) -> bool:
    parts = recorded.split(":")
    if len(parts) != 3 or parts[0] != "kraft":
        return False
    try:
        return hmac.compare_digest(value_digest(plaintext, parts[1]), recorded)
    except ValueError:
        return False


def fingerprints(ref: EntityRef, key: str, secret: SecretRef, plaintext: Secret) -> dict[str, str]:
    """What an apply records for one password it wrote (the audit entry's `passwords`)."""
    return {"ref": reference_fingerprint(ref, key, secret), "stored": value_digest(plaintext)}


def default_audit_log() -> Path:
    """The local audit log apply writes by default (the same rule as `reconciler.apply.default_audit_log`)."""
    state = os.environ.get("RECONCILER_AUDIT_LOG")
    if state:
        return Path(state)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "kafka-reconciler" / "audit.jsonl"


def applied_passwords(audit_log: Path, cluster: str) -> dict[str, dict[str, str]]:
    """Per password key, the fingerprints of the newest successful apply to `cluster` that wrote it."""
    try:
        with audit_log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - _TAIL_BYTES))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return {}
    found: dict[str, dict[str, str]] = {}
    for line in reversed(lines):
        try:
            record: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("cluster") != cluster or record.get("result") != "applied":
            continue
        passwords = record.get("passwords")
        if not isinstance(passwords, dict):
            continue
        for key, prints in passwords.items():
            if isinstance(key, str) and isinstance(prints, dict) and key not in found:
                found[key] = {k: v for k, v in prints.items() if isinstance(k, str) and isinstance(v, str)}
    return found


def compare_kraft_secrets(desired: DesiredState, live: LiveState, root: Path,
                          trusted_secret: TrustedSecret | None = None) -> SecretComparison:
    """The verdict for every desired password and SCRAM credential that is set live (as
    `secrets.compare.compare_secrets` gives it for ZooKeeper), from the recorded fingerprints."""
    out = SecretComparison()
    encoders: Encoders | None = None
    verified: list[str] = []
    trusted_only: list[str] = []
    unknown: list[str] = []
    for ref, entity in desired.entities.items():
        live_entity = live.entities.get(ref)
        for key, value in entity.config.items():
            if not isinstance(value.value, SecretRef) or live_entity is None or key not in live_entity.config:
                continue
            name = f"{ref.display} {key}"
            if value.iterations is not None and scram_iterations(live_entity.config[key]) != value.iterations:
                out.states[(ref, key)] = SecretState("changed")  # other iterations: a change, nothing derived
                continue
            applied = live.applied_passwords.get(password_key(ref, key)) or {}
            same_ref = applied.get("ref") == reference_fingerprint(ref, key, value.value)
            trusted = trusted_secret is None or trusted_secret(ref, key, value.value, value.source)
            if trusted == "changed":  # a pull request changes the secret file's content: a change, never compared
                out.states[(ref, key)] = SecretState("changed")
                out.changed_in_pr.append(name)
                continue
            plaintext = None
            if trusted and same_ref:
                encoders = encoders or cluster_encoders(desired.cluster, root)
                plaintext = _plaintext(value.value, root, value.source, encoders)
            if plaintext is not None:
                same = digest_matches(plaintext, applied.get("stored", ""))
                out.states[(ref, key)] = SecretState("unchanged" if same else "changed")
                if same:
                    verified.append(name)
            elif same_ref:
                out.states[(ref, key)] = SecretState("unchanged")
                trusted_only.append(name)
            else:
                out.states[(ref, key)] = SecretState("unknown")
                unknown.append(name)
    parts = []
    if verified:
        parts.append(f"{len(verified)} unchanged (the secret's value matches the digest the last apply "
                     f"recorded): {_names(verified)}")
    if trusted_only:
        parts.append(f"{len(trusted_only)} unchanged since the last apply by their secret reference only (the "
                     f"value could not be checked here): {_names(trusted_only)}")
    if unknown:
        parts.append(f"{len(unknown)} not recorded by any apply in the reconciler's state: written again "
                     f"(shown as unknown): {_names(unknown)}")
    if parts:
        out.warnings.append("KRaft never returns passwords (DescribeConfigs answers null): decided from the "
                            "fingerprints the last apply recorded in the reconciler's state: " + "; ".join(parts))
    out.summarise(None)  # the pull request's changed secret files, said once
    return out


def _plaintext(ref: SecretRef, root: Path, source: SourceRef | None, encoders: Encoders) -> Secret | None:
    try:
        return desired_plaintext(ref, root, source, encoders)
    except SecretError:
        return None


def _names(items: list[str], shown: int = 5) -> str:
    head = ", ".join(sorted(items)[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")

