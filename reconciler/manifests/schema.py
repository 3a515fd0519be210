"""JSON Schema validation of manifest documents, with messages that name the key and point at its line.

The schemas (draft 2020-12, one per kind plus `common.json`) ship as package data in `reconciler/schemas`.
jsonschema's errors are rewritten for operators: `unknown field 'partiton' in spec.topics.orders (allowed:
config, partitions, replicationFactor); did you mean 'partitions'?` instead of a dump of the schema.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import Any, cast

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing import Registry, Resource

from reconciler.errors import Diagnostic
from reconciler.manifests.load import Document

API_VERSION = "reconciler/v1"
KINDS: Mapping[str, str] = MappingProxyType(
    {
        "Cluster": "cluster.json",
        "BrokerConfig": "broker-config.json",
        "Listeners": "listeners.json",
        "Topics": "topics.json",
        "Quotas": "quotas.json",
        "FleetDefaults": "fleet-defaults.json",
    }
)

JsonPath = tuple[str | int, ...]
_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true/false)",
    "null": "null",
}
# Rejections that mean "this branch of an anyOf is not the one the author meant" (wrong shape entirely).
_BRANCH_MISMATCH = frozenset({"type", "const", "enum", "required"})

# YAML `12.0` is a float; JSON Schema would count it as an integer, but a partition count of 12.0 is a typo.
_Strict: Any = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: type(value) is int
    ),
)


@cache
def _registry() -> Registry[Any]:
    """Every schema file, by its `$id`, so `common.json#/$defs/...` references resolve offline."""
    resources = []
    for entry in (files("reconciler") / "schemas").iterdir():
        if entry.name.endswith(".json"):
            contents = json.loads(entry.read_text(encoding="utf-8"))
            resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


@cache
def _validator(kind: str) -> Validator:
    registry = _registry()
    schema = registry.contents(f"https://kafka-reconciler.dev/schemas/v1/{KINDS[kind]}")
    return _Strict(schema, registry=registry)  # type: ignore[no-any-return]


def validate_document(doc: Document) -> list[Diagnostic]:
    """Every schema problem of one document, each at the line of the key it is about."""
    data = doc.data
    if not isinstance(data, dict):
        return [
            _diag(
                doc,
                (),
                f"a manifest must be a mapping with apiVersion, kind, meta and spec, got {_got(data)}",
            )
        ]
    diags: list[Diagnostic] = []
    if data.get("apiVersion") != API_VERSION:
        if "apiVersion" in data:
            message = f"apiVersion must be {API_VERSION!r}, got {_got(data['apiVersion'])}"
        else:
            message = f"missing required field 'apiVersion' (must be {API_VERSION!r})"
        diags.append(_diag(doc, ("apiVersion",), message, "apiVersion"))
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        valid = ", ".join(KINDS)
        if "kind" not in data:
            diags.append(_diag(doc, (), f"missing required field 'kind' (one of: {valid})", "kind"))
        else:
            hint = _did_you_mean(str(kind), KINDS)
            diags.append(
                _diag(doc, ("kind",), f"unknown kind {json.dumps(kind)}{hint} (valid kinds: {valid})", "kind")
            )
        return diags
    seen: set[tuple[JsonPath, str]] = set()
    for error in _validator(kind).iter_errors(data):
        for path, message, key in _explain(error):
            if len(path) <= 1 and (key or _last_key(path)) in ("apiVersion", "kind"):
                continue  # `required` at the top level: reported above
            if (path, message) not in seen:  # `required` yields one error per missing key, each listing all
                seen.add((path, message))
                diags.append(_diag(doc, path, message, key))
    return sorted(diags, key=Diagnostic.sort_key)


def _diag(doc: Document, path: JsonPath, message: str, key: str | None = None) -> Diagnostic:
    return Diagnostic("error", message, doc.mark(path), key if key is not None else _last_key(path))


def _explain(error: ValidationError) -> Iterator[tuple[JsonPath, str, str | None]]:
    """(path to point at, message, key) for one jsonschema error; anyOf/oneOf explain the branch meant."""
    path: JsonPath = tuple(error.absolute_path)
    kind, value, instance = error.validator, cast(Any, error.validator_value), cast(Any, error.instance)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    label = _label(path)
    if kind in ("anyOf", "oneOf"):
        yield from _explain_branches(error, path)
    elif kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        where = _dotted(path) or "the document"
        for extra in sorted(instance, key=str):
            if extra not in allowed and not any(p.search(extra) for p in patterns):
                listing = f" (allowed: {', '.join(allowed)})" if allowed else " (no fields allowed here)"
                message = f"unknown field {extra!r} in {where}{listing}{_did_you_mean(extra, allowed)}"
                yield (*path, extra), message, extra
    elif kind == "required" and isinstance(instance, dict):
        for name in value:
            if name not in instance:
                yield path, f"missing required field {name!r} in {_dotted(path) or 'the document'}", name
    elif "propertyNames" in error.relative_schema_path:  # the instance is the offending key itself
        what = schema.get("description", f"a name matching {schema.get('pattern')}")
        parent = path
        yield (*parent, instance), f"key {instance!r} in {_dotted(parent)} must be {what}", str(instance)
    elif kind == "type":
        types = [value] if isinstance(value, str) else list(value)
        expected = " or ".join(_TYPE_NAMES.get(t, t) for t in types)
        yield path, f"{label} must be {expected}, got {_got(instance)}{_quote_hint(types, instance)}", None
    elif kind == "enum":
        choices = ", ".join(json.dumps(v) for v in value)
        hint = _did_you_mean(str(instance), [str(v) for v in value]) if isinstance(instance, str) else ""
        yield path, f"{label} must be one of {choices}, got {_got(instance)}{hint}", None
    elif kind == "const":
        yield path, f"{label} must be {json.dumps(value)}, got {_got(instance)}", None
    elif kind == "pattern":  # a lower-case description is a noun phrase written for this message
        what = schema.get("description", "")
        what = what if what[:1].islower() else f"a string matching {value}"
        yield path, f"{label} must be {what}, got {_got(instance)}", None
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kind]
        yield path, f"{label} must be {op} {value}, got {_got(instance)}", None
    elif kind == "minItems":
        yield path, f"{label} must have at least {value} item{'s' if value != 1 else ''}", None
    elif kind == "uniqueItems" and isinstance(instance, list):
        dupes = sorted({json.dumps(v) for i, v in enumerate(instance) if v in instance[:i]})
        yield path, f"{label} lists {', '.join(dupes)} more than once", None
    elif kind == "minLength" and value == 1:
        yield path, f"{label} must not be empty", None
    elif kind in ("minProperties", "maxProperties") and "properties" in schema:
        names = ", ".join(schema["properties"])
        count = (
            "exactly one"
            if schema.get("minProperties") == schema.get("maxProperties") == 1
            else "a valid set"
        )
        yield path, f"{label} must name {count} of: {names}", None
    else:
        yield path, f"{label}: {error.message}", None


def _explain_branches(error: ValidationError, path: JsonPath) -> Iterator[tuple[JsonPath, str, str | None]]:
    """anyOf/oneOf: explain the branch whose shape fits the value, or say what the value may be."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    fitting = [
        errs
        for errs in branches.values()
        if not any(e.validator in _BRANCH_MISMATCH and tuple(e.absolute_path) == path for e in errs)
    ]
    description = error.schema.get("description") if isinstance(error.schema, Mapping) else None
    if len(fitting) > 1:  # prefer the branches whose shape matched at this level (errors only deeper inside)
        depth = {id(errs): min(len(e.absolute_path) for e in errs) for errs in fitting}
        deepest = max(depth.values())
        fitting = [errs for errs in fitting if depth[id(errs)] == deepest]
    # A scalar that fits no branch reads best as "must be <description>"; a mapping or list as its own errors.
    if len(fitting) == 1 and (not description or isinstance(error.instance, dict | list)):
        for sub in fitting[0]:
            yield from _explain(sub)
    elif len(fitting) > 1:
        yield from _explain(best_match(e for errs in fitting for e in errs))
    elif description:
        message = f"{_label(path)} must be {description.rstrip('.')}; got {_got(error.instance)}"
        yield path, message, None
    else:
        yield path, f"{_label(path)} is not valid here: {_got(error.instance)}", None


