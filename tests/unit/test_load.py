"""The strict YAML loader: core-schema scalars, positions of keys and items, and every refusal."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.errors import Diagnostic
from reconciler.manifests import load
from reconciler.manifests.load import MAX_DEPTH, MAX_FILE_BYTES, Document, load_file, load_text
from reconciler.model import SourceRef


def one(text: str | bytes) -> Document:
    docs, diags = load_text(text, "f.yaml")
    assert diags == [], [d.render() for d in diags]
    assert len(docs) == 1
    return docs[0]


def errors(text: str | bytes) -> list[Diagnostic]:
    docs, diags = load_text(text, "f.yaml")
    assert diags, f"expected a diagnostic, loaded {docs}"
    assert all(d.severity == "error" for d in diags)
    return diags


# --- scalars: YAML 1.2 core schema -----------------------------------------------------------------------

SCALARS: list[tuple[str, Any]] = [
    ("true", True),
    ("True", True),
    ("TRUE", True),
    ("false", False),
    ("FALSE", False),
    ("yes", "yes"),
    ("no", "no"),
    ("on", "on"),
    ("off", "off"),
    ("y", "y"),
    ("tRuE", "tRuE"),
    ("null", None),
    ("Null", None),
    ("~", None),
    ("", None),
    ("0", 0),
    ("12", 12),
    ("-12", -12),
    ("+12", 12),
    ("007", 7),
    ("604800000", 604800000),
    ("0x1F", 31),
    ("0o17", 15),
    ("1_000", "1_000"),
    ("1:20", "1:20"),
    ("0b101", "0b101"),
    ("2001-12-14", "2001-12-14"),
    ("1.5", 1.5),
    ("-1.5e3", -1500.0),
    ("1e3", 1000.0),
    (".5", 0.5),
    ("3.10", 3.1),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    ("+.INF", math.inf),
    ("nginx", "nginx"),
    ("1.2.3", "1.2.3"),
    ("0x", "0x"),
    ("+", "+"),
    ("-x", "-x"),
    ("..", ".."),
    ("'12'", "12"),
    ('"true"', "true"),
    ("'null'", "null"),
    ('""', ""),
    ("!!str 12", "12"),
    ("! 12", "12"),
    ("!!int '12'", 12),
    ("!!float 3", 3.0),
    ("!!bool true", True),
    ("!!null ~", None),
    ("|\n  x\n  y", "x\ny\n"),
    (">-\n  a\n  b", "a b"),
    ("héllo wörld ✓", "héllo wörld ✓"),
    ("SCRAM-SHA-512", "SCRAM-SHA-512"),
    ("ScramLoginModule required;", "ScramLoginModule required;"),
]


@pytest.mark.parametrize(("source", "expected"), SCALARS)
def test_scalars_resolve_like_yaml_1_2_core(source: str, expected: Any) -> None:
    value = one(f"v: {source}\n").data["v"]
    assert value == expected and type(value) is type(expected)


def test_nan() -> None:
    assert math.isnan(one("v: .nan\n").data["v"])
    assert one("v: -.nan\n").data["v"] == "-.nan"  # the core schema has no signed NaN


def test_pure_python_parser_gives_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: 1\nb: [x, {c: 'y'}]\n1: yes\n---\n- .inf\n"
    docs_c, _ = load_text(text, "f")
    monkeypatch.setattr(load, "_Loader", yaml.SafeLoader)
    docs_py, _ = load_text(text, "f")
    assert [(d.data, dict(d.marks)) for d in docs_c] == [(d.data, dict(d.marks)) for d in docs_py]
    assert load_text("a: 1\na: 2\n", "f")[1][0].source == SourceRef("f", 2, 1)


# --- structure and marks ----------------------------------------------------------------------------------

MANIFEST = """\
apiVersion: reconciler/v1
kind: Listeners
meta: {}
spec:
  brokers:
    1: {listeners: ["A://:9092"]}
    "2":
      listeners:
        - A://:9092
        - B://:9093
  listenerConfigs:
    EXTERNAL:
      ssl.keystore.password: {secret: {env: KS}}
      sasl.enabled.mechanisms: [SCRAM-SHA-256, SCRAM-SHA-512]
      empty:
