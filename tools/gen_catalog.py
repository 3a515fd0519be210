"""Generate `reconciler/data/catalog.json` from the Kafka ConfigDef dump (`kafka/config-catalog.json`).

Usage (from the repository root): `python tools/gen_catalog.py [SOURCE] [--out FILE]`
(SOURCE defaults to `../shared/kafka/config-catalog.json`).

The output is the project's own compact format, read by `reconciler.catalog`: only the fields the reconciler
uses, validators normalised to a few kinds, names sorted, one config per line (small, reviewable diffs).
This script is the only place that reads the dump; nothing reads it at run or test time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT / ".." / "shared" / "kafka" / "config-catalog.json"
DEFAULT_OUT = ROOT / "reconciler" / "data" / "catalog.json"
FORMAT = 1

# Facts the dump does not carry (ground-truth §3.1, §7): when a present name became dynamic, and from which
# release a listener-prefixed form of a cluster-level listener config may be set at <default>.
DYNAMIC_SINCE = {"producer.id.expiration.ms": "3.5.0"}
CLUSTER_LEVEL_LISTENER_SINCE = {"num.network.threads": "3.0.0"}  # 2.x: only max.connections(.creation.rate)
# ZooKeeper-mode brokers reject these topic configs when true (ground-truth §4.1).
ZK_REJECTED_WHEN_TRUE = ["remote.log.copy.disable", "remote.log.delete.on.disable"]
# Kafka 4.0 (KRaft only) removed these configs: the names of 3.9.1's ConfigDefs that 4.1.1's no longer have
# (`kafka.server.KafkaConfig.configDef().names()` and `org.apache.kafka.storage.internals.log.LogConfig
# .configNames()` of the jars in kafka/pom.xml and kafka/pom-4.xml compared), each with what replaces it, from
# Kafka 4.0's upgrade notes (docs/upgrade.html, "Notable changes in 4.0.0") and the KIPs they cite. A cluster
# whose kafkaVersion is 4.x may not set them (rules.cluster.removed_configs).
_ZOOKEEPER = "nothing: ZooKeeper mode was removed (KIP-833); the cluster is KRaft (spec.kraft)"
_ENCODER = "nothing: KRaft stores dynamic passwords in the metadata log without an encoder"
REMOVED_IN_4_0 = {
    "broker": {
        "auto.include.jmx.reporter": "metric.reporters (JmxReporter is in it by default, KIP-830)",
        "broker.id.generation.enable": "node.id (KRaft nodes have fixed ids)",
        "control.plane.listener.name": "nothing: KRaft controllers use controller.listener.names",
        "controlled.shutdown.max.retries": "nothing: KRaft brokers shut down through their controller heartbeat",
        "controlled.shutdown.retry.backoff.ms": "nothing: KRaft brokers shut down through their controller heartbeat",
        "delegation.token.master.key": "delegation.token.secret.key",
        "eligible.leader.replicas.enable": "the eligible.leader.replicas.version feature (kafka-features.sh, KIP-966)",
        "group.coordinator.new.enable": "group.coordinator.rebalance.protocols (KIP-848)",
        "group.share.max.groups": "nothing (removed from the share-group preview configs, KIP-932)",
        "inter.broker.protocol.version": "metadata.version (kafka-features.sh upgrade --release-version)",
        "leader.imbalance.per.broker.percentage": "nothing (removed in 4.0)",
        "log.message.downconversion.enable": "nothing: down-conversion was removed with old fetch versions (KIP-896)",
        "log.message.format.version": "nothing: the message format is always v2 (KIP-724)",
        "log.message.timestamp.difference.max.ms":
            "log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms (KIP-937)",
        "metadata.log.segment.min.bytes": "metadata.log.segment.bytes (the minimum is no longer public in 4.0)",
        "offsets.commit.required.acks": "nothing: offset commits use acks=all (KIP-1041)",
        "password.encoder.cipher.algorithm": _ENCODER,
        "password.encoder.iterations": _ENCODER,
        "password.encoder.key.length": _ENCODER,
        "password.encoder.keyfactory.algorithm": _ENCODER,
        "password.encoder.old.secret": _ENCODER,
        "password.encoder.secret": _ENCODER,
        "reserved.broker.max.id": "node.id (KRaft nodes have fixed ids)",
        **{name: _ZOOKEEPER for name in (
            "zookeeper.clientCnxnSocket", "zookeeper.connect", "zookeeper.connection.timeout.ms",
            "zookeeper.max.in.flight.requests", "zookeeper.metadata.migration.enable",
            "zookeeper.metadata.migration.min.batch.size", "zookeeper.session.timeout.ms", "zookeeper.set.acl",
            "zookeeper.ssl.cipher.suites", "zookeeper.ssl.client.enable", "zookeeper.ssl.crl.enable",
            "zookeeper.ssl.enabled.protocols", "zookeeper.ssl.endpoint.identification.algorithm",
            "zookeeper.ssl.keystore.location", "zookeeper.ssl.keystore.password", "zookeeper.ssl.keystore.type",
            "zookeeper.ssl.ocsp.enable", "zookeeper.ssl.protocol", "zookeeper.ssl.truststore.location",
            "zookeeper.ssl.truststore.password", "zookeeper.ssl.truststore.type")},
    },
    "topic": {
        "message.downconversion.enable": "nothing: down-conversion was removed with old fetch versions (KIP-896)",
        "message.format.version": "nothing: the message format is always v2 (KIP-724)",
        "message.timestamp.difference.max.ms":
            "message.timestamp.before.max.ms and message.timestamp.after.max.ms (KIP-937)",
    },
}
# The 4.x releases a cluster's kafkaVersion may name (KRaft only; the catalog's ConfigDefs stay 3.9's, less
# REMOVED_IN_4_0 from 4.0).
KRAFT_ONLY_RELEASES = ["4.0", "4.1"]
FACTORS = {"identity": 1, "minutes_to_ms": 60_000, "hours_to_ms": 3_600_000}
QUOTA_KINDS = {
    "clients": "clients",
    "users": "users",
    "user-clients": "users/<user>/clients/<client> and users/<default>",
    "ips": "ips",
}


def release(since: str) -> str:
    """`3.9.0-rc3` -> `3.9.0`: a release candidate's names are that release's names."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-rc\d+)?", since)
    if not m:
        raise ValueError(f"unexpected name_present_since {since!r}")
    return m.group(1)