def _last_key(path: Sequence[str | int]) -> str | None:
    return next((p for p in reversed(path) if isinstance(p, str)), None)


def _label(path: JsonPath) -> str:
    """How a message names a value: its key, or the item of a list."""
    if not path:
        return "the document"
    if isinstance(path[-1], int):
        return f"item {path[-1] + 1} of {_label(path[:-1])}"
    return repr(path[-1])


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return f"string {text}" if len(text) <= 80 else f'string {text[:76]}..."'
    return (
        "a mapping"
        if isinstance(value, dict)
        else "a list"
        if isinstance(value, list)
        else type(value).__name__
    )


def _quote_hint(types: Sequence[str], value: Any) -> str:
    """YAML turned what was meant as text into a number or boolean: say how to keep it a string."""
    if "string" not in types or not isinstance(value, int | float):
        return ""
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    hint = f'; quote it in YAML to keep it a string ("{shown}")'
    if isinstance(value, float):
        hint += ", or a version like 3.10 is read as the number 3.1"
    return hint


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    options = list(choices)
    lowered = {c.lower(): c for c in options}
    match = lowered.get(word.lower()) or next(
        iter(difflib.get_close_matches(word, options, n=1, cutoff=0.6)), None
    )
    return f"; did you mean {match!r}?" if match else ""