"""


def test_marks_point_at_keys_and_items() -> None:
    doc = one(MANIFEST)
    assert doc.data["spec"]["brokers"] == {
        "1": {"listeners": ["A://:9092"]},
        "2": {"listeners": ["A://:9092", "B://:9093"]},
    }
    config = doc.data["spec"]["listenerConfigs"]["EXTERNAL"]
    assert config == {
        "ssl.keystore.password": {"secret": {"env": "KS"}},
        "sasl.enabled.mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"],
        "empty": None,
    }
    at = {path: (ref.line, ref.column) for path, ref in doc.marks.items()}
    assert at[()] == (1, 1)
    assert at[("kind",)] == (2, 1)
    assert at[("spec", "brokers", "1")] == (6, 5)  # a plain int-looking key, kept as its text
    assert at[("spec", "brokers", "1", "listeners")] == (6, 9)
    assert at[("spec", "brokers", "1", "listeners", 0)] == (6, 21)
    assert at[("spec", "brokers", "2", "listeners", 1)] == (10, 11)  # the item, after "- "
    assert at[("spec", "listenerConfigs", "EXTERNAL", "ssl.keystore.password", "secret", "env")] == (13, 40)
    assert at[("spec", "listenerConfigs", "EXTERNAL", "empty")] == (15, 7)


def test_mark_falls_back_to_the_nearest_ancestor() -> None:
    doc = one(MANIFEST)
    assert doc.mark(("spec", "brokers", "1", "nope", 3)) == SourceRef("f.yaml", 6, 5)
    assert doc.mark(("zzz",)) == SourceRef("f.yaml", 1, 1)
    assert doc.mark([]) == SourceRef("f.yaml", 1, 1)


def test_multiple_documents_keep_their_index_and_empty_ones_are_skipped() -> None:
    docs, diags = load_text("---\n---\na: 1\n---\n# only a comment\n---\n- x\n...\n", "m.yaml")
    assert diags == []
    assert [(d.index, d.data) for d in docs] == [(1, {"a": 1}), (3, ["x"])]
    assert docs[0].mark(()) == SourceRef("m.yaml", 3, 1)
    assert docs[1].mark((0,)) == SourceRef("m.yaml", 7, 3)
    assert load_text("", "e") == ([], [])
    assert load_text("# nothing\n", "e") == ([], [])


def test_crlf_and_bom() -> None:
    for text in ("\ufeffa: 1\r\nb:\r\n  c: [x]\r\n", b"\xef\xbb\xbfa: 1\r\nb:\r\n  c: [x]\r\n"):
        doc = one(text)
        assert doc.data == {"a": 1, "b": {"c": ["x"]}}
        assert doc.mark(("a",)) == SourceRef("f.yaml", 1, 1)
        assert doc.mark(("b", "c", 0)) == SourceRef("f.yaml", 3, 7)


def test_unicode_keys_and_values_columns_count_characters() -> None:
    doc = one("é✓: {ключ: 值}\n")
    assert doc.data == {"é✓": {"ключ": "值"}}
    assert doc.mark(("é✓", "ключ")) == SourceRef("f.yaml", 1, 6)


def test_quoted_keys_and_tagged_keys_are_strings() -> None:
    assert one("'true': 1\n\"null\": 2\n!!str 3: 3\n!!int 4: 4\n0x10: 5\n1.5: 6\n").data == {
        "true": 1,
        "null": 2,
        "3": 3,
        "4": 4,
        "0x10": 5,
        "1.5": 6,
    }


# --- refusals ---------------------------------------------------------------------------------------------

# (source, line, column, key, words in the message)
BAD: list[tuple[str, int, int, str | None, str]] = [
    ("a: 1\nb: 2\na: 3\n", 3, 1, "a", "duplicate key 'a' (first at line 1)"),
    ("x:\n  k: 1\n  'k': 2\n", 3, 3, "k", "duplicate key 'k'"),
    ("1: a\n'1': b\n", 2, 1, "1", "duplicate key '1'"),
    ("a: &anchor 1\n", 1, 4, "a", "anchors (&anchor) are not allowed"),
    ("a: 1\nb: &x [1]\n", 2, 4, "b", "anchors (&x)"),
    ("a: [1, *x]\n", 1, 8, "a", "aliases (*x) are not allowed"),
    ("&k a: 1\n", 1, 1, "a", "anchors (&k)"),
    ("a: {x: 1}\n<<: {y: 2}\n", 2, 1, "<<", "merge keys (<<) are not allowed"),
    ("~: 1\n", 1, 1, None, "not null (~); quote it"),
    ("null: 1\n", 1, 1, None, "not null"),
    ("a:\n  true: 1\n", 2, 3, None, "not a boolean (true); quote it"),
    ("? [a, b]\n: 1\n", 1, 3, None, "must be a string, not a mapping or a list"),
    ("? {a: 1}\n: 1\n", 1, 3, None, "must be a string, not a mapping or a list"),
    ("!!null x: 1\n", 1, 1, None, "not tagged !!null"),
    ("a: !!binary aGk=\n", 1, 4, "a", "tag !!binary is not allowed"),
    ("a: !!timestamp 2001-12-14\n", 1, 4, "a", "tag !!timestamp"),
    ("a: !custom x\n", 1, 4, "a", "tag !custom"),
    ("a: !!set {x}\n", 1, 4, "a", "tag !!set"),
    ("a: !!python/object:os.system x\n", 1, 4, "a", "tag !!python/object:os.system"),
    ("a: !!int abc\n", 1, 4, "a", "'abc' is not a valid !!int"),
    ("a: !!bool yes\n", 1, 4, "a", "not a valid !!bool"),
    ("a: " + "9" * 5000 + "\n", 1, 4, "a", "integer of 5000 digits is too long"),
    ("a: [" + "1" * 5000 + "]\n", 1, 5, "a", "too long"),
    ("a:\n\tb: 1\n", 2, 1, None, "indent with spaces, not tabs"),
    ("a: [1, 2\nb: 3\n", 2, 2, None, "did not find expected ',' or ']'"),
    ("a: b: c\n", 1, 5, None, "mapping values are not allowed"),
    ("a: 'unterminated\n", 2, 1, None, "invalid YAML"),
    ("a: 1\n b: 2\n", 2, 3, None, "invalid YAML"),
    ("- a\nb: 1\n", 2, 1, None, "invalid YAML"),
    ("a: x\x01y\n", 1, 5, None, "non-printable character U+0001"),
    ("ab: c\x00\n", 1, 6, None, "NUL byte"),
    ("a:\n  b: \ud800\n", 2, 6, None, "non-printable character U+D800"),
]


@pytest.mark.parametrize(("source", "line", "column", "key", "words"), BAD)
def test_refused_with_position_and_key(
    source: str, line: int, column: int, key: str | None, words: str
) -> None:
    diags = errors(source)
    found = [d for d in diags if words in d.message]
    assert found, [d.render() for d in diags]
    assert found[0].source == SourceRef("f.yaml", line, column), found[0].render()
    assert found[0].key == key


def test_every_problem_of_a_file_is_reported() -> None:
    diags = errors("a: 1\na: 2\nb: &x 1\nc: *x\nd: !!binary x\n---\n<<: {}\n~: 1\n")
    assert [d.source.line for d in diags if d.source] == [2, 3, 4, 5, 7, 8]


def test_documents_with_problems_are_still_returned() -> None:
    docs, diags = load_text("a: 1\na: 2\nb: *x\n", "f")
    assert len(diags) == 2
    assert docs[0].data == {"a": 1, "b": None}  # the first of duplicate keys; no alias expanded


def test_invalid_utf8_names_the_byte_and_position() -> None:
    (diag,) = errors(b"a: 1\nbb: caf\xe9\n")
    assert "not valid UTF-8 (byte 0xe9)" in diag.message
    assert diag.source == SourceRef("f.yaml", 2, 8)


def test_utf16_is_refused() -> None:
    (diag,) = errors("a: 1\n".encode("utf-16"))
    assert "not valid UTF-8" in diag.message


# --- hostile input: refused, quickly ----------------------------------------------------------------------


def test_billion_laughs_is_refused_before_any_expansion() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    start = time.perf_counter()
    docs, diags = load_text("\n".join(lines) + "\n", "bomb.yaml")
    assert time.perf_counter() - start < 30  # a hang guard, not a benchmark: the point is "no expansion"
    assert any("anchors (&a)" in d.message for d in diags)
    assert any("aliases (*a)" in d.message for d in diags)
    assert docs[0].data["j"] == [None] * 9


@pytest.mark.parametrize("opener", ["[", "{a: ", "- "])
def test_deep_nesting_is_refused_without_recursion_error(opener: str) -> None:
    depth = 10_000
    if opener == "- ":  # compact block sequences: "- - - x"
        text = opener * depth + "x\n"
    else:
        closer = "]" if opener == "[" else "}"
        text = opener * depth + "x" + closer * depth + "\n"
    _, diags = load_text(text, "deep.yaml")
    assert len(diags) == 1 and f"nested deeper than {MAX_DEPTH} levels" in diags[0].message
    assert diags[0].source is not None and diags[0].source.line >= 1


def test_a_million_brackets_stop_at_the_depth_limit() -> None:
    """libyaml's scanner costs O(depth) per token: reading on past the limit would take hours."""
    start = time.perf_counter()
    _, diags = load_text("[" * 1_000_000 + "]" * 1_000_000, "deep.yaml")
    assert time.perf_counter() - start < 30  # a hang guard: reading on would take hours
    assert [d.message for d in diags] == [f"nested deeper than {MAX_DEPTH} levels"]


