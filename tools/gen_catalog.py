"""Generate the config catalog, one file per Kafka line, from each release's own ConfigDefs.

Usage (from the repository root): `python tools/gen_catalog.py [--check]`
  reads   kafka/configdefs/<release>.json   one dump per pinned release (tools/configdefs/dump.sh writes them from
                                            the release's jars: kafka/pom.xml, kafka/pom-4.0.xml, kafka/pom-4.xml)
          kafka/configdefs/names-since.json the first release of each name for 2.0.0-3.9.0 (frozen history)
  writes  reconciler/data/catalog-<line>.json  (3.9, 4.0, 4.1: what `reconciler.catalog` loads, one line at a time)
          reconciler/data/catalog-index.json   the lines and their releases (what `--version` lists)
  --check exits 1 when the committed files differ from what the dumps give (the unit tests run it).

The output is the project's own compact format: only the fields the reconciler uses, validators normalised to a
few kinds, names sorted, one config per line (small, reviewable diffs). Nothing reads the dumps at run time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DUMPS = ROOT / "kafka" / "configdefs"
OUT = ROOT / "reconciler" / "data"
FORMAT = 2
BASE_RELEASE = "2.0.0"
# The line of each dump: a line's catalog is its newest pinned release's ConfigDefs.
RELEASES = {"3.9": "3.9.1", "4.0": "4.0.1", "4.1": "4.1.1"}
ZOOKEEPER_LINES = {"3.9"}  # 4.0 removed ZooKeeper mode (KIP-833)

# Facts the dumps do not carry (ground-truth §3.1, §7): when a present name became dynamic, and from which release
# a listener-prefixed form of a cluster-level listener config may be set at <default>.
DYNAMIC_SINCE = {"producer.id.expiration.ms": "3.5.0"}
CLUSTER_LEVEL_LISTENER_SINCE = {"num.network.threads": "3.0.0"}  # 2.x: only max.connections(.creation.rate)
# ZooKeeper-mode brokers reject these topic configs when true (ground-truth §4.1).
ZK_REJECTED_WHEN_TRUE = ["remote.log.copy.disable", "remote.log.delete.on.disable"]
# Client-metrics subscriptions (KIP-714, ConfigResource.Type.CLIENT_METRICS) exist from Kafka 3.7.0.
CLIENT_METRICS_SINCE = "3.7.0"

# What replaces each config a release removed. The removed names themselves are computed (a line's names that the
# next line's ConfigDefs no longer have) and must equal this table's keys, so a new dump cannot drop a name
# silently. Texts from Kafka's upgrade notes (docs/upgrade.html, "Notable changes in 4.0.0" / "4.1.0") and the
# KIPs they cite. A cluster whose kafkaVersion is that release or newer may not set them
# (rules.cluster.removed_configs).
_ZOOKEEPER = "nothing: ZooKeeper mode was removed (KIP-833); the cluster is KRaft (spec.kraft)"
_ENCODER = "nothing: KRaft stores dynamic passwords in the metadata log without an encoder"
REMOVED = {
    "4.0": {
        "broker": {
            "auto.include.jmx.reporter": "metric.reporters (JmxReporter is in it by default, KIP-830)",
            "broker.id.generation.enable": "node.id (KRaft nodes have fixed ids)",
            "control.plane.listener.name": "nothing: KRaft controllers use controller.listener.names",
            "controlled.shutdown.max.retries": "nothing: KRaft brokers shut down through their controller heartbeat",
            "controlled.shutdown.retry.backoff.ms":
                "nothing: KRaft brokers shut down through their controller heartbeat",
            "delegation.token.master.key": "delegation.token.secret.key",
            "eligible.leader.replicas.enable":
                "the eligible.leader.replicas.version feature (kafka-features.sh, KIP-966)",
            "inter.broker.protocol.version": "metadata.version (kafka-features.sh upgrade --release-version)",
            "leader.imbalance.per.broker.percentage": "nothing (removed in 4.0)",
            "log.message.downconversion.enable":
                "nothing: down-conversion was removed with old fetch versions (KIP-896)",
            "log.message.format.version": "nothing: the message format is always v2 (KIP-724)",
            "log.message.timestamp.difference.max.ms":
                "log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms (KIP-937)",
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
                "zookeeper.ssl.keystore.location", "zookeeper.ssl.keystore.password",
                "zookeeper.ssl.keystore.type", "zookeeper.ssl.ocsp.enable", "zookeeper.ssl.protocol",
                "zookeeper.ssl.truststore.location", "zookeeper.ssl.truststore.password",
                "zookeeper.ssl.truststore.type")},
        },
        "topic": {
            "message.downconversion.enable":
                "nothing: down-conversion was removed with old fetch versions (KIP-896)",
            "message.format.version": "nothing: the message format is always v2 (KIP-724)",
            "message.timestamp.difference.max.ms":
                "message.timestamp.before.max.ms and message.timestamp.after.max.ms (KIP-937)",
        },
    },
    "4.1": {
        "broker": {
            "group.coordinator.new.enable": "group.coordinator.rebalance.protocols (KIP-848)",
            "group.share.max.groups": "nothing (a share-group preview config, KIP-932)",
            "metadata.log.segment.min.bytes": "metadata.log.segment.bytes (the minimum is no longer public)",
            "share.fetch.max.fetch.records": "nothing (a share-group preview config, KIP-932)",
        },
        "topic": {},
    },
}
FACTORS = {"identity": 1, "minutes_to_ms": 60_000, "hours_to_ms": 3_600_000}
QUOTA_SECTIONS = {"clients": "clients", "users": "users", "user-clients": "clients", "ips": "ips"}
_RANGE = "org.apache.kafka.common.config.ConfigDef$Range"


def validator(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """A dumped validator (its class, Kafka's toString, its fields) -> our kinds: range, one_of, one_of_ci, each_of,
    throttled_replicas, gzip_level, message_format_version, non_empty_string, share_offset_reset, custom (not
    checkable offline: read-only keys only, `check` proves it)."""
    if raw is None:
        return None
    cls, text = raw["class"], raw["text"]
    if cls == _RANGE:
        return {"kind": "range", "min": raw.get("min"), "max": raw.get("max"), "text": text}
    if cls.endswith("ConfigDef$ValidString"):
        return {"kind": "one_of", "allowed": raw["validStrings"], "text": text}
    if cls.endswith("ConfigDef$CaseInsensitiveValidString"):
        return {"kind": "one_of_ci", "allowed": [s.upper() for s in raw["validStrings"]], "text": text}
    if cls.endswith("ConfigDef$ValidList"):
        return {"kind": "each_of", "allowed": raw["validString"]["validStrings"], "text": text}
    if cls.endswith("ThrottledReplicaListValidator"):
        return {"kind": "throttled_replicas", "text": text}
    if text == "[1,...,9] or -1":  # GzipCompression's level: CompressionType's validator (3.9), a lambda (4.x)
        return {"kind": "gzip_level", "min": 1, "max": 9, "allowed": ["-1"], "text": text}
    if cls.endswith("MetadataVersionValidator"):
        return {"kind": "message_format_version", "text": "MetadataVersion"}  # list kept once, top level
    if cls.endswith("ConfigDef$NonEmptyString"):
        return {"kind": "non_empty_string", "text": text}
    if cls.endswith("ShareGroupAutoOffsetResetStrategy$Validator"):
        return {"kind": "share_offset_reset", "allowed": ["earliest", "latest"], "text": text}
    if cls.endswith("ConfigDef$NonNullValidator"):
        return None  # dynamic values are never null
    return {"kind": "custom", "text": text}


def common(c: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c["type"]}
    if c.get("default") is not None:
        out["default"] = c["default"]
    v = validator(c.get("validator"))
    if v is not None:
        out["validator"] = v
    if c.get("internal"):
        out["internal"] = True
    return out


class Line:
    """One Kafka line's catalog, made from its release's dump and the line before it (for `since`)."""

    def __init__(self, line: str, dump: dict[str, Any], previous: dict[str, Any] | None, history: dict[str, Any]):
        self.line, self.dump, self.previous, self.history = line, dump, previous, history
        self.release = dump["kafka_version"]
        self.zookeeper = line in ZOOKEEPER_LINES

    def since(self, section: str, name: str, first: str | None = None) -> str | None:
        """The first release with `name`: the history table up to 3.9, then the line before this one, else this
        line's x.y.0 (`first` for sections younger than the line, e.g. client metrics)."""
        if self.previous is None:
            return self.history.get(section, {}).get(name, first)
        before = self.previous.get(section) or {}
        if name in before:
            return before[name].get("since")
        return first or f"{self.line}.0"

    def topics(self) -> dict[str, Any]:
        out = {}
        for name, c in self.dump["topic"].items():
            entry = common(c)
            entry["since"] = self.since("topic", name) or BASE_RELEASE
            synonyms = [s["name"] for s in c.get("server_synonyms", ())]
            if synonyms:
                entry["synonyms"] = synonyms
            out[name] = entry
        return dict(sorted(out.items()))

    def brokers(self) -> dict[str, Any]:
        d = self.dump["dynamic"]
        dynamic, per_broker = set(d["AllDynamicConfigs"]), set(d["PerBrokerConfigs"])
        security = set(d["DynamicSecurityConfigs"])
        groups: dict[str, tuple[str, list[str], int]] = {}  # broker key -> (topic key, synonym group, factor)
        for topic, c in self.dump["topic"].items():
            synonyms = c.get("server_synonyms", [])
            for s in synonyms:
                groups[s["name"]] = (topic, [x["name"] for x in synonyms], FACTORS[s["converter"]])
        out: dict[str, Any] = {}
        for name, c in self.dump["broker"].items():
            entry = common(c)
            entry["scope"] = "per-broker" if name in per_broker else "cluster-wide" if name in dynamic else "read-only"
            since = self.since("broker", name)
            if since is not None:  # 3.9: read-only keys are not filtered by version
                entry["since"] = since
            if name in DYNAMIC_SINCE:
                entry["dynamic_since"] = DYNAMIC_SINCE[name]
            if name in groups:
                topic, group, factor = groups[name]
                entry["topic_key"] = topic
                if len(group) > 1:
                    entry["synonyms"] = group
                if factor != 1:
                    entry["factor"] = factor
            elif name in self.dump["broker_synonyms"]:  # DynamicBrokerConfig.brokerConfigSynonyms beyond topics
                entry["synonyms"] = self.dump["broker_synonyms"][name]
            if name in security:
                entry["listener_prefix_only"] = True
            out[name] = entry
        for name, c in self.dump["quota"]["brokers"].items():  # replication throttles: DynamicConfig.Broker only
            entry = common(c)
            entry.update(scope="cluster-wide", dynamic_only=True)  # as Kafka: at <default> or per broker
            since = self.since("broker", name)
            if since is not None:
                entry["since"] = since
            out[name] = entry
        return dict(sorted(out.items()))

    def quotas(self) -> tuple[dict[str, Any], dict[str, list[str]]]:
        keys: dict[str, Any] = {}
        kinds: dict[str, list[str]] = {}
        for kind, section in QUOTA_SECTIONS.items():
            for name, c in self.dump["quota"][section].items():
                entry = common(c)
                assert keys.setdefault(name, entry) == entry, name
            kinds[kind] = sorted(self.dump["quota"][section])
        kinds["brokers"] = sorted(self.dump["quota"]["brokers"])
        return dict(sorted(keys.items())), dict(sorted(kinds.items()))

    def entity(self, section: str, first: str) -> dict[str, Any]:
        """Group or client-metrics configs (ConfigResource.Type GROUP, CLIENT_METRICS)."""
        out = {}
        for name, c in (self.dump.get(section) or {}).items():
            entry = common(c)
            entry["since"] = self.since(section, name, first) or first
            out[name] = entry
        return dict(sorted(out.items()))

    def features(self) -> dict[str, Any]:
        """Finalizable features: metadata.version's named levels, then each production feature's levels, what a
        level requires of other features (FeatureVersion.dependencies) and the production range."""
        mv = self.dump["metadata_versions"]
        kraft = [v for v in mv["versions"] if v["level"] > 0]
        out: dict[str, Any] = {"metadata.version": {
            "levels": {v["version"]: v["level"] for v in kraft},
            "minimum": next(v["level"] for v in kraft if v["version"] == mv["minimum_kraft"]),
            "latest_production": next(v["level"] for v in kraft if v["version"] == mv["latest_production"]),
            "latest_testing": kraft[-1]["level"],
        }}
        for f in self.dump["features"]:
            out[f["name"]] = {
                "minimum": 0,  # every feature may be finalized at 0 (disabled) except metadata.version
                "latest_production": f["latest_production"],
                "latest_testing": f["latest_testing"],
                "requires": {str(lv["level"]): lv["dependencies"] for lv in f["levels"] if lv["dependencies"]},
            }
        return dict(sorted(out.items()))

    def sets(self, broker: dict[str, Any]) -> dict[str, Any]:
        d = self.dump["dynamic"]
        cluster_level = {
            n: CLUSTER_LEVEL_LISTENER_SINCE.get(n, broker[n].get("since", BASE_RELEASE))
            for n in d["ClusterLevelListenerConfigs"]
        }
        # DynamicBrokerConfig.DynamicPasswordConfigs: AllDynamicConfigs of type PASSWORD (4.x has no encoder and no
        # such set; Kafka's definition applied to its ConfigDefs keeps isPasswordConfig's suffix rule for secrecy)
        passwords = d.get("DynamicPasswordConfigs") or sorted(
            n for n in d["AllDynamicConfigs"] if broker.get(n, {}).get("type") == "PASSWORD")
        topic_no_default = self.dump["topic_no_server_default"]
        derived = sorted(n for n, c in self.dump["topic"].items() if not c.get("server_synonyms"))
        if topic_no_default is not None:
            assert sorted(topic_no_default) == derived, set(topic_no_default) ^ set(derived)
        return {
            "cluster_level_listener": dict(sorted(cluster_level.items())),
            "listener_mechanism": sorted(d["ListenerMechanismConfigs"]),
            "password_suffixes": sorted(passwords),
            "topic_no_server_default": derived,
            "topic_zk_rejected_when_true": ZK_REJECTED_WHEN_TRUE if self.zookeeper else [],
        }

    def removed(self) -> dict[str, Any]:
        return {release: scopes for release, scopes in REMOVED.items()
                if tuple(map(int, release.split("."))) <= tuple(map(int, self.line.split(".")))}

    def build(self, raw_sha: str) -> dict[str, Any]:
        broker = self.brokers()
        quota_keys, quota_kinds = self.quotas()
        mv_versions = [v["version"] for v in self.dump["metadata_versions"]["versions"]]
        data = {
            "_generated": {
                "by": "tools/gen_catalog.py (do not edit; re-run it)",
                "from": f"kafka/configdefs/{self.release}.json",
                "sha256": raw_sha,
                "extracted_by": self.dump["extracted_by"],
                "kafka_commit": self.dump["kafka_commit"],
            },
            "format": FORMAT,
            "line": self.line,
            "kafka_version": self.release,
            "zookeeper": self.zookeeper,
            "metadata_versions": mv_versions,
            "sets": self.sets(broker),
            "topic": self.topics(),
            "broker": broker,
            "quota": quota_keys,
            "quota_kinds": quota_kinds,
            "group": self.entity("group", f"{self.line}.0"),
            "client_metrics": self.entity("client_metrics", CLIENT_METRICS_SINCE),
            "features": self.features(),
            "config_resource_types": sorted(t["name"] for t in self.dump["config_resource_types"]),
            "removed": self.removed(),
        }
        check(self, data)
        return data


def check(line: Line, data: dict[str, Any]) -> None:
    """Cross-check our derivation against the dump's own sets, so a new dump cannot silently drift."""
    d = line.dump["dynamic"]
    broker = data["broker"]
    dynamic = {n for n, e in broker.items() if e["scope"] != "read-only" and not e.get("dynamic_only")}
    assert dynamic == set(d["AllDynamicConfigs"]), dynamic ^ set(d["AllDynamicConfigs"])
    per_broker = {n for n, e in broker.items() if e["scope"] == "per-broker" and not e.get("dynamic_only")}
    assert per_broker == set(d["PerBrokerConfigs"]), per_broker ^ set(d["PerBrokerConfigs"])
    names = dynamic | set(data["quota_kinds"]["brokers"])
    assert names == set(d["DynamicConfig.Broker.names"]), names ^ set(d["DynamicConfig.Broker.names"])
    for n in data["sets"]["topic_zk_rejected_when_true"]:
        assert data["topic"][n]["type"] == "BOOLEAN", n
    for section in ("topic", "group", "client_metrics", "quota"):
        for n, e in data[section].items():  # every key a manifest may set is checkable offline
            assert e.get("validator", {}).get("kind") != "custom", (section, n)
    for n, e in broker.items():
        if e["scope"] != "read-only":
            assert e.get("validator", {}).get("kind") != "custom", n


def removed_names(older: dict[str, Any], newer: dict[str, Any], scope: str) -> set[str]:
    return set(older[scope]) - set(newer[scope])


def generate() -> dict[str, str]:
    """File name -> content, for every catalog file."""
    history = json.loads((DUMPS / "names-since.json").read_text(encoding="utf-8"))
    files: dict[str, str] = {}
    previous: dict[str, Any] | None = None
    index: dict[str, Any] = {"format": FORMAT, "base_release": BASE_RELEASE, "lines": {}}
    for line_name, release in RELEASES.items():
        raw = (DUMPS / f"{release}.json").read_bytes()
        dump = json.loads(raw)
        assert dump["kafka_version"] == release, (release, dump["kafka_version"])
        data = Line(line_name, dump, previous, history).build(hashlib.sha256(raw).hexdigest())
        if previous is not None and line_name in REMOVED:
            for scope in ("broker", "topic"):
                gone = removed_names(previous, data, scope)
                assert gone == set(REMOVED[line_name][scope]), (line_name, scope, gone ^ set(REMOVED[line_name][scope]))
        files[f"catalog-{line_name}.json"] = render(data)
        index["lines"][line_name] = {"release": release, "zookeeper": data["zookeeper"]}
        previous = data
    files["catalog-index.json"] = render(index)
    return files


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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed files; write nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    files = generate()
    stale = []
    for name, text in files.items():
        assert json.loads(text)  # the hand-rolled layout is still valid JSON
        target = args.out / name
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({len(text)} bytes)", file=sys.stderr)
    if stale:
        print(f"stale: {', '.join(stale)}: run python tools/gen_catalog.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
