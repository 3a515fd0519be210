"""Manifest values -> canonical desired values: scalars and lists to Kafka strings, secret references kept.

`null` is not a value: it asks to remove an inherited key, so it is returned as `REMOVE` and the caller
decides whether something was inherited to remove.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from reconciler.catalog import ConfigKey
from reconciler.errors import Diagnostic
from reconciler.manifests.fleet import Layered
from reconciler.manifests.load import Document
from reconciler.model import DesiredValue, SecretRef, SourceRef
from reconciler.values import canonical, to_kafka_string


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Final = _Remove()
KeyLookup = Callable[[str], ConfigKey | None]


def secret_ref(raw: Mapping[str, Any]) -> SecretRef:
    """`{secret: {env|file}}` and `{encoded}` in configs; the Cluster writes `{env|file}` directly."""
    if "encoded" in raw:
        return SecretRef(encoded=str(raw["encoded"]))
    inner = raw.get("secret", raw)
    return SecretRef(env=inner["env"]) if "env" in inner else SecretRef(file=str(inner["file"]))


def convert(raw: Any, key: str, lookup: KeyLookup, source: SourceRef) -> DesiredValue | _Remove:
    if raw is None:
        return REMOVE
    if isinstance(raw, Mapping):
        return DesiredValue(secret_ref(raw), source)
    return DesiredValue(canonical(lookup(key), to_kafka_string(raw)), source)


def layer_config(
    inherited: Mapping[str, Layered],
    own: Mapping[str, Any] | None,
    mark: Callable[[str], SourceRef],
    lookup: KeyLookup,
    diags: list[Diagnostic],
    what: str,
) -> dict[str, DesiredValue]:
    """Inherited values overlaid by the document's own (`mark(key)` says where each is written).

    `null` removes an inherited key; with nothing inherited to remove it is an error.
    """
    result = inherited_config(inherited, lookup)
    overlay_config(result, own, mark, lookup, diags, what)
    return result


def inherited_config(inherited: Mapping[str, Layered], lookup: KeyLookup) -> dict[str, DesiredValue]:
    """The inherited layer alone (the same for every topic of a document: convert it once, copy it)."""
    result: dict[str, DesiredValue] = {}
    for key, layered in inherited.items():
        value = convert(layered.raw, key, lookup, layered.source)
        if isinstance(value, DesiredValue):
            result[key] = value
    return result


def overlay_config(
    result: dict[str, DesiredValue],
    own: Mapping[str, Any] | None,
    mark: Callable[[str], SourceRef],
    lookup: KeyLookup,
    diags: list[Diagnostic],
    what: str,
    cache: dict[tuple[str, type, Any], str] | None = None,
) -> None:
    """`layer_config`'s second step, in place. `cache`: canonical strings by (key, type, raw scalar), for
    callers whose `lookup` stays the same across calls (the topics of one cluster repeat few values)."""
    for key, raw in (own or {}).items():
        source = mark(key)
        kind = type(raw)
        if cache is not None and kind in _CACHEABLE:
            memo = (key, kind, raw)  # the type too: True == 1 == 1.0, but "true", "1" and "1.0" differ
            text = cache.get(memo)
            if text is None:
                text = cache[memo] = canonical(lookup(key), to_kafka_string(raw))
            result[key] = DesiredValue(text, source)
            continue
        value = convert(raw, key, lookup, source)
        if isinstance(value, DesiredValue):
            result[key] = value
        elif key in result:
            del result[key]
        else:
            diags.append(
                Diagnostic(
                    "error",
                    f"null is only allowed to remove a key inherited from FleetDefaults or topic defaults, "
                    f"and {what} does not inherit {key!r}; delete the line instead",
                    source,
                    key,
                )
            )


_CACHEABLE = frozenset({str, int, float, bool})  # scalars convert() turns into canonical(lookup(key), ...)


def marker(doc: Document, *path: str | int) -> Callable[[str], SourceRef]:
    """Where the keys of the mapping at `path` in `doc` are written."""
    return doc.marker(path)
