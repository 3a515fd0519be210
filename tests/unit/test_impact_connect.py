"""Which Spark Connect server impact/snapshot may use: the operator's choice (SPARK_REMOTE / --remote), parsed as
pyspark reads it and matched against RECONCILER_SPARK_ALLOWED_REMOTES."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.allowlist import NotAllowedError
from reconciler.errors import ReconcilerError
from reconciler.impact import connect


@pytest.fixture(autouse=True)
def _no_operator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (connect.REMOTE_ENV, connect.ALLOWED_ENV, connect.ALLOWED_FILE_ENV, connect.UI_ENV):
        monkeypatch.delenv(name, raising=False)


def test_the_operator_chooses_local_or_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    assert connect.chosen_master(None, None) == "local[*]"
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark.ci:15002")
    assert connect.chosen_master(None, None) == "sc://spark.ci:15002"  # pyspark's convention
    assert connect.chosen_master("local[2]", None) == "local[2]"  # an explicit --master wins over the environment
    assert connect.chosen_master(None, "sc://other:1") == "sc://other:1"
    with pytest.raises(ReconcilerError, match="exclusive"):
        connect.chosen_master("local[2]", "sc://other:1")
    with pytest.raises(NotAllowedError, match="not a Spark Connect URL"):
        connect.chosen_master(None, "local[*]")
    monkeypatch.setenv("SPARK_REMOTE", "spark://x:7077")
    with pytest.raises(NotAllowedError, match="SPARK_REMOTE is not a Spark Connect URL"):
        connect.chosen_master(None, None)


def test_urls_read_as_pyspark_reads_them() -> None:
    r = connect.parse_remote("sc://Spark.CI.internal:15003/;user_id=ci;token=s3cr3t")
    assert (r.host, r.port, r.params) == ("spark.ci.internal", 15003, {"user_id": "ci", "token": "s3cr3t"})
    assert connect.parse_remote("sc://localhost").port == connect.DEFAULT_PORT
    assert connect.parse_remote("sc://[::1]:15002").host == "::1"


@pytest.mark.parametrize("url", [
    "sc://user@evil:15002", "sc://a:b@evil:15002",  # userinfo: which host is dialled?
    "sc://host:15002/path", "sc://host:15002?x=1", "sc://host:15002#frag",
    "sc://host:15002/;token", "sc://host:15002/;a=b=c",  # pyspark refuses or splits these differently
    "sc://host :15002", "sc://host:15002\n", "sc://:15002", "sc://host:0", "sc://host:99999", "sc://host:x",
    "sc://ho_st:1", "sc://[::1:1", "http://host:15002",
])
def test_ambiguous_urls_are_refused_before_anything_is_dialled(url: str) -> None:
    with pytest.raises(NotAllowedError, match="refused"):
        connect.checked_remote(url)


def test_a_refusal_never_shows_the_token() -> None:
    with pytest.raises(NotAllowedError) as refused:
        connect.checked_remote("sc://user@host:1/;token=s3cr3t-T0KEN")
    assert "s3cr3t-T0KEN" not in str(refused.value) and "token=***" in str(refused.value)


def test_allow_list_of_connect_servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert connect.checked_remote("sc://anything:1").host == "anything"  # no allow-list: the workstation case
    monkeypatch.setenv(connect.ALLOWED_ENV, "spark.ci.internal:15002, *.spark.internal")
    assert connect.checked_remote("sc://spark.ci.internal:15002").port == 15002
    assert connect.checked_remote("sc://a.spark.internal:1").host == "a.spark.internal"
    for refused in ("sc://spark.ci.internal:15003", "sc://evil:15002", "sc://a.b.spark.internal:1",
                    "sc://127.0.0.1:15002"):
        with pytest.raises(NotAllowedError, match="RECONCILER_SPARK_ALLOWED_REMOTES"):
            connect.checked_remote(refused)
    monkeypatch.setenv(connect.ALLOWED_ENV, "")  # an undefined CI variable: switched on, naming nothing
    with pytest.raises(NotAllowedError, match="names none"):
        connect.checked_remote("sc://spark.ci.internal:15002")
    monkeypatch.setenv(connect.ALLOWED_ENV, "not a/pattern")
    with pytest.raises(ReconcilerError, match="RECONCILER_SPARK_ALLOWED_REMOTES"):
        connect.checked_remote("sc://spark.ci.internal:15002")
    monkeypatch.delenv(connect.ALLOWED_ENV)
    listed = tmp_path / "remotes"
    listed.write_text("# the CI fleet's server\n127.0.0.1:15002\n", encoding="utf-8")
    monkeypatch.setenv(connect.ALLOWED_FILE_ENV, str(listed))
    assert connect.checked_remote("sc://127.0.0.1:15002").host == "127.0.0.1"
    with pytest.raises(NotAllowedError):
        connect.checked_remote("sc://127.0.0.1:15003")


def test_the_ui_is_checked_like_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    remote = connect.parse_remote("sc://127.0.0.1:15002")
    assert connect.ui_url(remote) == "http://127.0.0.1:4040"
    monkeypatch.setenv(connect.UI_ENV, "http://127.0.0.1:40401/")
    assert connect.ui_url(remote) == "http://127.0.0.1:40401"
    monkeypatch.setenv(connect.ALLOWED_ENV, "127.0.0.1:15002")
    with pytest.raises(NotAllowedError, match="Spark UI"):
        connect.ui_url(remote)
    monkeypatch.setenv(connect.UI_ENV, "file:///etc/passwd")
    with pytest.raises(NotAllowedError, match="not http"):
        connect.ui_url(remote)


def test_only_sql_settings_go_to_a_connect_session(monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.impact.session import settings

    monkeypatch.delenv("RECONCILER_SPARK_PARTITIONS", raising=False)
    remote = settings("sc://127.0.0.1:15002")
    assert remote and all(k.startswith("spark.sql.") for k in remote)
    assert "spark.sql.shuffle.partitions" not in remote  # the server's default suits its cores
    assert remote["spark.sql.session.timeZone"] == "UTC"
    monkeypatch.setenv("RECONCILER_SPARK_PARTITIONS", "7")
    assert settings("sc://127.0.0.1:15002")["spark.sql.shuffle.partitions"] == "7"
