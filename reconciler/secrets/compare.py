"""Compare live Kafka-encoded passwords with desired secrets, so the pure diff only sees changed/unchanged/unknown.

Kafka salts every encoding, so comparing stored strings would report a change forever: live values are
decoded with the encoder secret (or `oldSecret` during a rotation) and compared as plaintext here, and
only the verdict leaves this module.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from reconciler.errors import SecretError
from reconciler.model import (
    DEFAULT_ENTITY,
    ClusterSettings,
    ClusterSpec,
    DesiredState,
    EntityRef,
    LiveState,
    Secret,
    SecretRef,
    SecretState,
    SourceRef,
)
from reconciler.secrets.encoder import EncoderParams, EncodingBoundsError, decode, try_decode
from reconciler.secrets.fingerprint import password_key, reference_fingerprint, stored_fingerprint
from reconciler.secrets.refs import resolve
from reconciler.secrets.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramFormatError, from_string, matches


def base_dir(root: Path, source: SourceRef | None) -> Path:
    """Secret files are relative to the manifest that names them."""
    return (root / source.file).parent if source is not None else root


@dataclass
class Encoders:
    """The cluster's encoder parameters with the secrets resolved (None: not available here)."""

    current: EncoderParams | None
    old: EncoderParams | None
    problem: str | None = None


def cluster_encoders(cluster: ClusterSpec, root: Path) -> Encoders:
    spec = cluster.password_encoder
    if spec is None or spec.secret is None:
        return Encoders(None, None, "the Cluster has no passwordEncoder.secret")
    where = base_dir(root, cluster.source)
    try:
        current = EncoderParams.from_spec(spec, resolve(spec.secret, where, root))
        old = EncoderParams.from_spec(spec, resolve(spec.old_secret, where, root)) if spec.old_secret else None
    except SecretError as exc:
        return Encoders(None, None, exc.message)
    return Encoders(current, old)


def encoder_for_cluster(desired: ClusterSettings, root: Path) -> Callable[[EntityRef], EncoderParams | None]:
    """The password encoder for each entity: the cluster's, with a broker's own server.properties encoding
    parameters (never its secret) where it sets them."""
    encoders = cluster_encoders(desired.cluster, root)

    def encoder_for(ref: EntityRef) -> EncoderParams | None:
        if encoders.current is None:
            raise SecretError(f"cannot encode passwords for {ref.display}: {encoders.problem}")
        static = desired.static.get(ref.name) if ref.name != DEFAULT_ENTITY else None
        if static is None:
            return encoders.current
        params = encoders.current
        cipher = static.get("password.encoder.cipher.algorithm")
        length = static.get("password.encoder.key.length")
        iterations = static.get("password.encoder.iterations")
        return replace(
            params,
            cipher_algorithm=str(cipher.value) if cipher else params.cipher_algorithm,
            key_length=int(str(length.value)) if length else params.key_length,
            iterations=int(str(iterations.value)) if iterations else params.iterations,
        )

    return encoder_for


def desired_plaintext(ref: SecretRef, root: Path, source: SourceRef | None, encoders: Encoders) -> Secret:
    if ref.encoded is not None:
        if encoders.current is None:
            raise SecretError("a sealed value needs the encoder secret to be compared")
        return decode(ref.encoded, encoders.current)
    return resolve(ref, base_dir(root, source), root)


