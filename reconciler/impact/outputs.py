"""The files of `impact --out`: report.md/json/html and the Parquet detail tables (Spark's writer)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.artefacts import write_atomically
from reconciler.impact.html import render_html
from reconciler.impact.report import render_json, render_markdown

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from reconciler.impact.job import Changes


def write_outputs(out: Path, summary: dict[str, Any], changes: Changes | None,
                  consumers: DataFrame | None = None) -> list[Path]:
    """report.{md,json,html} and, with the job's rows, topic_changes/ and broker_changes/ (Parquet); with the
    consumer groups at risk, consumers_at_risk/ (every row; the summary holds the first few hundred)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("report.md", render_markdown(summary)), ("report.json", render_json(summary)),
                       ("report.html", render_html(summary))):
        write_atomically(out / name, text, roots=[out])  # refuses a symbolic link planted in `out`
        written.append(out / name)
    if changes is not None:
        changes.topics.drop("psizes", "mask").write.mode("overwrite").parquet(str(out / "topic_changes"))
        changes.brokers.write.mode("overwrite").parquet(str(out / "broker_changes"))
        written += [out / "topic_changes", out / "broker_changes"]
    if consumers is not None:
        consumers.write.mode("overwrite").parquet(str(out / "consumers_at_risk"))
        written.append(out / "consumers_at_risk")
    return written
