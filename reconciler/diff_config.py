"""Key-level comparison of one entity's desired and live config (used by `diff.build_plan`).

Values are compared in Kafka's canonical form with the catalog key of the right scope, so `"604800000"` vs
`604800000`, `TRUE` vs `true` or `a, b` vs `a,b` are never reported. Sensitive values never leave as text:
their change state comes from a `SecretState` computed by an adapter that can decode live passwords.
Pure: standard library and the core only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler import values
from reconciler.catalog import Catalog, ConfigKey
from reconciler.errors import Diagnostic
from reconciler.model import (
    REPLICATION_THROTTLE_KEYS,
    DesiredValue,
    EntityRef,
    RedactedState,
    SecretRef,
    SourceRef,
)
from reconciler.plan import Change

# SCRAM credentials share the users/<user> znode with quotas but are not managed by Quotas manifests:
# removing them because a quota was declared would lock the user out.
SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})


@dataclass(frozen=True, slots=True)
class SecretState:
    """Whether a live password equals the desired one; computed by an adapter that decodes live passwords."""

    state: RedactedState  # "changed" | "unchanged" | "unknown"
    reencode: bool = False  # unchanged but stored with the old secret / undecodable -> re-encode


class Comparer:
    """Catalog lookups per (scope, key), cached: a 10,000-topic diff asks for the same few keys often."""

    def __init__(self, catalog: Catalog, version: str | None) -> None:
        self.catalog = catalog
        self.version = version
        self._keys: dict[tuple[str, str], ConfigKey | None] = {}
        self._passwords: dict[tuple[str, str], bool] = {}

    def key_for(self, ref: EntityRef, name: str) -> ConfigKey | None:
        scope = ref.quota_kind
        cached = self._keys.get((scope, name), _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        key: ConfigKey | None
        if scope == "topics":
            key = self.catalog.topic(name, self.version)
        elif scope == "brokers":
            key = self.catalog.resolve_broker(name, self.version).base
        else:
            key = self.catalog.quota(scope, name)
        self._keys[(scope, name)] = key
        return key

    def is_password(self, ref: EntityRef, name: str) -> bool:
        scope = ref.quota_kind
        cached = self._passwords.get((scope, name))
        if cached is None:
            cached = self.catalog.is_password(name)
            if scope == "brokers" and not cached:
                cached = self.catalog.resolve_broker(name, self.version).password
            self._passwords[(scope, name)] = cached
        return cached

    def equal(self, ref: EntityRef, name: str, desired: str, live: str) -> bool:
        # Unknown keys compare trimmed (Java's trim, as the broker reads them); known ones canonically.
        return desired == live or values.equal(self.key_for(ref, name), desired, live)


_MISSING = object()


@dataclass(slots=True)
class EntityDiff:
    changes: list[Change] = field(default_factory=list)
    ignored: int = 0
    empty_after: bool = True  # no key left in the znode once the changes are applied


@dataclass(slots=True)
class ConfigDiffer:
    comparer: Comparer
    ignore_keys: frozenset[str]
    secret_states: Mapping[tuple[EntityRef, str], SecretState]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def always_ignored(self, ref: EntityRef, key: str) -> bool:
        """Live keys left alone: always (ignoreKeys), or unless declared (replication throttles, SCRAM)."""
        return (
            key in self.ignore_keys
            or key in REPLICATION_THROTTLE_KEYS
            or (ref.entity_type == "users" and key in SCRAM_KEYS)
        )

    def diff(
        self,
        ref: EntityRef,
        desired: Mapping[str, DesiredValue],
        live: Mapping[str, str],
        entity_source: SourceRef | None,
    ) -> EntityDiff:
        out = EntityDiff()
        for key in sorted(desired.keys() | live.keys()):
            want, have = desired.get(key), live.get(key)
            if key in self.ignore_keys:
                if want is not None:
                    self.diagnostics.append(Diagnostic(
                        "warning",
                        f"{key} of {ref.display} is declared but listed in policy.ignoreKeys, so it is never "
                        "written; remove it from ignoreKeys to manage it",
                        want.source, key,
                    ))
                if have is not None:
                    out.ignored += 1
                    out.empty_after = False
                continue
            if want is None:
                assert have is not None
                if self.always_ignored(ref, key):
                    out.ignored += 1
                    out.empty_after = False
                    continue
                out.changes.append(self._remove(ref, key, have, entity_source))
                continue
            out.empty_after = False
            change = self._set(ref, key, want, have)
            if change is not None:
                out.changes.append(change)
        return out

    def _remove(self, ref: EntityRef, key: str, have: str, source: SourceRef | None) -> Change:
        if self.comparer.is_password(ref, key):
            return Change(key, "-", sensitive=True, redacted="changed", source=source)
        return Change(key, "-", before=have, source=source)

    def _set(self, ref: EntityRef, key: str, want: DesiredValue, have: str | None) -> Change | None:
        value = want.value
        if isinstance(value, SecretRef):
            return self._set_secret(ref, key, value, want.source, have)
        if self.comparer.is_password(ref, key):
            # Validation rejects plaintext passwords; never let one reach a plan file if it slipped through.
            self.diagnostics.append(Diagnostic(
                "error",
                f"{key} of {ref.display} is a password: write it as {{secret: {{env: NAME}}}}, "
                "{secret: {file: path}} or a sealed {encoded: ...} value, never as plaintext",
                want.source, key,
            ))
            return None
        if have is None:
            return Change(key, "+", after=value, source=want.source)
        if self.comparer.equal(ref, key, value, have):
            return None
        return Change(key, "~", before=have, after=value, source=want.source)

    def _set_secret(
        self, ref: EntityRef, key: str, secret: SecretRef, source: SourceRef | None, have: str | None
    ) -> Change | None:
        if have is None:
            return Change(key, "+", sensitive=True, redacted="changed", secret=secret, source=source)
        state = self.secret_states.get((ref, key))
        if state is not None and state.reencode:
            self.warnings.append(
                f"{ref.display} {key}: the stored password is encoded with the old encoder secret or does "
                "not decode; it is re-encoded with the current secret"
            )
        if state is None or state.state == "unknown":
            self.warnings.append(
                f"{ref.display} {key}: cannot tell whether the password changes (live value not decoded, "
                "is the encoder secret available?); it is rewritten"
            )
            return Change(key, "~", sensitive=True, redacted="unknown", secret=secret, source=source)
        if state.state == "unchanged":
            if not state.reencode:
                return None
            return Change(
                key, "~", sensitive=True, redacted="unchanged", secret=secret, reencode=True, source=source
            )
        return Change(key, "~", sensitive=True, redacted="changed", secret=secret, source=source)
