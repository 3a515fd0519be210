"""Key-level comparison of one entity's desired and live config (used by `diff.build_plan`).

Values are compared in Kafka's canonical form with the catalog key of the right scope, so `"604800000"` vs
`604800000`, `TRUE` vs `true` or `a, b` vs `a,b` are never reported. Sensitive values never leave as text:
their change state comes from a `SecretState` computed by an adapter that can decode live passwords.
Pure: standard library and the core only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reconciler import values
from reconciler.catalog import SCRAM_KEYS, Catalog, ConfigKey
from reconciler.errors import Diagnostic
from reconciler.model import (
    KRAFT_ENTITY_TYPES,
    REPLICATION_THROTTLE_KEYS,
    DesiredValue,
    EntityRef,
    SecretRef,
    SecretState,
    SourceRef,
)
from reconciler.plan import Change

# SCRAM credentials share the users/<user> znode with quotas (SCRAM_KEYS). A user's credentials are managed
# only when its `scramUsers:` entry declares one (then an undeclared mechanism is removed); removing them because
# only a quota was declared would lock the user out.


class Comparer:
    """Catalog lookups and comparisons per (scope, key), memoised: a 10,000-topic diff compares the same few
    keys and value pairs over and over."""

    def __init__(self, catalog: Catalog, version: str | None) -> None:
        self.catalog = catalog
        self.version = version
        self._info: dict[tuple[str, str], tuple[ConfigKey | None, bool]] = {}
        self._equal: dict[tuple[str, str, str, str], bool] = {}
        self._plain: dict[str, set[str]] = {}  # per scope: keys found not to be passwords

    def _lookup(self, scope: str, name: str) -> tuple[ConfigKey | None, bool]:
        info = self._info.get((scope, name))
        if info is None:
            key: ConfigKey | None
            password = self.catalog.is_password(name)
            if scope == "topics":
                key = self.catalog.topic(name, self.version)
            elif scope == "brokers":
                resolved = self.catalog.resolve_broker(name, self.version)
                key, password = resolved.base, password or resolved.password
            elif scope in KRAFT_ENTITY_TYPES:  # groups, client-metrics, features (catalog/line.py)
                key = self.catalog.entity_key(scope, name, self.version)
            else:
                key = self.catalog.quota(scope, name)
            info = self._info[(scope, name)] = (key, password)
        return info

    def key_for(self, scope: str, name: str) -> ConfigKey | None:
        """`scope` is `EntityRef.quota_kind`: topics, brokers, clients, users, user-clients, ips."""
        return self._lookup(scope, name)[0]

    def is_password(self, scope: str, name: str) -> bool:
        return self._lookup(scope, name)[1]

    def is_sensitive(self, scope: str, name: str) -> bool:
        """Whether a live value of `name` is never shown (`Catalog.is_sensitive`: also keys of unknown type)."""
        return self.catalog.is_sensitive(name, scope)

    def none_password(self, scope: str, names: Iterable[str]) -> bool:
        """No name is a password: one set comparison once the scope's keys were seen (every entity asks)."""
        plain = self._plain.setdefault(scope, set())
        if plain.issuperset(names):
            return True
        for name in names:
            if self._lookup(scope, name)[1]:
                return False
            plain.add(name)
        return True

    def equal(self, scope: str, name: str, desired: str, live: str) -> bool:
        if desired == live:
            return True
        memo = (scope, name, desired, live)
        same = self._equal.get(memo)
        if same is None:
            # Unknown keys compare trimmed (Java's trim, as the broker reads them); known ones canonically.
            same = self._equal[memo] = values.equal(self._lookup(scope, name)[0], desired, live)
        return same


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
    prune_scram: bool = False  # policy.pruneScramUsers: undeclared SCRAM credentials are removed

    def always_ignored(self, ref: EntityRef, key: str) -> bool:
        """Live keys left alone: always (ignoreKeys), or unless declared (replication throttles, SCRAM unless
        policy.pruneScramUsers)."""
        return (
            key in self.ignore_keys
            or key in REPLICATION_THROTTLE_KEYS
            or (ref.entity_type == "users" and key in SCRAM_KEYS and not self.prune_scram)
            or ref.entity_type == "features"  # a level no manifest declares is left as finalized, never lowered
        )

    def diff(
        self,
        ref: EntityRef,
        desired: Mapping[str, DesiredValue],
        live: Mapping[str, str],
        entity_source: SourceRef | None,
    ) -> EntityDiff:
        scope = ref.quota_kind
        if desired.keys() == live.keys() and self._in_sync(scope, desired, live):
            return EntityDiff(empty_after=not live)  # what the loop below finds for it, without the detour
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
                if self.always_ignored(ref, key) and not (key in SCRAM_KEYS and _declares_scram(ref, desired)):
                    # `Ignored:` counts keys left alone by policy.ignoreKeys and the replication throttles; a
                    # user's undeclared SCRAM credential is not a config key left alone: never counted there
                    out.ignored += key not in SCRAM_KEYS and ref.entity_type != "features"  # levels: not config
                    out.empty_after = False
                    continue
                out.changes.append(self._remove(scope, key, have, entity_source))
                continue
            out.empty_after = False
            change = self._set(ref, scope, key, want, have)
            if change is not None:
                out.changes.append(change)
        return out

    def _in_sync(self, scope: str, desired: Mapping[str, DesiredValue], live: Mapping[str, str]) -> bool:
        """Every key declared and stored with the same text, none ignored, none a password (most entities of
        a cluster in sync): no change, nothing ignored, no diagnostic."""
        return (
            not self.ignore_keys.intersection(live)
            and all(type(want.value) is str and want.value == live[key] for key, want in desired.items())
            and self.comparer.none_password(scope, desired)
        )

    def _remove(self, scope: str, key: str, have: str, source: SourceRef | None) -> Change:
        # the live value of a password, or of a key whose type Kafka does not know (`ldap.bind.pw` a plugin
        # reads), never reaches a plan: a PR comment would show it to anyone who declares the entity
        if self.comparer.is_sensitive(scope, key):
            return Change(key, "-", sensitive=True, redacted="changed", source=source)
        return Change(key, "-", before=have, source=source)

    def _set(
        self, ref: EntityRef, scope: str, key: str, want: DesiredValue, have: str | None
    ) -> Change | None:
        value = want.value
        if isinstance(value, SecretRef):
            return self._set_secret(ref, key, value, want.source, have, want.iterations)
        if self.comparer.is_password(scope, key):
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
        if self.comparer.equal(scope, key, value, have):
            return None
        return Change(key, "~", before=have, after=value, source=want.source)

    def _set_secret(
        self, ref: EntityRef, key: str, secret: SecretRef, source: SourceRef | None, have: str | None,
        iterations: int | None = None,
    ) -> Change | None:
        """`iterations`: a SCRAM credential's (apply derives it from the secret with them)."""
        if have is None:
            return Change(key, "+", sensitive=True, redacted="changed", secret=secret, source=source,
                          iterations=iterations)
        state = self.secret_states.get((ref, key))  # the adapter warned once per key for a re-encode
        if state is None or state.state == "unknown":
            if state is None:  # no comparison ran (the adapter warns once per cluster for those it ran)
                self.warnings.append(
                    f"{ref.display} {key}: cannot tell whether the password changes (live value not "
                    "decoded: is the encoder secret available?); it is rewritten"
                )
            return Change(key, "~", sensitive=True, redacted="unknown", secret=secret, source=source,
                          iterations=iterations)
        if state.state == "unchanged":
            if not state.reencode:
                return None
            return Change(key, "~", sensitive=True, redacted="unchanged", secret=secret, reencode=True,
                          rotation=state.rotation, source=source)
        return Change(key, "~", sensitive=True, redacted="changed", secret=secret, source=source,
                      iterations=iterations)


def _declares_scram(ref: EntityRef, desired: Mapping[str, DesiredValue]) -> bool:
    """Whether the manifests manage this user's SCRAM credentials (a `scramUsers:` entry declares one)."""
    return ref.entity_type == "users" and ref.client is None and not SCRAM_KEYS.isdisjoint(desired)
