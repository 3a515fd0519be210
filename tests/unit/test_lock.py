"""The lock files pin every dependency pyproject.toml names, with hashes, and agree with each other."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lock: str) -> dict[str, str]:
    """name -> version of every `name==version` entry, checking each carries at least one sha256 hash."""
    text = (ROOT / "requirements" / lock).read_text()
    pins: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = PIN.match(block)
        if match:
            assert "--hash=sha256:" in block, f"{lock}: {match.group(1)} has no hash"
            pins[_norm(match.group(1))] = match.group(2)
    return pins


def _names(requirements: list[str]) -> set[str]:
    return {_norm(re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]) for req in requirements}


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = _names(PROJECT["dependencies"])
IMPACT = _names(PROJECT["optional-dependencies"]["impact"])
DEV = _names(PROJECT["optional-dependencies"]["dev"])


@pytest.mark.parametrize(
    ("lock", "names"),
    [("runtime.txt", RUNTIME), ("impact.txt", RUNTIME | IMPACT), ("dev.txt", RUNTIME | IMPACT | DEV)],
)
def test_every_declared_dependency_is_pinned_with_hashes(lock: str, names: set[str]) -> None:
    pins = _pins(lock)
    assert names - pins.keys() == set()
    assert {"setuptools", "wheel"} <= pins.keys()  # the build back-end: the project installs offline


def test_the_smaller_locks_pin_the_same_versions_as_the_full_one() -> None:
    full = _pins("dev.txt")
    for lock in ("runtime.txt", "impact.txt"):
        assert {name: version for name, version in _pins(lock).items() if full.get(name) != version} == {}


def test_plan_and_apply_do_not_install_spark() -> None:
    assert "pyspark" not in _pins("runtime.txt")
    assert "pyspark" in _pins("impact.txt")
