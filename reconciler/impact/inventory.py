"""The fleet inventory: what `reconciler snapshot` writes and `reconciler impact` reads (SPEC §8).

One directory per table under the inventory directory, each a Parquet dataset, plus `inventory.json`
(format version, creation time, clusters, source). Every value is a string in Kafka's canonical form
(`reconciler.values.canonical`), so the Spark job compares values with plain string equality.

  brokers    (cluster STRING, broker INT, rack STRING, endpoints ARRAY<STRING>)
             registered brokers (/brokers/ids/<id>); endpoints are the advertised `NAME://host:port`
  topics     (cluster STRING, topic STRING, partitions INT, replication_factor INT)
  partitions (cluster STRING, topic STRING, partition INT, replicas ARRAY<INT>)
             the assignment (/brokers/topics/<t>); replicas[0] is the preferred leader
  configs    (cluster STRING, entity_type STRING, entity STRING, key STRING, value STRING)
             every dynamic config entity (/config/<type>/<entity>): entity_type is topics, brokers, clients,
             users or ips; entity is the unsanitised name (`<default>`, `3`, `orders`, `alice/clients/app`);
             passwords, SCRAM credentials and keys the catalog does not know (custom keys such as
             `ldap.bind.pw`: Kafka hides values of unknown type) are never stored: their value is the marker
             `(sensitive)`
  static     (cluster STRING, broker STRING, key STRING, value STRING)
             server.properties from the manifests (`spec.static.file`); broker is an id or `<default>`
             (a file shared by every broker; a broker's own file wins key by key)
  sizes      (cluster STRING, topic STRING, partition INT, size_bytes BIGINT)   optional, from a CSV
  acls       (cluster STRING, resource_type STRING, pattern STRING, name STRING, principal STRING, host STRING,
              operation STRING, permission STRING)   optional (inventories before ACLs have none)
             every entry of every ACL resource znode (/kafka-acl, /kafka-acl-extended/prefixed: zk/acls.py)
  log_offsets (cluster STRING, topic STRING, partition INT, log_start BIGINT, log_end BIGINT, size_bytes BIGINT,
               read_at BIGINT, at ARRAY<STRUCT<age_ms BIGINT, offset BIGINT>>)   optional (Admin API, `unread`)
             per partition of a cluster whose offsets were read: ListOffsets earliest and latest (the high
             watermark), the leader's size (DescribeLogDirs; null if not known), when they were read (epoch ms),
             and `at`: per age (ms) the first offset whose record timestamp is at least read_at - age (log_end
             where none is), for the ladder of ages and every retention in use, ascending by age
  groups     (cluster STRING, group STRING, state STRING, protocol_type STRING, members INT,
              client_ids ARRAY<STRING>)   optional: ListGroups + DescribeGroups (members null: not described)
  group_offsets (cluster STRING, group STRING, topic STRING, partition INT, committed BIGINT)   optional:
             OffsetFetch, every committed offset of every group

Pure Python except `write_tables`/`read_inventory` (pyspark imported inside them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler import values
from reconciler.catalog import Catalog, ConfigKey, load_catalog
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, LiveState, SecretRef
from reconciler.unread import ClusterOffsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMAT_VERSION = 1
SENSITIVE = "(sensitive)"
META_FILE = "inventory.json"
SCHEMAS: Mapping[str, str] = {
    "brokers": "cluster STRING, broker INT, rack STRING, endpoints ARRAY<STRING>",
    "topics": "cluster STRING, topic STRING, partitions INT, replication_factor INT",
    "partitions": "cluster STRING, topic STRING, partition INT, replicas ARRAY<INT>",
    "configs": "cluster STRING, entity_type STRING, entity STRING, key STRING, value STRING",
    "static": "cluster STRING, broker STRING, key STRING, value STRING",
    "sizes": "cluster STRING, topic STRING, partition INT, size_bytes BIGINT",
    "acls": "cluster STRING, resource_type STRING, pattern STRING, name STRING, principal STRING, host STRING, "
            "operation STRING, permission STRING",
    "log_offsets": "cluster STRING, topic STRING, partition INT, log_start BIGINT, log_end BIGINT, size_bytes BIGINT, "
                   "read_at BIGINT, at ARRAY<STRUCT<age_ms: BIGINT, offset: BIGINT>>",
    "groups": "cluster STRING, group STRING, state STRING, protocol_type STRING, members INT, "
              "client_ids ARRAY<STRING>",
    "group_offsets": "cluster STRING, group STRING, topic STRING, partition INT, committed BIGINT",
}
OFFSET_TABLES = ("log_offsets", "groups", "group_offsets")
REQUIRED = ("brokers", "topics", "partitions", "configs")
Rows = dict[str, list[tuple[Any, ...]]]


def _key_for(catalog: Catalog, ref: EntityRef, key: str) -> ConfigKey | None:
    if ref.entity_type == "topics":
        return catalog.topic(key)
    if ref.entity_type == "brokers":
        return catalog.resolve_broker(key).base
    return catalog.quota(ref.quota_kind, key)


def stored_value(catalog: Catalog, ref: EntityRef, key: str, value: str | SecretRef) -> str:
    """The inventory form of a value: canonical, or the marker for anything secret: what Kafka's
    DescribeConfigs would hide (`Catalog.is_sensitive`: passwords, SCRAM credentials, keys of unknown type)."""
    if catalog.is_sensitive(key, ref.quota_kind) or isinstance(value, SecretRef):
        return SENSITIVE
    return values.canonical(_key_for(catalog, ref, key), value)


def entity_name(ref: EntityRef) -> str:
    return ref.display.split("/", 1)[1]


def live_rows(live: LiveState, catalog: Catalog | None = None) -> Rows:
    """One cluster's live state as inventory rows (no static, no sizes)."""
    catalog = catalog or load_catalog()
    c = live.cluster
    rows: Rows = {"brokers": [], "topics": [], "partitions": [], "configs": []}
    for b in sorted(live.brokers.values(), key=lambda b: b.broker):
        rows["brokers"].append((c, b.broker, b.rack, list(b.endpoints)))
    for t in sorted(live.topics.values(), key=lambda t: t.name):
        rows["topics"].append((c, t.name, t.partitions, t.replication_factor))
        rows["partitions"].extend((c, t.name, p, list(r)) for p, r in sorted(t.assignment.items()))
    for ref, entity in live.entities.items():
        if entity.version is None:
            continue
        name = entity_name(ref)
        for key, value in entity.config.items():
            rows["configs"].append((c, ref.entity_type, name, key, stored_value(catalog, ref, key, value)))
    if live.acls is not None:  # read: an empty table says "no ACLs", its absence "not known"
        rows["acls"] = [(c, r.resource_type, r.pattern, r.name, e.principal, e.host, e.operation, e.permission)
                        for r, a in sorted(live.acls.items()) for e in sorted(a.entries)]
    return rows


