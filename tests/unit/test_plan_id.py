"""The plan id's canonical JSON: orjson's bytes are the stdlib's `json.dumps(sort_keys=True, compact,
ensure_ascii=False)`, so a plan's id does not depend on which of the two made it (plan.canonical_json)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.plan import canonical_json, compute_plan_id, plan_from_dict, plan_to_dict

# What a plan file holds: strings (any code point but lone surrogates, control characters included), 64-bit
# integers, booleans, null, lists and objects.
_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]))
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1), _TEXT)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8), inner, max_size=5),
    max_leaves=30,
)


def _stdlib(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_canonical_json_is_the_stdlibs_bytes(value: Any) -> None:
    assert canonical_json(value) == _stdlib(value)


@pytest.mark.parametrize("text", ["\x00\x1f\x7f", "\u2028\u2029", "é naïve 日本", "\"\\/", "\U0001f600",
                                  "\ud7ff\ue000"])
def test_canonical_json_escapes_as_json_does(text: str) -> None:
    value = {"b": text, "a": [text, {text: 1}]}
    assert canonical_json(value) == _stdlib(value)


def test_what_orjson_refuses_goes_to_json() -> None:
    value = {"baseVersion": 10**30, "n": -(2**64)}  # beyond 64 bits: a hand-edited file may hold it
    assert canonical_json(value) == _stdlib(value)


def test_a_lone_surrogate_is_refused_by_both() -> None:
    with pytest.raises(ValueError):  # UnicodeEncodeError: no id for text that is not UTF-8
        canonical_json({"name": "\ud800"})


def test_the_id_of_a_plan_is_stable_across_a_round_trip() -> None:
    raw = {
        "formatVersion": 1, "cluster": "prod-é", "kafkaVersion": "3.9", "createdAt": "2026-01-01T00:00:00Z",
        "entities": [{"entity": {"type": "topics", "name": "orders\u2028x"}, "baseVersion": 3, "changes": [
            {"key": "retention.ms", "op": "~", "before": "1", "after": "2", "reasons": ["a \"quoted\" reason"]}]}],
    }
    plan = plan_from_dict(raw)
    assert compute_plan_id(plan) == compute_plan_id(plan_from_dict(plan_to_dict(plan)))
    content = {k: v for k, v in plan_to_dict(plan).items() if k not in ("planId", "createdAt")}
    stdlib = hashlib.sha256(_stdlib(content)).hexdigest()[:16]
    assert compute_plan_id(plan) == stdlib  # the id the json-only code before orjson gave this plan
