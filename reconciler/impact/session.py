"""The Spark session of `snapshot` and `impact`: in-process `local[*]` by default, any master or Spark Connect.

Kept small and quiet: few shuffle partitions (the job's data is millions of rows, not billions), no UI,
bounded driver memory, logs on stderr only. The JVM is started with its stdout sent to stderr, so nothing
Spark prints can ever mix with the artefact on our stdout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.childenv import protect_children
from reconciler.errors import ReconcilerError
from reconciler.impact import classarchive
from reconciler.impact.connect import checked_remote, is_remote, redacted, remote_session, shown_master

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_redacted = redacted  # an error message without the Connect URL's secrets (kept under its older name)
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")
DRIVER_MEMORY = os.environ.get("RECONCILER_SPARK_DRIVER_MEMORY", "2g")
EXECUTOR_MEMORY = os.environ.get("RECONCILER_SPARK_EXECUTOR_MEMORY", "1g")


def _shuffle_partitions(master: str) -> int:
    if os.environ.get("RECONCILER_SPARK_PARTITIONS"):
        return int(os.environ["RECONCILER_SPARK_PARTITIONS"])
    if master.startswith("local"):
        return max(4, 2 * (os.cpu_count() or 2))
    return 16


def extra_settings() -> dict[str, str]:
    """`RECONCILER_SPARK_CONF="k=v k='v w'"`: any other Spark setting (event logs, memory, codegen...), split as
    a shell would, so a value may hold spaces when quoted (`spark.executor.extraJavaOptions='-Xss4m -Da=b'`)."""
    items = shlex.split(os.environ.get("RECONCILER_SPARK_CONF", ""))
    return dict(item.split("=", 1) for item in items if "=" in item)


def settings(master: str) -> dict[str, str]:
    """The session's settings. On Spark Connect only the SQL ones (the others are the server's, set where it
    starts: scripts/spark-connect.sh), and the shuffle partitions only when RECONCILER_SPARK_PARTITIONS says so
    (the server's own default suits its cores)."""
    if is_remote(master):
        sql = {k: v for k, v in _settings(master).items() if k.startswith("spark.sql.")}
        if not os.environ.get("RECONCILER_SPARK_PARTITIONS"):
            sql.pop("spark.sql.shuffle.partitions")
        return sql
    return _settings(master)


def _settings(master: str) -> dict[str, str]:
    return {
        "spark.app.name": "kafka-reconciler-impact",
        "spark.sql.shuffle.partitions": str(_shuffle_partitions(master)),
        "spark.default.parallelism": str(_shuffle_partitions(master)),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.extraJavaOptions": HUGE_METHODS,
        "spark.driver.host": os.environ.get("RECONCILER_SPARK_DRIVER_HOST", "127.0.0.1"),
        "spark.driver.bindAddress": os.environ.get("RECONCILER_SPARK_BIND_ADDRESS", "127.0.0.1"),
        # Broadcasts chosen from file sizes must allow for Parquet's dictionary encoding: an inventory's rows
        # take ~100x their file size in memory (the 43 MB partitions table of 5M topics is GBs of rows: "Not
        # enough memory to build and broadcast the table"). The job hints its own small tables explicitly.
        "spark.sql.sources.fileCompressionFactor": "100",
        # The lists of replicas and partition sizes per topic (`job._lists`) are an object aggregate: keep it
        # hash-based for the tens of thousands of groups a task sees, not sort-based past 128 of them.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
        "spark.sql.autoBroadcastJoinThreshold": str(32 * 1024 * 1024),
        "spark.sql.parquet.compression.codec": "snappy",
    } | extra_settings()


# What the JVM itself prints on start-up that is not ours to show: Spark 4 loads the Vector API incubator module
# (its launcher's --add-modules), and the JVM warns about that on stderr; no JVM flag silences it.
JVM_NOISE = (b"WARNING: Using incubator modules:",)


def _pass_jvm_stderr(fd: int) -> None:
    """Copy the JVM's stderr to ours, line by line, without its start-up noise (a daemon thread)."""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            if not line.startswith(JVM_NOISE):
                with contextlib.suppress(OSError):  # our stderr gone: keep draining, or the JVM would block
                    os.write(2, line)


_MEMORY = re.compile(r"(\d+)\s*(b|[kmgt]b?)?", re.IGNORECASE)
_MIB = {"b": 1 / 1024 / 1024, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def heap_mib(memory: str) -> int | None:
    """A Spark memory setting in MiB (`2g`, `512m`, `1536mb`; a bare number is MiB, as `spark.driver.memory`
    reads it), or None when it is not one we can read (Spark then reports it)."""
    m = _MEMORY.fullmatch(memory.strip())
    if m is None:
        return None
    mib = int(int(m.group(1)) * _MIB[(m.group(2) or "m")[0].lower()])
    return mib or None


# The job's per-topic expressions (entries and summary facts, `job`/`aggregate`) generate whole-stage code past
# HotSpot's 8,000-byte limit for JIT compilation: without this flag that method runs interpreted (1M topics: the
# warm job 18.8-19.1 s with it interpreted, 13.4-13.6 s compiled, alternated runs). Executors need it as much.
HUGE_METHODS = "-XX:-DontCompileHugeMethods"


def driver_java_options(verbose: bool, driver_memory: str = DRIVER_MEMORY) -> list[str]:
    """The driver JVM's options. The parallel (throughput) collector: an impact run is a batch job, and G1's
    concurrent work competes with the tasks for the cores (on 2 cores a 1M-topic CLI run took 21-22 s instead of
    23.5 s, alternated). The heap starts at its maximum (spark.driver.memory sets only -Xmx): growing it costs
    full collections during the first query (20.4-20.8 s against 21.6-21.9 s, alternated). Without -v, a log4j
    profile that lets only errors through: Spark's default one prints its banner and start-up warnings before
    setLogLevel can act. The JIT compiles huge methods too (`HUGE_METHODS`)."""
    heap = heap_mib(driver_memory)
    return ["-XX:+UseParallelGC", *([f"-Xms{heap}m"] if heap else []), HUGE_METHODS,
            *([] if verbose else [f"-Dlog4j2.configurationFile={QUIET_LOG4J.as_uri()}"])]


def _classic(master: str) -> SparkSession:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    conf = SparkConf().setMaster(master)
    for key, value in settings(master).items():
        conf.set(key, value)
    verbose = log.isEnabledFor(logging.INFO)  # -v
    if not conf.contains("spark.driver.extraJavaOptions"):  # the caller's own options replace ours
        memory = conf.get("spark.driver.memory") or DRIVER_MEMORY
        archive = classarchive.java_options() if SparkContext._gateway is None else []
        conf.set("spark.driver.extraJavaOptions", " ".join([*driver_java_options(verbose, memory), *archive]))
    if SparkContext._gateway is None:
        # JVM stdout -> our stderr (fd 2): stdout carries only the report; its stderr filtered unless -v.
        # Python workers the JVM may start (`python -m pyspark.daemon`) must not import from the current
        # directory, which may be a pull request's checkout (reconciler/childenv.py).
        protect_children()
        popen: dict[str, int] = {"stdout": 2}
        read_end = write_end = -1
        if not verbose:
            read_end, write_end = os.pipe()
            popen["stderr"] = write_end
            threading.Thread(target=_pass_jvm_stderr, args=(read_end,), name="jvm-stderr", daemon=True).start()
        try:
            SparkContext._gateway = launch_gateway(conf, popen_kwargs=popen)  # type: ignore[no-untyped-call]
        finally:
            if write_end >= 0:
                os.close(write_end)  # the JVM holds its own copy: the pipe ends when the JVM does
        SparkContext._jvm = SparkContext._gateway.jvm
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("WARN" if verbose else "ERROR")
    return SparkSession(sc)


def _remote(master: str) -> SparkSession:
    session: Any = remote_session(checked_remote(master), settings(master))
    return session  # type: ignore[no-any-return]


def _cancel_jobs_on_interrupt(session: SparkSession) -> None:
    """Ctrl-C cancels the running Spark jobs, then interrupts: what pyspark's SparkContext sets up itself when it
    is created on the main thread (`pyspark.core.context`), which an early start is not. On Spark Connect, the
    session's operations on the server are interrupted (`interruptAll`)."""
    cancel_all = session.sparkContext.cancelAllJobs if hasattr(session, "_jsparkSession") else session.interruptAll

    def cancel(signum: int, frame: Any) -> None:
        try:
            cancel_all()
        finally:
            raise KeyboardInterrupt()

    signal.signal(signal.SIGINT, cancel)


class EarlyStart:
    """A classic session's JVM and SparkContext, started on a thread while the caller does other work (loading and
    validating the manifests): the JVM's start-up (~3 s, mostly in the JVM and waiting) then overlaps it. For
    Spark Connect, the client's imports (pyspark, pandas, pyarrow, grpc: ~1 s) and the session's first requests
    overlap it the same way. Nothing starts when a SparkContext is already active (tests, notebooks).
    `spark_session(early=...)` takes the session; `close` stops one that was started but never taken."""

    def __init__(self, master: str) -> None:
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._taken = False
        self._thread: threading.Thread | None = None
        if is_remote(master):
            checked_remote(master)  # refused here, in the caller's thread, before anything is imported or dialled
        context = sys.modules.get("pyspark") and sys.modules["pyspark"].SparkContext._active_spark_context
        if is_remote(master) or not context:
            self._thread = threading.Thread(target=self._start, args=(master,), name="spark-start", daemon=True)
            self._thread.start()

    def _start(self, master: str) -> None:
        try:
            self._session = _remote(master) if is_remote(master) else _classic(master)
        except BaseException as exc:  # raised again by `take`, in the caller's thread
            self._error = exc

    def take(self) -> SparkSession | None:
        """The session started early (None if none was); raises what starting it raised."""
        if self._thread is None:
            return None
        self._thread.join()
        self._taken = True
        if self._error is not None:
            raise self._error
        if self._session is not None and threading.current_thread() is threading.main_thread():
            _cancel_jobs_on_interrupt(self._session)
        return self._session

    def close(self) -> None:
        if self._thread is not None and not self._taken:
            self._thread.join()
            if self._session is not None:
                self._session.stop()
                _end_jvm_if_saving(keep=False)


def _cannot_start(master: str, exc: Exception) -> ReconcilerError:
    if isinstance(exc, ReconcilerError):  # refused by the allow-list: its own words
        return exc
    return ReconcilerError(f"cannot start Spark with master {shown_master(master)}: {redacted(str(exc), master)}")


@contextmanager
def spark_session(master: str = "local[*]", early: EarlyStart | None = None) -> Iterator[SparkSession]:
    """A session for one command; an already active session (tests, notebooks) is reused and kept; with `early`,
    the session it started."""
    try:
        # the early start first: its thread imports pyspark, and two threads importing pyspark at once can see
        # it partially initialised (pyspark's own modules import each other)
        started = early.take() if early is not None else None
        from pyspark.sql import SparkSession
    except ImportError as exc:  # validate/plan/apply are installed without Spark: say how to add it
        extras = "impact,connect" if is_remote(master) else "impact"
        raise ReconcilerError(f"this command runs Spark{' Connect' if is_remote(master) else ''}, which is not "
                              f"installed: pip install 'kafka-reconciler[{extras}]' ({exc})") from exc
    except Exception as exc:
        raise _cannot_start(master, exc) from None

    # an active classic session is reused (tests, notebooks), never in place of the Connect server asked for
    active = SparkSession.getActiveSession() if started is None and not is_remote(master) else None
    if active is not None:
        yield active
        return
    try:
        if started is not None:
            session = started
        elif is_remote(master):
            session = _remote(master)
        else:
            session = _classic(master)
    except ImportError as exc:  # Spark Connect needs pyspark[connect] (pandas, pyarrow, grpcio)
        raise ReconcilerError(f"cannot start Spark for {shown_master(master)}: {redacted(str(exc), master)} "
                              "(install kafka-reconciler[impact,connect])") from None
    except Exception as exc:
        raise _cannot_start(master, exc) from None
    log.info("Spark %s started (master %s)", session.version, shown_master(master))
    try:
        yield session
    finally:
        session.stop()
        _end_jvm_if_saving()


def _end_jvm_if_saving(keep: bool = True) -> None:
    """A run that saves the driver's class archive ends its JVM here, for the archive is written as it exits."""
    if classarchive.saving():
        from pyspark import SparkContext

        gateway, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
        classarchive.finish(gateway, keep=keep)
