"""The house rules that a reader relies on: no unexplained long function (issue 14).

The import rules (layers, no cycles, an I/O-free core) are import-linter contracts in pyproject.toml,
run by scripts/test.sh; this file covers what import-linter cannot see."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Functions being split elsewhere may be listed here for a while; a stale entry fails the next test.
PENDING: set[str] = set()


def _long_functions(limit: int = 60) -> list[tuple[int, str, bool]]:
    spec = importlib.util.spec_from_file_location("long_functions", ROOT / "tools" / "long_functions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("long_functions", module)
    spec.loader.exec_module(module)
    found: list[tuple[int, str, bool]] = module.long_functions(limit)
    return found


def _name(where: str) -> str:
    path_line, name = where.split(" ")
    return f"{path_line.split(':')[0]} {name}"


def test_no_unexplained_long_function() -> None:
    unexplained = [where for _, where, explained in _long_functions() if not explained]
    assert [w for w in unexplained if _name(w) not in PENDING] == []


def test_pending_entries_are_still_long() -> None:
    """A stale PENDING entry would silently allow a new long function of that name."""
    names = {_name(where) for _, where, explained in _long_functions() if not explained}
    assert names >= PENDING

