"""`reconciler snapshot`: read each cluster's live state (ZooKeeper, or a KRaft cluster's Admin API) into the
Parquet inventory.

Clusters are read in parallel (a thread pool, one ZooKeeper client per cluster; the reads are pipelined and
spend their time waiting on the network). The static server.properties come from the manifests. Optional
partition sizes come from a CSV `cluster,topic,partition,size_bytes` and are kept for the snapshotted
clusters only.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.catalog import load_catalog
from reconciler.errors import ReconcilerError
from reconciler.impact.inventory import Rows, live_rows, merge_rows, static_rows, write_meta, write_tables
from reconciler.model import DesiredState, LiveState
from reconciler.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
Reader = Callable[[DesiredState], LiveState]


def read_live(desired: DesiredState, root: Path) -> LiveState:
    """Everything of one cluster: all entity types, brokers and topics, read by its backend (one connection,
    closed after)."""
    from reconciler.backend import EVERY_TYPE
    from reconciler.backends import backend_for

    with backend_for(desired.cluster).connect(desired.cluster, root) as connection:
        return connection.read(desired, entity_types=EVERY_TYPE)


def collect_rows(states: Mapping[str, DesiredState], root: Path, *, parallel: int = 8,
                 reader: Reader | None = None) -> Rows:
    """Inventory rows of the clusters (their live state, no offsets); every cluster that fails is named in one
    error."""
    return collect(states, root, parallel=parallel, reader=reader, offsets=False)[0]


def collect(states: Mapping[str, DesiredState], root: Path, *, parallel: int = 8, reader: Reader | None = None,
            offsets: bool = True, progress: Progress = NO_PROGRESS) -> tuple[Rows, dict[str, dict[str, Any]]]:
    """Inventory rows of the clusters and, with `offsets`, their log and consumer offsets (`impact/offsetread.py`)
    with per cluster when they were read or why not (inventory.json's `offsets`)."""
    from reconciler.impact.offsetread import cluster_offsets

    catalog = load_catalog()
    read = reader or (lambda d: read_live(d, root))
    said: dict[str, dict[str, Any]] = {}

    def one(name: str) -> Rows:
        started = time.monotonic()
        live = read(states[name])
        rows = live_rows(live, catalog)
        rows["static"] = static_rows(states[name], catalog)
        log.info("snapshot %s: %d brokers, %d topics in %.1fs", name, len(live.brokers), len(live.topics),
                 time.monotonic() - started)
        if offsets:
            found, said[name] = cluster_offsets(states[name], live, root, progress)
            rows |= found
        return rows

    names = sorted(states)
    failures: list[str] = []
    parts: list[Rows] = []
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(names) or 1))) as pool:
        futures = {name: pool.submit(one, name) for name in names}
        for name, future in futures.items():
            try:
                parts.append(future.result())
            except Exception as exc:  # one unreachable cluster must not hide the others' problems
                failures.append(f"{name}: {exc}")
    if failures:
        raise ReconcilerError("cannot snapshot " + "; ".join(failures))
    return merge_rows(parts), said


def snapshot(spark: SparkSession, states: Mapping[str, DesiredState], root: Path, out: Path, *,
             sizes_csv: Path | None = None, parallel: int = 8, reader: Reader | None = None,
             offsets: bool = True, progress: Progress = NO_PROGRESS) -> Rows:
    """Read, then write the inventory under `out` (tables replaced); returns the rows written."""
    from pyspark.sql import functions as F

    from reconciler.impact.inventory import OFFSET_TABLES, read_sizes_csv

    rows, said = collect(states, root, parallel=parallel, reader=reader, offsets=offsets, progress=progress)
    for table in OFFSET_TABLES:  # offsets of an older snapshot would not match these topics
        if table not in rows and (out / table).exists():
            shutil.rmtree(out / table)
    write_tables(spark, rows, out)
    if sizes_csv is not None:
        if not sizes_csv.is_file():
            raise ReconcilerError(f"sizes file {sizes_csv} does not exist")
        sizes = read_sizes_csv(spark, sizes_csv).filter(F.col("cluster").isin(sorted(states)))
        sizes.coalesce(1).write.mode("overwrite").parquet(str(out / "sizes"))
    elif (out / "sizes").exists():
        shutil.rmtree(out / "sizes")  # sizes of an older snapshot would not match these topics
    write_meta(out, states, "snapshot", sizes_csv is not None, said if offsets else None)
    return rows
