"""A class-data-sharing archive for the impact driver's JVM (the JDK's AppCDS, `-XX:SharedArchiveFile`).

A local Spark driver loads ~17,000 classes at every start: read from ~250 jars, verified and parsed, most of
them again in every process. An archive holds them already parsed and verified, mapped from one file: a
1M-topic `impact` run took 18.2-19.2 s instead of 20.4-22.7 s (2 cores, alternated, identical reports).

`RECONCILER_SPARK_CLASS_ARCHIVE` (the environment's, never a manifest's):
  unset   use the archive of this exact runtime when there is one (in the cache directory), else start without
  save    make one if there is none: the run is slower (~25%) and waits for the JVM to write it (~5 s, ~200 MB)
  off     never use one

The archive is keyed by the java binary and the Spark jars (name, size, mtime): another JDK or Spark release
gets its own. The JVM checks an archive before mapping it and starts without it when it does not match, so a
stale or damaged file costs the saving, never the run. It lives in `$RECONCILER_CACHE_DIR`, else
`$XDG_CACHE_HOME/kafka-reconciler`, else `~/.cache/kafka-reconciler`, made readable by its owner only: what
is in it runs in the driver, as the jars it came from do.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
ENV = "RECONCILER_SPARK_CLASS_ARCHIVE"
_QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]  # a mismatched archive is skipped without a word
_pending: tuple[Path, Path] | None = None  # (being written, final name) while a save run's JVM lives


def cache_dir() -> Path:
    if os.environ.get("RECONCILER_CACHE_DIR"):
        return Path(os.environ["RECONCILER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-reconciler"


def _java() -> Path | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def _jars() -> Path:
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        return Path(spark_home) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def archive_path() -> Path | None:
    """This runtime's archive (which may not exist yet); None without a java to key it by."""
    java = _java()
    jars = _jars()
    if java is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    for item in (java, *sorted(jars.glob("*.jar"))):
        stat = item.stat()
        digest.update(f"{item}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return cache_dir() / f"spark-classes-{digest.hexdigest()[:20]}.jsa"


def java_options() -> list[str]:
    """The driver JVM's archive options for this run (none when off, unusable or, without `save`, absent)."""
    global _pending
    mode = os.environ.get(ENV, "").strip().lower()
    if mode == "off":
        return []
    try:
        path = archive_path()
    except (OSError, ImportError):
        return []
    if path is None or any(c.isspace() for c in str(path)):  # Spark splits Java options on whitespace
        return []
    if path.is_file():
        log.info("driver classes mapped from %s", path)
        return [f"-XX:SharedArchiveFile={path}", *_QUIET]
    if mode != "save":
        return []
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    _pending = (partial, path)
    return [f"-XX:ArchiveClassesAtExit={partial}", *_QUIET]


def saving() -> bool:
    """Whether this process's JVM was started to write an archive (see `finish`)."""
    return _pending is not None


def finish(gateway: Any, timeout_s: float = 300, keep: bool = True) -> None:
    """After a save run's session stopped: end its JVM (it writes the archive as it exits) and publish the file
    under its final name, in one rename, so no run ever maps a half-written archive. `gateway`: pyspark's.
    `keep=False`: the run ended before its job (refused manifests): its archive would hold only the start-up's
    classes, so it is deleted and the next save run makes a whole one."""
    global _pending
    if _pending is None:
        return
    partial, final = _pending
    _pending = None
    proc = getattr(gateway, "proc", None)
    try:
        if proc is not None:
            gateway.shutdown()
            proc.stdin.close()  # Spark's gateway server exits on end of input: System.exit, then the dump
            proc.wait(timeout=timeout_s)
        if keep and proc is not None and proc.returncode == 0 and partial.is_file() and partial.stat().st_size > 0:
            partial.chmod(0o600)
            os.replace(partial, final)
            log.info("saved the driver's class archive: %s (%d MB)", final, final.stat().st_size >> 20)
    except Exception as exc:  # the report is done: a missing archive only costs the next run its saving
        log.warning("could not save the driver's class archive: %s", exc)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
