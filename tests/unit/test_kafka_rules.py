"""Kafka's verdicts, table-driven (tests/unit/kafka_cases.py), and docs/kafka-validation.md kept honest: every
offline row of the document has cases, and every case proves a row that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.errors import Diagnostic
from reconciler.manifests.validate import load_and_validate
from tests.unit.kafka_cases import CASES, CLUSTER, LISTENERS, KafkaCase, cluster, listeners

DOC = Path(__file__).resolve().parents[2] / "docs" / "kafka-validation.md"
MARK = "#<-"


def write(root: Path, c: KafkaCase) -> None:
    files = {CLUSTER: cluster(c.version), LISTENERS: listeners(), **c.files}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(MARK, ""), encoding="utf-8")


def marked(c: KafkaCase) -> tuple[str, int] | None:
    for rel, text in c.files.items():
        for number, line in enumerate(text.splitlines(), start=1):
            if MARK in line:
                return rel, number
    return None


def about(diags: list[Diagnostic], severity: str, key: str) -> list[Diagnostic]:
    return [d for d in diags if d.severity == severity and (d.key == key or f"'{key}'" in d.message)]


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"{c.row}-{c.id}")
def test_kafka_verdict(tmp_path: Path, c: KafkaCase) -> None:
    write(tmp_path, c)
    _, _, diags = load_and_validate(tmp_path)
    shown = "\n".join(d.render() for d in diags)
    errors, warnings = about(diags, "error", c.key), about(diags, "warning", c.key)
    if c.verdict == "accept":
        assert not errors and not warnings, f"Kafka accepts this ({c.kafka}); we said:\n{shown}"
        assert not [d for d in diags if d.severity == "error"], f"unexpected errors:\n{shown}"
        return
    found = errors if c.verdict == "reject" else warnings
    assert found, f"Kafka's {c.kafka} would {c.verdict}; we said:\n{shown or '(nothing)'}"
    assert any(c.phrase in d.message for d in found), f"no message with {c.phrase!r}:\n{shown}"
    if c.verdict == "warn":
        assert not errors, f"a warning case (Kafka decides with broker state) must not be an error:\n{shown}"
    place = marked(c)
    if place is not None:
        here = [d for d in found if d.source is not None and (d.source.file, d.source.line) == place]
        assert here, f"expected the diagnostic at {place[0]}:{place[1]}:\n{shown}"


def _rows() -> dict[str, bool]:
    """Row id -> decidable offline, from the table of docs/kafka-validation.md."""
    rows: dict[str, bool] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (K\d\d|S\d\d) \|", line)
        if m:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[m.group(1)] = cells[4].lower().startswith("yes")
    return rows


def test_every_offline_row_of_the_document_has_cases() -> None:
    rows = _rows()
    assert len(rows) >= 30
    proven = {c.row for c in CASES}
    assert sorted(r for r, offline in rows.items() if offline and r not in proven) == []
    assert sorted(proven - set(rows)) == []  # every case proves a documented row


def test_both_verdicts_are_covered() -> None:
    """Over-rejecting is a bug too: the table holds cases Kafka accepts as well as cases it refuses."""
    verdicts = {c.verdict for c in CASES}
    assert verdicts == {"reject", "warn", "accept"}
    assert sum(c.verdict == "accept" for c in CASES) >= 12
