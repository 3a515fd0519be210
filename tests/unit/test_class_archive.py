"""The impact driver's class archive (reconciler.impact.classarchive) without a JVM: which archive a runtime
gets, which JVM options each mode gives, and how a save run publishes the file. The whole round trip with a
real JVM is in tests/integration/test_impact_cli.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from reconciler.impact import classarchive


@pytest.fixture()
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake JDK and Spark (a java file, two jars) and an empty cache directory."""
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "bin" / "java").write_text("#!/bin/sh\n")
    (tmp_path / "spark" / "jars").mkdir(parents=True)
    for jar in ("spark-core.jar", "spark-sql.jar"):
        (tmp_path / "spark" / "jars" / jar).write_bytes(b"PK")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    monkeypatch.setenv("RECONCILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(classarchive.ENV, raising=False)
    monkeypatch.setattr(classarchive, "_pending", None)
    return tmp_path


def test_each_runtime_gets_its_own_archive(runtime: Path) -> None:
    first = classarchive.archive_path()
    assert first is not None and first.parent == runtime / "cache" and first.suffix == ".jsa"
    assert classarchive.archive_path() == first  # stable for the same runtime
    jar = runtime / "spark" / "jars" / "spark-sql.jar"
    os.utime(jar, ns=(1, 1))  # another Spark build: other classes
    second = classarchive.archive_path()
    assert second != first
    (runtime / "jdk" / "bin" / "java").write_text("#!/bin/sh\n# another JDK\n")
    assert classarchive.archive_path() not in (first, second)


def test_no_archive_without_a_java(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(runtime / "nowhere"))
    assert classarchive.archive_path() is None
    assert classarchive.java_options() == []


def test_options_by_mode(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert classarchive.java_options() == []  # none yet, and not asked to save one
    monkeypatch.setenv(classarchive.ENV, "save")
    saving = classarchive.java_options()
    assert classarchive.saving()
    partial = Path(saving[0].removeprefix("-XX:ArchiveClassesAtExit="))
    assert partial.parent == runtime / "cache" and partial.name.endswith(".partial")
    assert stat.S_IMODE((runtime / "cache").stat().st_mode) == 0o700
    assert "-Xlog:cds=off" in saving  # the JVM's archive warnings never reach our stderr

    path = classarchive.archive_path()
    assert path is not None
    path.write_bytes(b"archive")
    monkeypatch.delenv(classarchive.ENV)
    assert classarchive.java_options()[0] == f"-XX:SharedArchiveFile={path}"
    monkeypatch.setenv(classarchive.ENV, "off")
    assert classarchive.java_options() == []


def test_a_cache_path_with_spaces_is_not_used(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_CACHE_DIR", str(runtime / "my cache"))
    monkeypatch.setenv(classarchive.ENV, "save")
    assert classarchive.java_options() == []  # Spark splits spark.driver.extraJavaOptions on whitespace


class _Proc:
    def __init__(self, partial: Path, code: int) -> None:
        self.partial, self.returncode, self.stdin = partial, None, self
        self._code = code

    def close(self) -> None:  # stdin closed: the JVM exits, writing its archive first
        self.partial.write_bytes(b"classes")

    def wait(self, timeout: float) -> int:
        self.returncode = self._code
        return self._code


class _Gateway:
    def __init__(self, proc: _Proc) -> None:
        self.proc, self.closed = proc, False

    def shutdown(self) -> None:
        self.closed = True


def _save_run(runtime: Path, monkeypatch: pytest.MonkeyPatch, code: int, keep: bool = True) -> tuple[Path, Path, Any]:
    monkeypatch.setenv(classarchive.ENV, "save")
    partial = Path(classarchive.java_options()[0].removeprefix("-XX:ArchiveClassesAtExit="))
    final = classarchive.archive_path()
    assert final is not None
    gateway = _Gateway(_Proc(partial, code))
    classarchive.finish(gateway, keep=keep)
    return partial, final, gateway


def test_a_save_run_publishes_the_archive_once_its_jvm_exited(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial, final, gateway = _save_run(runtime, monkeypatch, 0)
    assert gateway.closed and not partial.exists()
    assert final.read_bytes() == b"classes"
    assert stat.S_IMODE(final.stat().st_mode) == 0o600
    assert not classarchive.saving()


def test_a_failed_jvm_exit_publishes_nothing(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial, final, _ = _save_run(runtime, monkeypatch, 1)
    assert not final.exists() and not partial.exists()  # a half-written file is never mapped by a later run


def test_a_save_run_that_ended_before_its_job_publishes_nothing(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # refused manifests: the JVM started early knows only the start-up's classes; a later save run makes it whole
    partial, final, gateway = _save_run(runtime, monkeypatch, 0, keep=False)
    assert gateway.closed and not final.exists() and not partial.exists()