@dataclass
class SecretComparison:
    states: dict[tuple[EntityRef, str], SecretState] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # refused values (errors: the plan must not go ahead)
    # without the encoder secret: passwords as the last apply left them / passwords that cannot be compared
    unverified: list[str] = field(default_factory=list)
    incomparable: list[str] = field(default_factory=list)
    # a pull request's secrets this job cannot compare, whose reference and content are the base's: unchanged by
    # the pull request (if the live value differs, the next apply rewrites it whether or not it merges)
    untouched: list[str] = field(default_factory=list)
    # a pull request's secrets whose file content it changes: a change, whatever is stored
    changed_in_pr: list[str] = field(default_factory=list)
    # with the secret: (password key, reference fingerprint, stored fingerprint) of passwords found unchanged
    verified: list[tuple[str, str, str]] = field(default_factory=list)

    def summarise(self, problem: str | None) -> None:
        """One warning per cluster for the passwords a secret-less plan could not decode (a pull-request
        check), not one or two per key: a reviewer reads it once."""
        if self.changed_in_pr:
            self.warnings.append(f"{len(self.changed_in_pr)} secret(s) whose file this pull request changes: "
                                 f"changed after merge (never compared by this check): {_names(self.changed_in_pr)}")
        if not (self.unverified or self.incomparable or self.untouched):
            return
        parts = []
        if self.unverified:
            parts.append(f"{len(self.unverified)} unchanged since the last apply (same secret reference, same "
                         f"stored value; not counted): {_names(self.unverified)}")
        if self.untouched:
            parts.append(f"{len(self.untouched)} unchanged by this pull request (the base's reference and "
                         "content; not counted; if the live value differs, the next apply rewrites it whether or "
                         f"not this merges): {_names(self.untouched)}")
        if self.incomparable:
            parts.append(f"{len(self.incomparable)} cannot be compared and may change (no apply recorded them, or "
                         f"their reference or stored value changed since): {_names(self.incomparable)}")
        total = len(self.unverified) + len(self.incomparable) + len(self.untouched)
        head = (f"{total} password(s) not verified without the encoder secret ({problem})" if problem else
                f"{total} secret(s) not verified here (their values are not given to this job)")
        self.warnings.append(f"{head}: " + "; ".join(parts))