def offset_rows(offsets: ClusterOffsets) -> Rows:
    """One cluster's log and consumer offsets as inventory rows (`log_offsets`, `groups`, `group_offsets`)."""
    c = offsets.cluster
    return {
        "log_offsets": [(c, p.topic, p.partition, p.log_start, p.log_end, p.size_bytes, offsets.read_at_ms,
                         [{"age_ms": a, "offset": o} for a, o in sorted(p.at.items())]) for p in offsets.partitions],
        "groups": [(c, g.group, g.state, g.protocol_type, g.members, list(g.client_ids)) for g in offsets.groups],
        "group_offsets": [(c, g, t, p, o) for g, t, p, o in offsets.committed],
    }


def static_rows(desired: DesiredState, catalog: Catalog | None = None) -> list[tuple[str, str, str, str]]:
    """The manifests' server.properties of one cluster (broker id or `<default>`)."""
    catalog = catalog or load_catalog()
    ref = EntityRef("brokers", DEFAULT_ENTITY)
    return [
        (desired.cluster.name, broker, key, stored_value(catalog, ref, key, dv.value))
        for broker, props in sorted(desired.static.items())
        for key, dv in sorted(props.items())
    ]


def merge_rows(parts: Iterable[Rows]) -> Rows:
    out: Rows = {name: [] for name in SCHEMAS if name not in ("sizes", *OFFSET_TABLES)}
    for part in parts:
        for name, rows in part.items():
            out.setdefault(name, []).extend(rows)
    return out


@dataclass(frozen=True)
class Inventory:
    """The inventory tables as DataFrames (sizes None when the inventory has none)."""

    brokers: DataFrame
    topics: DataFrame
    partitions: DataFrame
    configs: DataFrame
    static: DataFrame
    sizes: DataFrame | None
    # the offset tables (`log_offsets`, `groups`, `group_offsets`); None: the inventory has none (older, or
    # taken without an Admin API)
    offsets: dict[str, DataFrame] | None = None


def write_meta(out: Path, clusters: Iterable[str], source: str, has_sizes: bool,
               offsets: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """`offsets`: per cluster when its offsets were read (`readAt`, ISO UTC) and what could not be read
    (`notes`), or why none were (`notRead`)."""
    meta: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": source,
        "clusters": sorted(set(clusters)),
        "sizes": has_sizes,
    }
    if offsets is not None:
        meta["offsets"] = {c: dict(v) for c, v in sorted(offsets.items())}
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def write_tables(spark: SparkSession, rows: Rows, out: Path) -> None:
    """Write row lists as Parquet tables (one file each: snapshots are small next to Spark's overhead)."""
    from reconciler.impact.frames import local_df

    out.mkdir(parents=True, exist_ok=True)
    for name, data in rows.items():
        df = local_df(spark, data, SCHEMAS[name])
        df.coalesce(1).write.mode("overwrite").parquet(str(out / name))


def read_sizes_csv(spark: SparkSession, path: Path) -> DataFrame:
    """`cluster,topic,partition,size_bytes` with a header line."""
    return spark.read.option("header", True).schema(SCHEMAS["sizes"]).csv(str(path))


def read_inventory(spark: SparkSession, directory: Path) -> Inventory:
    from reconciler.errors import ReconcilerError
    from reconciler.impact.frames import local_df

    missing = [t for t in REQUIRED if not (directory / t).exists()]
    if missing:
        raise ReconcilerError(f"{directory} is not an inventory: missing table(s) {', '.join(missing)}")

    def table(name: str) -> DataFrame:
        if not (directory / name).exists():
            return local_df(spark, [], SCHEMAS[name])
        return spark.read.schema(SCHEMAS[name]).parquet(str(directory / name))

    sizes = table("sizes") if (directory / "sizes").exists() else None
    offsets = {t: table(t) for t in OFFSET_TABLES} if (directory / "log_offsets").exists() else None
    return Inventory(
        table("brokers"), table("topics"), table("partitions"), table("configs"), table("static"), sizes, offsets
    )


def read_meta(directory: Path) -> dict[str, Any]:
    """inventory.json, or {} when it is missing or unreadable."""
    try:
        found = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