def validator(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """Kafka validator dump -> our kinds: range, one_of, one_of_ci, each_of, throttled_replicas, gzip_level,
    message_format_version, non_empty_string, custom (not checkable offline: read-only keys only)."""
    if raw is None:
        return None
    kind = raw.get("kind") or raw.get("class", "")  # the ips entry names `class` instead of `kind`
    text = raw["text"]
    if kind.endswith("Range"):
        return {"kind": "range", "min": raw["min"], "max": raw["max"], "text": text}
    if kind == "ConfigDef.ValidString":
        return {"kind": "one_of", "allowed": raw["allowed"], "text": text}
    if kind == "ConfigDef.CaseInsensitiveValidString":
        return {"kind": "one_of_ci", "allowed": raw["allowed_case_insensitive"], "text": text}
    if kind == "ConfigDef.ValidList":
        return {"kind": "each_of", "allowed": raw["allowed_each"], "text": text}
    if kind == "ThrottledReplicaListValidator":
        return {"kind": "throttled_replicas", "text": text}
    if kind.startswith("CompressionType") and text == "[1,...,9] or -1":
        return {"kind": "gzip_level", "min": 1, "max": 9, "allowed": ["-1"], "text": text}
    if kind == "MetadataVersionValidator":
        return {"kind": "message_format_version", "text": "MetadataVersion"}  # list kept once, top level
    if kind == "ConfigDef.NonEmptyString":
        return {"kind": "non_empty_string", "text": text}
    if kind == "ConfigDef.NonNullValidator":
        return None  # ZooKeeper values are never null
    return {"kind": "custom", "text": text}


def metadata_versions(dump: dict[str, Any]) -> list[str]:
    for c in dump["topic_configs"]:
        if c["name"] == "message.format.version":
            return [v.strip() for v in c["validator"]["text"].strip("[]").split(",")]
    raise ValueError("message.format.version missing")


def common(c: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c["type"]}
    default = c["default"]
    if default is not None and default != "__REQUIRED_NO_DEFAULT__":
        out["default"] = default
    v = validator(c["validator"])
    if v is not None:
        out["validator"] = v
    return out


def topics(dump: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for c in dump["topic_configs"]:
        entry = common(c)
        entry["since"] = release(c["name_present_since"])
        if c["broker_synonyms"]:
            entry["synonyms"] = c["broker_synonyms"]
        out[c["name"]] = entry
    return out


def brokers(dump: dict[str, Any]) -> dict[str, Any]:
    groups: dict[str, tuple[str, list[str], int]] = {}  # broker key -> (topic key, group, factor)
    for t in dump["topic_configs"]:
        for d in t["broker_synonym_details"]:
            groups[d["name"]] = (t["name"], t["broker_synonyms"], FACTORS[d["converter"]])
    out = {}
    for c in dump["broker_configs"]:
        name = c["name"]
        entry = common(c)
        entry["scope"] = c["dynamic_scope"]
        if "name_present_since" in c:  # only dynamic keys carry it; read-only ones are not version-filtered
            entry["since"] = release(c["name_present_since"])
        if name in DYNAMIC_SINCE:
            entry["dynamic_since"] = DYNAMIC_SINCE[name]
        if name in groups:
            topic_key, group, factor = groups[name]
            assert c.get("topic_config_synonym_of") == topic_key, name
            entry["topic_key"] = topic_key
            if len(group) > 1:
                entry["synonyms"] = group
            if factor != 1:
                entry["factor"] = factor
        if c.get("dynamic_only_with_listener_prefix"):
            entry["listener_prefix_only"] = True
        if c.get("dynamic_only"):
            entry["dynamic_only"] = True  # a ZooKeeper-only key, never in server.properties
        out[name] = entry
    return out


def quotas(dump: dict[str, Any], broker: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    keys: dict[str, Any] = {}
    kinds: dict[str, list[str]] = {}
    for kind, section in QUOTA_KINDS.items():
        for c in dump["entity_configs"][section]:
            entry = common(c)
            assert keys.setdefault(c["name"], entry) == entry, c["name"]
        kinds[kind] = sorted(c["name"] for c in dump["entity_configs"][section])
    kinds["brokers"] = sorted(n for n, e in broker.items() if e.get("dynamic_only"))
    return dict(sorted(keys.items())), dict(sorted(kinds.items()))


def sets(dump: dict[str, Any], broker: dict[str, Any]) -> dict[str, Any]:
    s = dump["sets"]
    cluster_level = {
        n: CLUSTER_LEVEL_LISTENER_SINCE.get(n, broker[n]["since"]) for n in s["ClusterLevelListenerConfigs"]
    }
    return {
        "cluster_level_listener": dict(sorted(cluster_level.items())),
        "listener_mechanism": sorted(s["ListenerMechanismConfigs"]),
        "password_suffixes": sorted(s["DynamicPasswordConfigs(isPasswordConfig uses endsWith)"]),
        "topic_no_server_default": sorted(s["LogConfig.CONFIGS_WITH_NO_SERVER_DEFAULTS"]),
        "topic_zk_rejected_when_true": ZK_REJECTED_WHEN_TRUE,
    }


def check(dump: dict[str, Any], data: dict[str, Any]) -> None:
    """Cross-check our derivation against the dump's own sets, so a new dump cannot silently drift."""
    s = dump["sets"]
    broker = data["broker"]
    dynamic = {n for n, e in broker.items() if e["scope"] != "read-only" and not e.get("dynamic_only")}
    assert dynamic == set(s["AllDynamicConfigs"]), dynamic ^ set(s["AllDynamicConfigs"])
    per_broker = {n for n, e in data["broker"].items() if e["scope"] == "per-broker"}
    assert per_broker == set(s["PerBrokerConfigs"]), per_broker ^ set(s["PerBrokerConfigs"])
    prefixed = {n for n, e in data["broker"].items() if e.get("listener_prefix_only")}
    assert prefixed == set(s["DynamicSecurityConfigs(SslConfigs.RECONFIGURABLE_CONFIGS)"])
    names = dynamic | set(data["quota_kinds"]["brokers"])
    assert names == set(s["DynamicConfig.Broker.names"])
    for n in ZK_REJECTED_WHEN_TRUE:
        assert data["topic"][n]["type"] == "BOOLEAN", n


def generate(source: Path) -> dict[str, Any]:
    raw = source.read_bytes()
    dump = json.loads(raw)
    broker = brokers(dump)
    quota_keys, quota_kinds = quotas(dump, broker)
    data = {
        "_generated": {
            "by": "tools/gen_catalog.py (do not edit; re-run it)",
            "from": "kafka/config-catalog.json",
            "sha256": hashlib.sha256(raw).hexdigest(),
            "extracted_from": dump["extracted_from"],
        },
        "format": FORMAT,
        "kafka_version": dump["kafka_version"],
        "metadata_versions": metadata_versions(dump),
        "sets": sets(dump, broker),
        "topic": dict(sorted(topics(dump).items())),
        "broker": dict(sorted(broker.items())),
        "quota": quota_keys,
        "quota_kinds": quota_kinds,
        "kraft_only_releases": KRAFT_ONLY_RELEASES,
        "removed": {"4.0": {scope: dict(sorted(names.items())) for scope, names in REMOVED_IN_4_0.items()}},
    }
    check(dump, data)
    return data


def render(data: dict[str, Any]) -> str:
    """Pretty at the top two levels, one compact line per config below: stable and diff-friendly."""

    def compact(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"]
    items = list(data.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and value and all(isinstance(v, dict | list) for v in value.values()):
            lines.append(f"  {json.dumps(key)}: {{")
            inner = list(value.items())
            for j, (k, v) in enumerate(inner):
                sep = "," if j < len(inner) - 1 else ""
                lines.append(f"    {json.dumps(k)}: {compact(v)}{sep}")
            lines.append(f"  }}{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    text = render(generate(args.source))
    assert json.loads(text)  # the hand-rolled layout is still valid JSON
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
