"""Catalog facts the job needs, as small tables: which broker key feeds which effective key, and defaults.

  synonyms (broker_key, target, rank, factor, dynamic, is_topic)
      every broker key that sets an effective value: the broker synonyms of each topic config in
      precedence order (`log.retention.ms` rank 0 > `.minutes` rank 1 ×60000 > `.hours` rank 2 ×3600000),
      and each broker key of a synonym group (target = the group's first name). `dynamic` is false for
      read-only synonyms, which brokers ignore when found in ZooKeeper (ground truth §3.4). Keys not in
      this table (custom, listener-prefixed) are their own target, dynamic, factor 1.
  keys (target, is_topic, type, default_value, broker_key)
      the Kafka default of every effective key (topic default for topic configs), its type (LIST values
      compare as sets) and the broker key it is reported as on brokers.
Pure Python (rows only); the job turns them into DataFrames.
"""

from __future__ import annotations

import functools

from reconciler.catalog import Catalog, load_catalog

SYNONYM_SCHEMA = "broker_key STRING, target STRING, rank INT, factor BIGINT, dynamic BOOLEAN, is_topic BOOLEAN"
KEY_SCHEMA = "target STRING, is_topic BOOLEAN, type STRING, default_value STRING, broker_key STRING"

Synonym = tuple[str, str, int, int, bool, bool]
KeyInfo = tuple[str, bool, str, str | None, str]


@functools.cache
def synonym_rows(catalog: Catalog | None = None) -> tuple[Synonym, ...]:
    catalog = catalog or load_catalog()
    rows: dict[str, Synonym] = {}
    for name in catalog.names("topic"):
        topic = catalog.topic(name)
        assert topic is not None
        for rank, broker_name in enumerate(topic.synonyms):
            key = catalog.broker(broker_name)
            dynamic = key is not None and key.scope != "read-only"
            factor = key.synonym_factor if key is not None else 1
            rows[broker_name] = (broker_name, name, rank, factor, dynamic, True)
    for name in catalog.names("broker"):
        if name in rows:
            continue
        key = catalog.broker(name)
        assert key is not None
        group = key.synonyms or (name,)
        rank = group.index(name) if name in group else 0
        rows[name] = (name, group[0], rank, key.synonym_factor, key.scope != "read-only", False)
    return tuple(sorted(rows.values()))


@functools.cache
def key_rows(catalog: Catalog | None = None) -> tuple[KeyInfo, ...]:
    catalog = catalog or load_catalog()
    rows: dict[str, KeyInfo] = {}
    for name in catalog.names("topic"):
        topic = catalog.topic(name)
        assert topic is not None
        broker_key = topic.synonyms[0] if topic.synonyms else name
        rows[name] = (name, True, topic.type, topic.default, broker_key)
    for name in catalog.names("broker"):
        key = catalog.broker(name)
        assert key is not None
        target = (key.synonyms or (name,))[0]
        if target in rows or key.topic_key is not None:
            continue
        head = catalog.broker(target) or key
        rows[target] = (target, False, head.type, head.default, target)
    return tuple(sorted(rows.values()))


@functools.cache
def list_keys(catalog: Catalog | None = None) -> tuple[str, ...]:
    """Effective keys of LIST type: their values are compared as sets (`compact,delete` = `delete,compact`)."""
    return tuple(r[0] for r in key_rows(catalog) if r[2] == "LIST")


def topic_keys(catalog: Catalog | None = None) -> tuple[str, ...]:
    return tuple(r[0] for r in key_rows(catalog) if r[1])
