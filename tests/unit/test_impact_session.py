"""Spark session settings: what an operator passes, and what may be shown of the master URL."""

from __future__ import annotations

import pytest

from reconciler.impact import session


def test_connect_token_is_never_shown() -> None:
    url = "sc://spark.internal:15002/;user_id=ci;token=s3cr3t-T0KEN;use_ssl=true"
    shown = session.shown_master(url)
    assert "s3cr3t-T0KEN" not in shown and ";token=***" in shown and "user_id=ci" in shown
    err = session._redacted(f"failed to reach {url} (bad token s3cr3t-T0KEN)", url)
    assert "s3cr3t-T0KEN" not in err and "spark.internal:15002" in err
    assert session.shown_master("local[*]") == "local[*]"


def test_spark_conf_is_split_as_a_shell_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_SPARK_CONF",
                       "spark.eventLog.enabled=true spark.executor.extraJavaOptions='-Xss4m -Da=b' junk")
    assert session.extra_settings() == {"spark.eventLog.enabled": "true",
                                        "spark.executor.extraJavaOptions": "-Xss4m -Da=b"}


def test_broadcasts_allow_for_parquet_encoding() -> None:
    """Planned broadcasts use file size x 100: a 43 MB partitions table is never broadcast (it is GBs of rows)."""
    conf = session.settings("local[*]")
    estimate = 43 * 1024 * 1024 * float(conf["spark.sql.sources.fileCompressionFactor"])
    assert estimate > int(conf["spark.sql.autoBroadcastJoinThreshold"])


def test_driver_options_are_one_token_each_and_quiet_only_without_verbose() -> None:
    quiet, verbose = session.driver_java_options(False), session.driver_java_options(True)
    assert "-XX:+UseParallelGC" in quiet and "-XX:+UseParallelGC" in verbose  # a batch job: the throughput collector
    logs = [o for o in quiet if o.startswith("-Dlog4j2.configurationFile=")]
    assert len(logs) == 1 and not any(o.startswith("-Dlog4j2") for o in verbose)
    # spark-submit splits the option string on whitespace: the profile's location must not contain any
    assert all(" " not in o for o in quiet) and logs[0].startswith("-Dlog4j2.configurationFile=file:///")


def test_the_heap_starts_at_the_driver_memory_spark_is_given() -> None:
    assert session.heap_mib("2g") == 2048 and session.heap_mib("512m") == 512 and session.heap_mib("1536MB") == 1536
    assert session.heap_mib("2048") == 2048 and session.heap_mib("1t") == 1024 * 1024  # bare: MiB, as Spark
    assert session.heap_mib("lots") is None and session.heap_mib("") is None and session.heap_mib("10b") is None
    assert "-Xms2048m" in session.driver_java_options(False, "2g")
    assert not any(o.startswith("-Xms") for o in session.driver_java_options(False, "huge"))  # Spark reports it
