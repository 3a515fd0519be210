"""`reconciler impact` as a whole process on the default local Spark: stdout is only the report, and stderr only
the phase lines, none of the JVM's or Spark's start-up chatter ("WARNING: Using incubator modules", "Setting
default log level") unless -v."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def impact(manifests: Path, inventory: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONCILER_SPARK_DRIVER_MEMORY": "512m"}
    env.pop("SPARK_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *flags, "--repo", str(manifests), "impact", "--inventory",
         str(inventory), "--master", "local[1]", "--format", "json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO, check=False,
    )


def test_stderr_holds_only_the_phases_without_verbose(spark: Any, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import fleetgen

    from reconciler.impact.inventory import write_meta

    inventory, manifests = tmp_path / "inventory", tmp_path / "manifests"
    fleetgen.generate(spark, 3, 10, inventory, seed=5, sizes=False, files=1)
    write_meta(inventory, (fleetgen.name(i) for i in range(3)), "fleetgen", False)
    fleetgen.write_manifests(manifests, 3)

    quiet = impact(manifests, inventory)
    assert quiet.returncode == 0, quiet.stderr[-4000:]
    assert json.loads(quiet.stdout)["topicsAffected"] > 0
    assert [line for line in quiet.stderr.splitlines() if not line.startswith("impact: ")] == [], quiet.stderr
    assert len(quiet.stderr.splitlines()) == 4  # clusters, start, before, effective: one line each off a TTY

    verbose = impact(manifests, inventory, "-v")  # -v keeps Spark's own start-up output
    assert verbose.returncode == 0, verbose.stderr[-4000:]
    assert verbose.stdout == quiet.stdout
    assert [line for line in verbose.stderr.splitlines() if "impact: " not in line], verbose.stderr
