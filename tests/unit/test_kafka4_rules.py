"""Kafka 4.x verdicts, table-driven (tests/unit/kafka4_cases.py), and docs/kafka-validation.md's section "Kafka 4.x
entities" kept honest: every row has cases and every case proves a row that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.errors import Diagnostic
from reconciler.manifests.validate import load_and_validate
from tests.unit.kafka4_cases import CASES, CLUSTER, Kafka4Case

DOC = Path(__file__).resolve().parents[2] / "docs" / "kafka-validation.md"
MARK = "#<-"


def write(root: Path, c: Kafka4Case) -> None:
    for rel, text in {CLUSTER: c.cluster, **c.files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(MARK, ""), encoding="utf-8")


def marked(c: Kafka4Case) -> tuple[str, int] | None:
    for rel, text in c.files.items():
        for number, line in enumerate(text.splitlines(), start=1):
            if MARK in line:
                return rel, number
    return None


def about(diags: list[Diagnostic], severity: str, key: str) -> list[Diagnostic]:
    return [d for d in diags if d.severity == severity and (d.key == key or f"'{key}'" in d.message)]


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"{c.row}-{c.id}")
def test_kafka4_verdict(tmp_path: Path, c: Kafka4Case) -> None:
    write(tmp_path, c)
    _, _, diags = load_and_validate(tmp_path)
    shown = "\n".join(d.render() for d in diags)
    errors, warnings = about(diags, "error", c.key), about(diags, "warning", c.key)
    if c.verdict == "accept":
        assert not [d for d in diags if d.severity == "error"], f"Kafka accepts this ({c.kafka}); we said:\n{shown}"
        assert not warnings, f"Kafka accepts this ({c.kafka}); we warned:\n{shown}"
        return
    found = errors if c.verdict == "reject" else warnings
    if c.verdict == "warn":
        assert not errors, f"a warning case (Kafka decides with broker context) must not be an error:\n{shown}"
    assert found, f"Kafka's {c.kafka} would {c.verdict}; we said:\n{shown or '(nothing)'}"
    assert any(c.phrase in d.message for d in found), f"no message with {c.phrase!r}:\n{shown}"
    place = marked(c)
    if place is not None:
        here = [d for d in found if d.source is not None and (d.source.file, d.source.line) == place]
        assert here, f"expected the diagnostic at {place[0]}:{place[1]}:\n{shown}"


def _rows() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    rows = set()
    for title in ("## Kafka 4.x entities", "## Agreement with the brokers"):
        section = text.split(title, 1)[1].split("\n## ", 1)[0]
        rows |= {m.group(1) for m in re.finditer(r"^\| ([FGCA]\d\d) \|", section, re.MULTILINE)}
    return rows


def test_every_row_of_the_section_has_cases() -> None:
    rows = _rows()
    proven = {c.row for c in CASES}
    assert rows and sorted(rows - proven) == [] and sorted(proven - rows) == []
    assert {c.verdict for c in CASES} >= {"reject", "accept"}
