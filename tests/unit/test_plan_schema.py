"""Issue 28, finding 6 (second half): a malformed plan file gives `show` and `apply` one clear line, never a
traceback. The file is checked against `reconciler/data/plan-file.json` before any field is used.

The property test mutates a valid plan file in many ways (a value replaced by another type, a field deleted or
added, a list or object wrapped), recomputes the plan id so that the mutation reaches past the id check, and runs
`show` in every format: the command either shows the plan or exits 1 with one line on stderr.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.cli.main import run
from reconciler.manifests.planfile import SCHEMA, read_plans
from reconciler.plan import _content_id
from reconciler.render.json import render_plan_file
from tests.unit.test_render import sample_plans

VALID = json.loads(render_plan_file(sample_plans()))

MALFORMED: dict[str, tuple[Any, str]] = {
    "entities is a number": ({**VALID["plans"][0], "entities": 5}, "entities: expected a list"),
    "a plan is null": ({"plans": [None]}, "plans[0]: expected an object"),
    "plans is a string": ({"plans": "x"}, "plans: expected a list"),
    "a list, not an object": ([1, 2], "the file: expected an object"),
    "no cluster": ({k: v for k, v in VALID["plans"][0].items() if k != "cluster"}, "missing field 'cluster'"),
    "partitions as text": (
        {"plans": [{**VALID["plans"][0], "topicsToCreate": [{**VALID["plans"][0]["topicsToCreate"][0],
                                                            "partitions": "12"}]}]},
        "plans[0].topicsToCreate[0].partitions: expected an integer"),
    "a secret with two references": (
        {"plans": [{**VALID["plans"][0], "entities": [{"entity": {"type": "brokers", "name": "1"}, "changes": [
            {"key": "k", "op": "~", "sensitive": True, "secret": {"env": "A", "file": "b"}}]}]}]},
        "plans[0].entities[0].changes[0].secret: none of the allowed shapes"),
    "an unknown op": (
        {"plans": [{**VALID["plans"][0], "entities": [{"entity": {"type": "brokers", "name": "1"},
                                                        "changes": [{"key": "k", "op": "x"}]}]}]},
        "plans[0].entities[0].changes[0].op: not one of the allowed values"),
    "an unknown entity type": (
        {"plans": [{**VALID["plans"][0], "entities": [{"entity": {"type": "widgets", "name": "1"}, "changes": []}]}]},
        "plans[0].entities[0].entity.type: not one of the allowed values"),
    "a huge number": ({"plans": [{**VALID["plans"][0], "ignored": 10**40}]}, "plans[0].ignored: number out of range"),
    "another format version": ({**VALID, "formatVersion": 2}, "unsupported plan format version"),
    "a field of another tool": ({**VALID, "plans": [{**VALID["plans"][0], "approvedBy": "me"}]},
                                "plans[0]: unknown field(s) 'approvedBy'"),
    "a partition that is not a number": (
        {"plans": [{**VALID["plans"][0], "topicsToCreate": [{**VALID["plans"][0]["topicsToCreate"][0],
                                                            "assignment": {"p0": [1]}}]}]},
        "plans[0].topicsToCreate[0].assignment: a partition number is expected as a key"),
}


def test_the_schema_is_valid_2020_12_and_accepts_what_plan_writes() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert read_plans(render_plan_file(sample_plans())) == sample_plans()
    for plan in VALID["plans"]:  # one plan on its own is a plan file too
        assert read_plans(json.dumps(plan)) == [p for p in sample_plans() if p.cluster == plan["cluster"]]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_plan_files_are_named_in_one_line(case: str) -> None:
    doc, expected = MALFORMED[case]
    with pytest.raises(ValueError) as caught:
        read_plans(json.dumps(doc))
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["", "{", "[" * 100_000, '{"plans": [' + "9" * 5000 + "]}", "NaN", "\ufeff{}"])
def test_text_that_is_not_json_is_one_line_too(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        read_plans(text)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200


# --- the property: mutate a valid plan file many ways --------------------------------------------------

_JUNK_VALUES: list[Any] = (
    [None, True, 0, -1, 2**31, 10**30, 1.5, 3.0, float("inf"), "", "x", "+", "~", "-", "brokers", "users", [],
     [None], [1, 2, 3], ["a", 1, 1], {}, {"env": "E"}, {"env": "E", "file": "f"}, {"encoded": 5}, {"type": "topics"},
     {"type": "users", "name": "u", "client": "c"}, {"type": "topics", "name": "t", "client": "c"}, {"0": [1]},
     {"x": [1]}, {"0": "1"}]
)
_JUNK = st.sampled_from(_JUNK_VALUES).map(copy.deepcopy)  # a fresh object each time: mutations never share one


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(_paths(value, (*path, index)))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def _mutated(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["replace", "delete", "add", "wrap"]))
        if not path:
            doc = draw(_JUNK) if how == "replace" else doc
            continue
        parent, last = _at(doc, path[:-1]), path[-1]
        if how == "replace":
            parent[last] = draw(_JUNK)
        elif how == "delete":
            del parent[last]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "secret", "client", "rotation", "deleteEntity"]))] = draw(_JUNK)
        elif how == "wrap":
            parent[last] = [parent[last]] if draw(st.booleans()) else {"value": parent[last]}
        if not isinstance(doc, dict):
            break
    if draw(st.booleans()) and isinstance(doc, dict):  # past the id check: what an editor who rehashes gets
        for plan in doc.get("plans", []) if isinstance(doc.get("plans"), list) else []:
            if isinstance(plan, dict):
                plan["planId"] = _content_id(plan)
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                        HealthCheck.function_scoped_fixture])
@given(doc=_mutated(), fmt=st.sampled_from(["text", "markdown", "json"]))
def test_a_mutated_plan_file_is_shown_or_refused_in_one_line_never_a_traceback(
    doc: Any, fmt: str, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path_factory.mktemp("plans") / "plan.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()
    code = run(["--no-color", "show", str(path), "--format", fmt])  # an unexpected exception fails the test
    out, err = capsys.readouterr()
    assert code in (0, 1), (code, err)
    assert "Traceback" not in out + err
    if code == 1:
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert "cannot read plan file" in err


@pytest.mark.parametrize("damage", [b"\xc3(", b"\xff\xfe", b"\xed\xa0\x80"])  # cut sequence, UTF-16 BOM, surrogate
def test_a_plan_file_that_is_not_utf8_is_refused_naming_the_byte(
    damage: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is handed to the parser as bytes (no decoding first): bytes that are not UTF-8 are still refused
    in one line, with the offending byte and where it is."""
    text = render_plan_file(sample_plans()).encode("utf-8")
    at = text.index(b'"cluster"') + len(b'"cluster": "')
    path = tmp_path / "plan.json"
    path.write_bytes(text[:at] + damage + text[at:])
    capsys.readouterr()
    assert run(["--no-color", "show", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert f"cannot read plan file {path}: not valid UTF-8 (byte 0x{damage[0]:02x} at offset {at})" in err, err
