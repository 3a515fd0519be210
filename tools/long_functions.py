"""Lists the functions of reconciler/ longer than a limit (default 60 lines), longest first.

    python tools/long_functions.py [LIMIT]

A function may be longer when its docstring says why (a line starting "Long because"); those are marked.
tests/unit/test_architecture.py keeps the list of unexplained ones empty.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REASON = "Long because"


def long_functions(limit: int = 60) -> list[tuple[int, str, bool]]:
    """(lines, "path:line name", explained) of every function over `limit` lines."""
    found = []
    for path in sorted((ROOT / "reconciler").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    doc = ast.get_docstring(node) or ""
                    where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                    found.append((lines, where, REASON in doc))
    return sorted(found, reverse=True)


if __name__ == "__main__":
    for lines, where, explained in long_functions(int(sys.argv[1]) if len(sys.argv) > 1 else 60):
        print(f"{lines:5d}  {where}{'  (explained)' if explained else ''}")
