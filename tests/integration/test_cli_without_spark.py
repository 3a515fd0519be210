"""validate/plan/apply are installed without PySpark (the `impact` extra): they must not need it, and the
Spark commands must say how to install it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `sys.modules[name] = None` makes every import of that package fail, as if it were not installed.
PRELUDE = (
    "import sys; sys.modules['pyspark'] = None; from reconciler.cli.main import entry; "
    "sys.argv = {argv!r}; entry()"
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    argv = ["reconciler", "--repo", str(ROOT / "examples" / "fleet"), *args]
    return subprocess.run(
        [sys.executable, "-c", PRELUDE.format(argv=argv)], capture_output=True, text=True, timeout=120
    )


def test_validate_runs_without_pyspark() -> None:
    run = _run("validate")
    assert run.returncode == 0, run.stderr
    assert "pyspark" not in run.stderr.lower()


def test_impact_without_pyspark_says_how_to_install_it() -> None:
    run = _run("impact", "--format", "json")
    assert run.returncode == 1
    assert "pip install 'kafka-reconciler[impact]'" in run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout == ""