def test_node_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "MAX_EVENTS", 1000)
    assert one("- a\n" * 990).data == ["a"] * 990
    docs, diags = load_text("- a\n" * 1000, "f.yaml")
    assert docs == [] and [d.render() for d in diags] == [
        "f.yaml:998:3: error: more than 1000 YAML nodes; split the file into several"
    ]


def test_errors_per_file_are_capped() -> None:
    docs, diags = load_text("a: &x 1\nb: [" + ", ".join(["*x"] * 10_000) + "]\n", "f.yaml")
    assert docs == [] and len(diags) == load.MAX_ERRORS + 1
    assert diags[-1].message == f"{load.MAX_ERRORS} errors: stopped reading this file"


def test_depth_limit_is_exact() -> None:
    assert one("[" * MAX_DEPTH + "]" * MAX_DEPTH).data is not None
    assert errors("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_oversized_text_is_refused_before_parsing() -> None:
    text = "a: " + "x" * (MAX_FILE_BYTES + 1) + "\n"
    (diag,) = errors(text)
    assert "over the limit" in diag.message and diag.source == SourceRef("f.yaml", 1, 1)
    (diag,) = errors(text.encode())
    assert "over the limit" in diag.message


def test_oversized_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:  # 20 MiB, mostly a sparse hole
        handle.write(b"a: 1\n")
        handle.seek(20 * 1024 * 1024)
        handle.write(b"\n")
    docs, diags = load_file(path, "clusters/x/big.yaml")
    assert docs == [] and len(diags) == 1
    assert "over the limit" in diags[0].message
    assert diags[0].source == SourceRef("clusters/x/big.yaml", 1, 1)


def test_binary_garbage_is_refused() -> None:
    garbage = bytes(range(256)) * 64
    docs, diags = load_text(garbage, "blob.bin")
    assert docs == [] and diags and diags[0].severity == "error"


def test_load_file_reports_unreadable_paths(tmp_path: Path) -> None:
    docs, diags = load_file(tmp_path / "missing.yaml")
    assert docs == [] and "cannot read file" in diags[0].message
    docs, diags = load_file(tmp_path)
    assert docs == [] and "cannot read file" in diags[0].message


def test_load_file_uses_the_display_name(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a: 1\na: 2\n", encoding="utf-8")
    docs, diags = load_file(path, "clusters/x.yaml")
    assert docs[0].file == "clusters/x.yaml"
    assert str(diags[0].source) == "clusters/x.yaml:2:1"
    docs, diags = load_file(path)
    assert docs[0].file == str(path)


# --- fuzzing: never an exception, only diagnostics ----------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _never_raises(text: str | bytes) -> None:
    docs, diags = load_text(text, "fuzz.yaml")
    for doc in docs:
        for path, ref in doc.marks.items():
            assert isinstance(path, tuple) and ref.line >= 1 and ref.column >= 1
    for diag in diags:
        assert diag.source is not None and diag.source.line >= 1 and diag.message


@FUZZ
@given(st.text())
def test_fuzz_text(text: str) -> None:
    _never_raises(text)


@FUZZ
@given(st.binary())
def test_fuzz_bytes(data: bytes) -> None:
    _never_raises(data)


# fmt: off
_YAML_BITS = st.sampled_from([
    "a", "b: ", ": ", "- ", "? ", "[", "]", "{", "}", ",", "&x ", "*x", "!!str ", "!!int ", "!t ", "<<: ",
    "'", '"', "|", ">", "#", "\n", "  ", "\t", "---\n", "...\n", "~", "true", "1", "0x1", ".inf",
    "%YAML 1.2\n", "%TAG ! tag:x,2000:\n", "\ufeff", "é", "\r\n",
])
# fmt: on


@FUZZ
@given(st.lists(_YAML_BITS, max_size=40).map("".join))
def test_fuzz_yaml_like_text(text: str) -> None:
    _never_raises(text)


# PyYAML writes NEL/LS/PS raw inside quotes, where YAML folds them as line breaks: not ours to test.
_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x85\u2028\u2029"), max_size=20)
_plain = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text)
_values = st.recursive(
    _plain,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=30,
)


@FUZZ
@given(_values, st.booleans())
def test_structured_yaml_round_trips(value: Any, flow: bool) -> None:
    """Whatever PyYAML writes loads back equal, except strings YAML 1.1 reads as text and 1.2 does not."""
    text = yaml.safe_dump({"root": value}, default_flow_style=flow, allow_unicode=True)
    docs, diags = load_text(text, "gen.yaml")
    assert diags == [], (text, [d.render() for d in diags])
    assert _equivalent(docs[0].data["root"], value), text


def _equivalent(loaded: Any, original: Any) -> bool:
    if isinstance(original, dict):
        return (
            isinstance(loaded, dict)
            and set(loaded) == set(original)
            and all(_equivalent(loaded[k], v) for k, v in original.items())
        )
    if isinstance(original, list):
        return (
            isinstance(loaded, list)
            and len(loaded) == len(original)
            and all(map(_equivalent, loaded, original))
        )
    if isinstance(original, str) and loaded != original:
        return not isinstance(load._resolve(original, None), str)  # e.g. "0o17" or "1e3": numbers in 1.2
    return type(loaded) is type(original) and loaded == original
