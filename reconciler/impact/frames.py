"""Small DataFrames from Python rows without a Python worker.

`spark.createDataFrame(list)` in classic PySpark makes a Python RDD: every stage reading it forks Python
workers (~100 ms a task, and Python needed on every executor). Here the rows travel as JSON lines in a few
large strings to the JVM, which builds a local Dataset[String] and parses it with the given schema: plain
JVM work, the same on `local[*]` and on a cluster. Spark Connect sends local data as Arrow anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_CHUNK = 20_000  # rows per string handed to the JVM (py4j moves large strings well, many calls badly)


def columns(ddl: str) -> list[str]:
    """Column names of a flat DDL schema: "cluster STRING, broker INT" -> ["cluster", "broker"]."""
    return [m.group(1) for m in re.finditer(r"(?:^|,)\s*`?(\w+)`?\s+[A-Za-z]", ddl)]


def _is_classic(spark: SparkSession) -> bool:
    return hasattr(spark, "_jsparkSession")


def local_df(spark: SparkSession, rows: Sequence[Sequence[Any]], ddl: str) -> DataFrame:
    if not _is_classic(spark):
        return spark.createDataFrame(list(rows), ddl)
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    names = columns(ddl)
    jvm: Any = spark._jvm
    encoder = jvm.org.apache.spark.sql.Encoders.STRING()
    split = jvm.java.util.regex.Pattern.compile("\n")
    result: Any = None
    for start in range(0, max(len(rows), 1), _CHUNK):
        chunk = rows[start:start + _CHUNK]
        text = "\n".join(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) for row in chunk)
        part = spark._jsparkSession.createDataset(split.splitAsStream(text).toList(), encoder)
        result = part if result is None else result.union(part)
    # from_json over a local relation is folded into a local relation by the optimizer: no job, no RDD
    raw = DataFrame(result.toDF(), spark).filter("value != ''")
    return raw.select(F.from_json("value", ddl).alias("r")).select("r.*")


def is_in(spark: SparkSession, column: Column | str, values: Sequence[str]) -> Column:
    """`column IN values` for a long list of strings, built in the JVM from one string.

    `Column.isin(list)` in classic PySpark makes a literal Column per value over py4j (several round trips each):
    a fleet of 1,000 clusters cost ~5 s of driver time per run. Here the values travel as one newline-joined
    string, split in the JVM and handed to `Column.isInCollection` (the same `In`/`InSet` predicate, pushed
    down to Parquet the same way). Values with a newline (never a cluster or topic name) take the plain path."""
    from pyspark.sql import functions as F

    col = F.col(column) if isinstance(column, str) else column
    if not _is_classic(spark) or any("\n" in v for v in values):
        return col.isin(list(values))
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = spark._jvm
    listed = jvm.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(values)).toList() if values \
        else jvm.java.util.ArrayList()
    jc: Any = col._jc  # the JVM column behind a classic Column
    return ClassicColumn(jc.isInCollection(listed))


def pair_in(spark: SparkSession, first: str, second: str, pairs: Iterable[tuple[str, str]]) -> Column:
    """`(first, second) IN pairs` as predicates, where a semi-join with a driver-built table would cost a
    broadcast (a Spark job and stage of its own). `second` is a topic name or a config key, which never holds
    "/" (Kafka's `Topic.validate`, the catalog's key names), so "first/second" names one pair; the plain test of
    `second` comes first and lets Parquet skip row groups."""
    from pyspark.sql import functions as F

    unique = set(pairs)
    exact = is_in(spark, F.concat_ws("/", first, second), sorted(f"{a}/{b}" for a, b in unique))
    return is_in(spark, second, sorted({b for _, b in unique})) & exact
