"""Client, user and IP quota entities (ground truth §4.3): known keys only, integers for LONG/INT rates."""

from __future__ import annotations

import ipaddress

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, SecretRef
from reconciler.values import check

SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def check_quotas(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for ref, entity in state.entities.items():
        if ref.entity_type not in ("clients", "users", "ips"):
            continue
        kind = ref.quota_kind
        if ref.entity_type == "ips" and ref.name != DEFAULT_ENTITY:
            try:
                ipaddress.ip_address(ref.name)
            except ValueError:
                diags.append(Diagnostic(
                    "warning",
                    f"'{ref.name}' is not an IP address; Kafka accepts a host name only if it resolves when written",
                    entity.source, ref.name,
                ))
        for key, value in entity.config.items():
            if key in SCRAM_KEYS:
                diags.append(Diagnostic(
                    "error",
                    f"'{key}' is a SCRAM credential, not a quota; credentials are left to kafka-configs "
                    "(the reconciler never touches them)",
                    value.source, key,
                ))
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
            reason = check(base, value.value)
            if reason is not None:
                integral = base.type in ("LONG", "INT", "SHORT")
                tip = " (rates of this kind must be whole numbers)" if integral else ""
                diags.append(Diagnostic(
                    "error", f"invalid value '{value.value}' for quota '{key}': {reason}{tip}", value.source, key
                ))
    return diags
