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