def _names(items: list[str], shown: int = 20) -> str:
    head = ", ".join(sorted(items)[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")


# A pull request's verdict on one secret reference (`trusted_secret`): True, the base's very reference with the
# same content (resolved from the base); False, not the base's (never resolved, never decrypted: unknown);
# "changed", the base's reference whose file content the pull request changes (a change, never compared).
SecretTrust = bool | Literal["changed"]
TrustedSecret = Callable[[EntityRef, str, SecretRef, SourceRef | None], SecretTrust]


def compare_secrets(
    desired: DesiredState, live: LiveState, root: Path, trusted_secret: TrustedSecret | None = None
) -> SecretComparison:
    """`trusted_secret(entity, key, ref, source)`: may this reference be resolved, or this sealed value be
    decrypted (a pull request's plan trusts only what its base revision has for the same key)? None: all may.
    With it (a pull request), a trusted secret this job cannot compare (no encoder secret, a variable it is not
    given) is unchanged *by this pull request*: said once for the cluster, not rated (issue 39, item 3)."""
    out = SecretComparison()
    encoders: Encoders | None = None
    for ref, entity in desired.entities.items():
        live_entity = live.entities.get(ref)
        for key, value in entity.config.items():
            if not isinstance(value.value, SecretRef) or live_entity is None or key not in live_entity.config:
                continue
            stored = live_entity.config[key]
            trust = True if trusted_secret is None else trusted_secret(ref, key, value.value, value.source)
            if trust == "changed":
                out.states[(ref, key)] = SecretState("changed")
                out.changed_in_pr.append(f"{ref.display} {key}")
                continue
            if not trust:
                out.states[(ref, key)] = _untrusted(ref, key, value.value, stored, out.warnings)
                continue
            pull_request = trusted_secret is not None
            if value.iterations is not None:  # a SCRAM credential: no encoder involved
                out.states[(ref, key)] = scram_state(ref, key, value.value, value.source, value.iterations, stored,
                                                     root, out, live, pull_request)
                continue
            encoders = encoders or cluster_encoders(desired.cluster, root)
            if encoders.current is None and not _same_as_stored(value.value, stored):
                out.states[(ref, key)] = _without_secret(ref, key, value.value, stored, live, out, pull_request)
                continue
            try:
                state = out.states[(ref, key)] = _state(ref, key, value.value, value.source, stored, root,
                                                        encoders, out.warnings)
                if state.state == "unchanged" and not state.reencode:
                    out.verified.append((password_key(ref, key), reference_fingerprint(ref, key, value.value),
                                         stored_fingerprint(stored)))
            except EncodingBoundsError as exc:  # a hostile or absurd stored value: named, never derived
                out.problems.append(f"{key} on {ref.display}: {exc.message}")
                out.states[(ref, key)] = SecretState("unknown")
    out.summarise(encoders.problem if encoders is not None else None)
    return out


def _untrusted(ref: EntityRef, key: str, wanted: SecretRef, stored: str, warnings: list[str]) -> SecretState:
    """A reference the trusted base does not have for this key (a pull request's own): never resolved, and a
    sealed value never decrypted, so that nothing in the output, the exit code or the time taken depends on
    whether it would decode. Only a sealed value that is the very text stored is known to be unchanged (a
    comparison of ciphertext, as a plan without the encoder secret makes)."""
    if _same_as_stored(wanted, stored):
        return SecretState("unchanged")
    what = "sealed value" if wanted.encoded is not None else "secret reference"
    how = "decrypted" if wanted.encoded is not None else "resolved"
    warnings.append(f"{key} on {ref.display}: its {what} is new in this pull request: not {how} by this check "
                    "(takes effect after merge); shown as unknown")
    return SecretState("unknown")


def _same_as_stored(wanted: SecretRef, stored: str) -> bool:
    return wanted.encoded is not None and wanted.encoded.strip() == stored.strip()


def _without_secret(
    ref: EntityRef, key: str, wanted: SecretRef, stored: str, live: LiveState, out: SecretComparison,
    pull_request: bool = False,
) -> SecretState:
    """No encoder secret (or password) here: unchanged when the last apply that wrote this password recorded the
    very reference the manifest names and the very value stored now; in a pull request, unchanged by it when
    the reference is the base's (`pull_request`: the caller checked that); otherwise unknown (may change)."""
    applied = live.applied_passwords.get(password_key(ref, key)) or {}
    if (applied.get("ref") == reference_fingerprint(ref, key, wanted)
            and applied.get("stored") == stored_fingerprint(stored)):
        out.unverified.append(f"{ref.display} {key}")
        return SecretState("unchanged")
    if pull_request:
        out.untouched.append(f"{ref.display} {key}")
        return SecretState("unchanged")
    out.incomparable.append(f"{ref.display} {key}")
    return SecretState("unknown")


def _state(
    ref: EntityRef, key: str, wanted: SecretRef, source: SourceRef | None, stored: str, root: Path,
    encoders: Encoders, warnings: list[str],
) -> SecretState:
    where = f"{key} on {ref.display}"
    if _same_as_stored(wanted, stored):
        return SecretState("unchanged")  # the very value stored (e.g. just imported): no secret needed to tell
    assert encoders.current is not None  # compare_secrets handles the secret-less case
    try:
        plaintext = desired_plaintext(wanted, root, source, encoders)
    except EncodingBoundsError:
        raise
    except SecretError as exc:
        warnings.append(f"{where}: {exc.message}; shown as unknown")
        return SecretState("unknown")
    candidates = [encoders.current] + ([encoders.old] if encoders.old else [])
    found = try_decode(stored, *candidates)
    if found is None:
        warnings.append(
            f"{where}: the live value cannot be decoded with passwordEncoder.secret"
            + (" or oldSecret" if encoders.old else "")
            + "; it will be re-encoded with the current secret"
        )
        return SecretState("unknown", reencode=True)
    live_plain, index = found
    same = hmac.compare_digest(live_plain.reveal().encode("utf-8"), plaintext.reveal().encode("utf-8"))
    if not same:
        return SecretState("changed")
    if index > 0:  # the rotation's risk and preconditions are stated by risk and `rotation_warnings`
        return SecretState("unchanged", reencode=True, rotation=True)
    return SecretState("unchanged")


def scram_state(
    ref: EntityRef, key: str, wanted: SecretRef, source: SourceRef | None, iterations: int, stored: str,
    root: Path, out: SecretComparison, live: LiveState, pull_request: bool = False,
) -> SecretState:
    """A stored SCRAM credential against the desired password and iterations, decided exactly: its stored and
    server keys recomputed from the password with the STORED salt and iterations (ScramFormatter, as the
    broker's ScramSaslServer checks a login). Other iterations are a change without deriving anything. A
    password that cannot be resolved here (a pull request's check) is decided as `_without_secret` decides a
    password: by the last apply's fingerprints, or unchanged by the pull request, else unknown."""
    where = f"{key} of {ref.display}"
    try:
        credential = from_string(stored)
    except ScramFormatError as exc:
        out.warnings.append(f"{where}: the stored value is {exc}; it is rewritten")
        return SecretState("changed")
    if credential.iterations != iterations:
        return SecretState("changed")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        return SecretState("unknown")  # validation refuses the manifest; never derive with it
    try:
        password = resolve(wanted, base_dir(root, source), root)
    except SecretError:
        return _without_secret(ref, key, wanted, stored, live, out, pull_request)
    if matches(key, password, credential):
        # recorded by the next apply (its audit entry), so a check without the password knows it later
        out.verified.append((password_key(ref, key), reference_fingerprint(ref, key, wanted),
                             stored_fingerprint(stored)))
        return SecretState("unchanged")
    return SecretState("changed")
