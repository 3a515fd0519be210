"""The Quotas kind's `scramUsers:` section -> SCRAM credential keys of `users/<user>` entities.

    scramUsers:
      alice:
        SCRAM-SHA-256: {password: {secret: {env: ALICE_PW}}, iterations: 8192}

Kafka keeps a user's SCRAM credentials in the same znode as the user's quotas (`/config/users/<sanitized>`,
keys `SCRAM-SHA-256` / `SCRAM-SHA-512`, `ConfigCommand.alterConfigWithZk`), so each credential becomes a key
of that entity, next to any quota the `users:` section declares for the same user: one entity, one change.
The value is the password's secret reference with its iteration count (`DesiredValue.iterations`); the stored
credential is made from them at apply time (secrets/scram.py). Names are taken literally (a user called
`default` is that user; `<default>` has no credentials). Kafka's rules are checked in rules/quotas.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.errors import Diagnostic
from reconciler.manifests.convert import secret_ref
from reconciler.manifests.desired_parts import Declared
from reconciler.manifests.load import Document
from reconciler.model import DEFAULT_ENTITY, DesiredValue, EntityRef
from reconciler.secrets.scram import DEFAULT_ITERATIONS


def build_scram_users(documents: Sequence[Document], declared: Declared, diags: list[Diagnostic]) -> None:
    for doc in documents:
        if doc.data.get("kind") != "Quotas":
            continue
        users: Mapping[str, Any] = (doc.data.get("spec") or {}).get("scramUsers") or {}
        for user, mechanisms in users.items():
            path = ("spec", "scramUsers", user)
            if str(user) == DEFAULT_ENTITY:
                diags.append(Diagnostic("error", "SCRAM credentials belong to a named user; <default> (the default "
                                        "quota entity) cannot log in", doc.mark(path), str(user)))
                continue
            ref = EntityRef("users", str(user))
            config: dict[str, DesiredValue] = {}
            for mechanism, credential in (mechanisms or {}).items():
                source = doc.mark((*path, mechanism))
                iterations = credential.get("iterations", DEFAULT_ITERATIONS)
                config[mechanism] = DesiredValue(secret_ref(credential["password"]), source, int(iterations))
            _merge(declared, ref, config, doc, path, diags)


def _merge(
    declared: Declared, ref: EntityRef, config: Mapping[str, DesiredValue], doc: Document,
    path: tuple[str, ...], diags: list[Diagnostic],
) -> None:
    """Beside the user's quotas (declared by a `users:` section in any document), never twice."""
    target = declared.configs.get(ref)
    if target is None:
        declared.add_entity(ref, config, doc.mark(path), diags)
        return
    for key, value in config.items():
        if key in target:
            diags.append(Diagnostic("error", f"{key} of {ref.display} is declared twice (first at "
                                    f"{target[key].source}); keep one declaration", value.source, key))
            continue
        target[key] = value
