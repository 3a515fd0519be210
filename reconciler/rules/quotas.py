"""Client, user and IP quota entities (ground truth §4.3): known keys only, integers for LONG/INT rates."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from reconciler.catalog import SCRAM_KEYS, Catalog  # ScramMechanism.mechanismName of each
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, DesiredValue, EntityRef, SecretRef, SourceRef, sanitize
from reconciler.units import unit_hint
from reconciler.values import problem, shown

# ScramMechanism.minIterations / maxIterations (both mechanisms): the brokers' ScramSaslServer refuses a
# credential with fewer iterations at login; ZkAdminManager.alterUserScramCredentials refuses more than 16384.
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384
PRINCIPAL_PREFIX = "User:"
_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def _ip_entity(name: str, source: SourceRef | None) -> Iterator[Diagnostic]:
    """`DynamicConfig.Ip.isValidIpEntity`: `InetAddress.getByName(name)` must succeed. An IP literal always does;
    text that can be no host name (a CIDR range, `10.0.0.300`, spaces) never does; a host name depends on DNS
    when the broker reads it, so it is a warning (and IP quotas match connections by address)."""
    try:
        ipaddress.ip_address(name)
        return
    except ValueError:
        pass
    labels = name.rstrip(".").split(".")
    numeric = all(label.isdigit() for label in labels)
    if numeric or not all(_LABEL.match(label) for label in labels) or len(name) > 253:
        yield Diagnostic("error", f"'{name}' is not a valid IP or resolvable host (Kafka's "
                         "DynamicConfig.Ip.isValidIpEntity; IP quotas name one address, not a range)", source, name)
        return
    yield Diagnostic("warning", f"'{name}' is not an IP address; Kafka accepts a host name only if it resolves when "
                     "written, and IP quotas apply to the address connections come from", source, name)


def _principal_prefixed(name: str, source: SourceRef | None) -> Diagnostic:
    """Kafka keys user quotas by the principal's *name* (ClientQuotaManager: `KafkaPrincipal.getName`,
    sanitized), never by `User:<name>`, so a quota written with the type prefix matches no client."""
    bare = name[len(PRINCIPAL_PREFIX):]
    return Diagnostic("error", f"user quota '{name}' would never apply: Kafka matches user quotas by the "
                      f"principal's name without its type (ClientQuotaManager uses KafkaPrincipal.getName); "
                      f"write '{bare}'", source, name)


# Path components ZooKeeper refuses (PathUtils.validatePath: "relative paths not allowed", "empty node name").
_NOT_A_ZNODE = frozenset({"", ".", ".."})


def _znode_names(ref: EntityRef, source: SourceRef | None) -> Iterator[Diagnostic]:
    """User principals and client ids become znode names through Kafka's `Sanitizer.sanitize`
    (`java.net.URLEncoder`: `/` is %2F, NUL %00, `*` %2A), which leaves '.' as it is; so '.', '..' and the
    empty name give a path ZooKeeper refuses, and Kafka's own tools (`AdminZkClient.changeConfigs`) fail on
    them too. The check is on the sanitised name, exactly what apply would write."""
    parts = [("user" if ref.entity_type == "users" else "client id", ref.name)]
    if ref.client is not None:
        parts.append(("client id", ref.client))
    for what, name in parts:
        if name != DEFAULT_ENTITY and sanitize(name) in _NOT_A_ZNODE:
            yield Diagnostic(
                "error",
                f"quota {what} {name!r} cannot be stored: Kafka names its znode with Sanitizer.sanitize, which keeps "
                "'.' as it is, and ZooKeeper refuses the path components '', '.' and '..' (so would kafka-configs)",
                source, name,
            )


def _scram_credential(ref: EntityRef, key: str, value: DesiredValue) -> Iterator[Diagnostic]:
    """A `scramUsers:` credential (manifests/scram.py): a secret reference to a password (env or file; a sealed
    value is encoded for the brokers' password encoder, not a password this tool can derive keys from) and
    iterations within ScramMechanism's bounds. A SCRAM key written among a user's quotas is refused."""
    if value.iterations is None or ref.entity_type != "users" or ref.client is not None:
        example = f"scramUsers: {{<user>: {{{key}: {{password: {{secret: {{env: NAME}}}}, iterations: 8192}}}}}}"
        yield Diagnostic("error", f"'{key}' is a SCRAM credential, not a quota; declare it under scramUsers "
                         f"({example})", value.source, key)
        return
    if not isinstance(value.value, SecretRef) or value.value.encoded is not None:
        yield Diagnostic("error", f"the {key} password of user {ref.name!r} must be a secret reference "
                         "({secret: {env: NAME}} or {secret: {file: PATH}}), never plaintext or sealed",
                         value.source, key)
    if not SCRAM_MIN_ITERATIONS <= value.iterations <= SCRAM_MAX_ITERATIONS:
        yield Diagnostic("error", f"{key} iterations {value.iterations} of user {ref.name!r} is outside Kafka's "
                         f"{SCRAM_MIN_ITERATIONS}..{SCRAM_MAX_ITERATIONS} (ScramMechanism.minIterations/"
                         "maxIterations: the brokers refuse fewer at login, ZkAdminManager refuses more)",
                         value.source, key)


def check_quotas(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for ref, entity in state.entities.items():
        if ref.entity_type not in ("clients", "users", "ips"):
            continue
        kind = ref.quota_kind
        if ref.entity_type == "ips" and ref.name != DEFAULT_ENTITY:
            diags.extend(_ip_entity(ref.name, entity.source))
        if ref.entity_type in ("users", "clients"):
            diags.extend(_znode_names(ref, entity.source))
        if ref.entity_type == "users" and ref.name.startswith(PRINCIPAL_PREFIX):  # each place to fix
            diags.append(_principal_prefixed(ref.name, entity.source))
        for key, value in entity.config.items():
            if key in SCRAM_KEYS:
                diags.extend(_scram_credential(ref, key, value))
                continue
            base = catalog.quota(kind, key)
            if base is None:
                valid = ", ".join(n for n in catalog.names(kind) if n not in SCRAM_KEYS)
                hint = catalog.suggest(key, kind)
                did = f"; did you mean '{hint}'?" if hint else ""
                diags.append(Diagnostic(
                    "error", f"unknown quota config '{key}' for {ref.display}{did} (valid: {valid})", value.source, key
                ))
                continue
            if isinstance(value.value, SecretRef):
                diags.append(Diagnostic("error", f"quota '{key}' is not a secret; write a number", value.source, key))
                continue
            reason = problem(base, value.value)
            if reason is not None:
                integral = base.type in ("LONG", "INT", "SHORT")
                tip = unit_hint(key, value.value) or (" (rates of this kind must be whole numbers)" if integral else "")
                diags.append(Diagnostic(
                    "error", f"invalid value '{shown(value.value)}' for quota '{key}': {reason}{tip}", value.source, key
                ))
    return diags
