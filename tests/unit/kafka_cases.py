"""What Kafka would say, case by case (issue 13): each case is a small change to a valid base cluster, the
verdict a broker (or AdminZkClient) reaches for it, and the Kafka code path that reaches it.

`row` is the row of docs/kafka-validation.md the case proves (test_kafka_rules checks every offline row has
cases). Verdicts: "reject" (an error naming `key`), "warn" (a warning naming `key`, no error: Kafka decides
with broker state we cannot see), "accept" (neither: Kafka accepts it, so must we). A `#<-` marker on a line
says where the diagnostic must point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["reject", "warn", "accept"]
CLUSTER = "clusters/c1/cluster.yaml"
LISTENERS = "clusters/c1/listeners.yaml"
EXTRA = "clusters/c1/case.yaml"
STATIC = "clusters/c1/server.properties"


def cluster(version: str = "3.6") -> str:
    return (f'apiVersion: reconciler/v1\nkind: Cluster\nmeta: {{name: c1}}\nspec:\n  kafkaVersion: "{version}"\n'
            '  zookeeper: {connect: "127.0.0.1:2181/c1"}\n  brokers: [1, 2]\n')


def listeners(brokers: str = '    "1": {listeners: ["INTERNAL://:9092"]}\n', configs: str = "",
              proto: str = "{INTERNAL: PLAINTEXT, EXTERNAL: SASL_SSL}") -> str:
    return ("apiVersion: reconciler/v1\nkind: Listeners\nmeta: {}\nspec:\n"
            f"  securityProtocolMap: {proto}\n  interBrokerListener: INTERNAL\n  brokers:\n{brokers}{configs}")


def default(config: str, static: bool = False) -> str:
    """A BrokerConfig for <default> with `config` (YAML lines at 4 spaces)."""
    file = "  static: {file: server.properties}\n" if static else ""
    return f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: default}}\nspec:\n{file}  config:\n{config}"


def topics(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{}}\nspec:\n  topics:\n{body}"


def acls(resource: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Acls\nmeta: {{}}\nspec:\n  resources:\n    - {resource}\n"


def quotas(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Quotas\nmeta: {{}}\nspec:\n{body}"


@dataclass(frozen=True)
class KafkaCase:
    id: str
    row: str  # docs/kafka-validation.md row
    verdict: Verdict
    key: str
    files: dict[str, str]
    kafka: str  # the Kafka class.method whose verdict this is
    phrase: str = ""  # part of the message (reject/warn)
    version: str = "3.6"
    extra: dict[str, str] = field(default_factory=dict)


def k(id: str, row: str, verdict: Verdict, key: str, doc: str, kafka: str, phrase: str = "", *,
      version: str = "3.6", path: str = EXTRA, static: str | None = None) -> KafkaCase:
    files = {path: doc}
    if static is not None:
        files[STATIC] = static
    return KafkaCase(id, row, verdict, key, files, kafka, phrase, version)


VC = "KafkaConfig.validateValues"
CASES: list[KafkaCase] = [
    # --- K01-K03: log times (KafkaConfig.validateValues requires) ---------------------------------------
    k("roll-zero", "K01", "reject", "log.roll.ms", default("    log.roll.ms: 0   #<-\n"), VC,
      "log.roll.ms must be greater than or equal to 1"),
    k("roll-one", "K01", "accept", "log.roll.ms", default("    log.roll.ms: 1\n"), VC),
    k("jitter-negative", "K02", "reject", "log.roll.jitter.ms", default("    log.roll.jitter.ms: -1   #<-\n"), VC,
      "greater than or equal to 0"),
    k("retention-zero", "K03", "reject", "log.retention.ms", default("    log.retention.ms: 0   #<-\n"), VC,
      "unlimited (-1)"),
    k("retention-unlimited", "K03", "accept", "log.retention.ms", default("    log.retention.ms: -1\n"), VC),
    # KafkaConfig.logRetentionTimeMillis maps every negative value to -1 (unlimited)
    k("retention-other-negative", "K03", "accept", "log.retention.ms", default("    log.retention.ms: -5\n"), VC),
    # --- K04-K05: log cleaner -----------------------------------------------------------------------------
    k("cleaner-threads-zero", "K04", "reject", "log.cleaner.threads", default("    log.cleaner.threads: 0   #<-\n"),
      "LogCleaner.validateReconfiguration", "at least 1"),
    k("dedupe-exactly-1mib-per-thread", "K05", "reject", "log.cleaner.dedupe.buffer.size",
      default("    log.cleaner.threads: 4\n    log.cleaner.dedupe.buffer.size: 4194304   #<-\n"), VC,
      "at least 1MB per cleaner thread"),
    k("dedupe-2mib-per-thread", "K05", "accept", "log.cleaner.dedupe.buffer.size",
      default("    log.cleaner.threads: 4\n    log.cleaner.dedupe.buffer.size: 8388608\n"), VC),
    k("dedupe-threads-from-static", "K05", "reject", "log.cleaner.dedupe.buffer.size",
      default("    log.cleaner.dedupe.buffer.size: 16777216   #<-\n", static=True), VC, "per cleaner thread",
      static="log.cleaner.threads=16\n"),
    k("dedupe-threads-assumed", "K05", "warn", "log.cleaner.dedupe.buffer.size",
      default("    log.cleaner.dedupe.buffer.size: 1048576   #<-\n"), VC, "assuming Kafka's default"),
    # --- K06-K07: per-IP connection limits ------------------------------------------------------------------
    k("per-ip-zero-alone", "K06", "reject", "max.connections.per.ip",
      default("    max.connections.per.ip: 0   #<-\n", static=True), VC, "can be set to zero only if",
      static="max.connections.per.ip.overrides=\n"),
    # overrides set nowhere the manifests show may be in the real server.properties: Kafka decides
    k("per-ip-zero-overrides-unknown", "K06", "warn", "max.connections.per.ip",
      default("    max.connections.per.ip: 0   #<-\n"), VC, "assuming Kafka's default"),
    k("per-ip-zero-with-overrides", "K06", "accept", "max.connections.per.ip",
      default('    max.connections.per.ip: 0\n    max.connections.per.ip.overrides: "10.0.0.1:100"\n'), VC),
    k("overrides-no-count", "K07", "reject", "max.connections.per.ip.overrides",
      default('    max.connections.per.ip.overrides: "10.0.0.1"   #<-\n'), "Csv.parseCsvMap", "host:count"),
    k("overrides-count-not-number", "K07", "reject", "max.connections.per.ip.overrides",
      default('    max.connections.per.ip.overrides: "10.0.0.1:many"   #<-\n'),
      "KafkaConfig.maxConnectionsPerIpOverrides", "not a number"),
    k("overrides-bad-host", "K07", "reject", "max.connections.per.ip.overrides",
      default('    max.connections.per.ip.overrides: "bad host!:5"   #<-\n'), "Utils.validHostPattern",
      "invalid addresses"),
    k("overrides-ipv6-and-names", "K07", "accept", "max.connections.per.ip.overrides",
      default('    max.connections.per.ip.overrides: "::1:100, broker-a.example.com:10"\n'), "Csv.parseCsvMap"),
    # --- K08: connection quotas of every listener -----------------------------------------------------------
    k("max-connections-zero", "K08", "reject", "max.connections", default("    max.connections: 0   #<-\n"),
      "ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration", "Invalid max.connections 0"),
    k("creation-rate-zero", "K08", "reject", "max.connection.creation.rate",
      default("    max.connection.creation.rate: 0   #<-\n"),
      "ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration", "Invalid max.connection.creation.rate"),
    k("listener-max-connections-zero", "K08", "reject", "listener.name.internal.max.connections",
      listeners(configs="  listenerConfigs:\n    INTERNAL:\n      max.connections: 0   #<-\n"),
      "ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration", "Invalid max.connections 0",
      path=LISTENERS),
    k("listener-max-connections-one", "K08", "accept", "listener.name.internal.max.connections",
      listeners(configs="  listenerConfigs:\n    INTERNAL:\n      max.connections: 1\n"),
      "ConnectionQuotas.ListenerConnectionQuota.validateReconfiguration", path=LISTENERS),
    # --- K09: replica fetcher threads ----------------------------------------------------------------------
    k("replica-fetchers-zero", "K09", "reject", "num.replica.fetchers", default("    num.replica.fetchers: 0   #<-\n"),
      "DynamicThreadPool.validateReconfiguration", "at least 1"),
    # --- K10-K11: local retention within total retention (DynamicLogConfig, 3.6+) -----------------------
    k("local-ms-above-total", "K10", "reject", "log.local.retention.ms",
      default("    log.retention.ms: 3600000\n    log.local.retention.ms: 86400000   #<-\n"),
      "DynamicLogConfig.validateReconfiguration", "must not be more than log.retention.ms"),
    k("local-ms-unlimited-under-limit", "K10", "reject", "log.local.retention.ms",
      default("    log.retention.ms: 3600000\n    log.local.retention.ms: -1   #<-\n"),
      "DynamicLogConfig.validateReconfiguration", "must not be -1"),
    k("local-ms-same-as-total", "K10", "accept", "log.local.retention.ms",
      default("    log.retention.ms: 3600000\n    log.local.retention.ms: -2\n"),
      "DynamicLogConfig.validateReconfiguration"),
    k("local-ms-within-total", "K10", "accept", "log.local.retention.ms",
      default("    log.retention.ms: 86400000\n    log.local.retention.ms: 3600000\n"),
      "DynamicLogConfig.validateReconfiguration"),
    k("local-bytes-above-total", "K11", "reject", "log.local.retention.bytes",
      default("    log.retention.bytes: 1000\n    log.local.retention.bytes: 2000   #<-\n"),
      "DynamicLogConfig.validateReconfiguration", "must not be more than log.retention.bytes"),
    k("local-bytes-total-unlimited", "K11", "accept", "log.local.retention.bytes",
      default("    log.retention.bytes: -1\n    log.local.retention.bytes: 2000\n"),
      "DynamicLogConfig.validateReconfiguration"),
    # --- K12-K14: tiered storage on topics (LogConfig.validateTopicLogConfigValues) ---------------------------
    k("remote-compacted", "K12", "reject", "cleanup.policy",
      topics("    t: {partitions: 1, config: {remote.storage.enable: true, cleanup.policy: compact}}   #<-\n"),
      "LogConfig.validateNoRemoteStorageForCompactedTopic", "unsupported for the compacted topics", version="3.9"),
    k("remote-local-above-total", "K13", "reject", "local.retention.ms",
      topics("    t: {partitions: 1, config: {remote.storage.enable: true, retention.ms: 3600000, "
             "local.retention.ms: 86400000}}   #<-\n"),
      "LogConfig.validateRemoteStorageRetentionTime", "must not be more than retention.ms", version="3.9"),
    k("remote-local-within", "K13", "warn", "remote.storage.enable",
      topics("    t: {partitions: 1, config: {remote.storage.enable: true, retention.ms: 86400000, "
             "local.retention.ms: 3600000}}\n"),
      "LogConfig.validateRemoteStorageOnlyIfSystemEnabled", "remote.log.storage.system.enable", version="3.9"),
    k("remote-system-disabled", "K14", "reject", "remote.storage.enable",
      default("    num.io.threads: 8\n", static=True) + "---\n"
      + topics("    t: {partitions: 1, config: {remote.storage.enable: true}}   #<-\n"),
      "LogConfig.validateRemoteStorageOnlyIfSystemEnabled", "Tiered Storage functionality is disabled",
      version="3.9", static="remote.log.storage.system.enable=false\n"),
    k("remote-system-not-declared", "K14", "warn", "remote.storage.enable",
      default("    num.io.threads: 8\n", static=True) + "---\n"
      + topics("    t: {partitions: 1, config: {remote.storage.enable: true}}   #<-\n"),
      "LogConfig.validateRemoteStorageOnlyIfSystemEnabled", "Kafka's default false is assumed",
      version="3.9", static="log.dirs=/k\n"),
    k("remote-system-enabled", "K14", "accept", "remote.storage.enable",
      default("    num.io.threads: 8\n", static=True) + "---\n"
      + topics("    t: {partitions: 1, config: {remote.storage.enable: true}}\n"),
      "LogConfig.validateRemoteStorageOnlyIfSystemEnabled", version="3.9",
      static="remote.log.storage.system.enable=true\n"),
    # --- K15-K16: topic configs AdminZkClient refuses -----------------------------------------------------
    k("compaction-lags-crossed", "K15", "reject", "min.compaction.lag.ms",
      topics("    t: {partitions: 1, config: {min.compaction.lag.ms: 10, max.compaction.lag.ms: 5}}   #<-\n"),
      "LogConfig.validateValues", "conflict topic config setting"),
    k("remote-copy-disable-in-zk", "K16", "reject", "remote.log.copy.disable",
      topics("    t: {partitions: 1, config: {remote.log.copy.disable: true}}   #<-\n"),
      "LogConfig.validateNoInvalidRemoteStorageConfigsInZK", "ZooKeeper mode", version="3.9"),
    # --- K17-K19: quota entities (AdminZkClient / DynamicConfig) -------------------------------------------
    k("ip-cidr", "K17", "reject", "10.0.0.0/24",
      quotas('  ips:\n    "10.0.0.0/24": {connection_creation_rate: 5}   #<-\n'),
      "DynamicConfig.Ip.isValidIpEntity", "not a valid IP or resolvable host"),
    k("ip-bad-octet", "K17", "reject", "10.0.0.300",
      quotas('  ips:\n    "10.0.0.300": {connection_creation_rate: 5}   #<-\n'),
      "DynamicConfig.Ip.isValidIpEntity", "not a valid IP"),
    k("ip-v6", "K17", "accept", "2001:db8::1",
      quotas('  ips:\n    "2001:db8::1": {connection_creation_rate: 5}\n'), "DynamicConfig.Ip.isValidIpEntity"),
    k("ip-host-name", "K17", "warn", "gw.example.com",
      quotas('  ips:\n    "gw.example.com": {connection_creation_rate: 5}   #<-\n'),
      "DynamicConfig.Ip.isValidIpEntity (InetAddress.getByName resolves it)", "resolves"),
    k("user-principal-prefix", "K18", "reject", "User:alice",
      quotas('  users:\n    "User:alice": {producer_byte_rate: 1024}   #<-\n'),
      "ClientQuotaManager (KafkaPrincipal.getName)", "without its type"),
    k("user-bare-name", "K18", "accept", "alice", quotas('  users:\n    alice: {producer_byte_rate: 1024}\n'),
      "ClientQuotaManager (KafkaPrincipal.getName)"),
    k("long-quota-fraction", "K19", "reject", "producer_byte_rate",
      quotas("  clients:\n    app: {producer_byte_rate: 1024.5}   #<-\n"), "DynamicConfig.Client.validate",
      "whole numbers"),
    # --- K20-K21: listeners (CoreUtils.listenerListToEndPoints, SecurityProtocol.forName) -------------------
    k("same-port-before-kip797", "K20", "reject", "listeners",
      listeners('    "1": {listeners: ["INTERNAL://10.0.0.1:9092", "EXTERNAL://[::1]:9092"]}\n'),
      "CoreUtils.listenerListToEndPoints", "different port", version="3.5", path=LISTENERS),
    k("same-port-ipv4-ipv6", "K20", "accept", "listeners",
      listeners('    "1": {listeners: ["INTERNAL://10.0.0.1:9092", "EXTERNAL://[::1]:9092"]}\n'),
      "CoreUtils.listenerListToEndPoints (KIP-797)", version="3.6", path=LISTENERS),
    k("same-port-two-ipv4", "K20", "reject", "listeners",
      listeners('    "1": {listeners: ["INTERNAL://10.0.0.1:9092", "EXTERNAL://10.0.0.2:9092"]}\n'),
      "CoreUtils.listenerListToEndPoints (KIP-797)", "IPv4 address and the other an IPv6", path=LISTENERS),
    k("same-port-host-names", "K20", "reject", "listeners",
      listeners('    "1": {listeners: ["INTERNAL://a:9092", "EXTERNAL://b:9092"]}\n'),
      "CoreUtils.listenerListToEndPoints", "different port", path=LISTENERS),
    k("protocol-lower-case", "K21", "accept", "EXTERNAL",
      listeners(proto="{INTERNAL: plaintext, EXTERNAL: Sasl_Ssl}"), "SecurityProtocol.forName", path=LISTENERS),
    k("protocol-unknown", "K21", "reject", "EXTERNAL",
      listeners(proto="{INTERNAL: PLAINTEXT, EXTERNAL: TLS}   #<-"), "KafkaConfig.getSecurityProtocol",
      "a security protocol", path=LISTENERS),
    # --- K22-K25: listener cross-checks of KafkaConfig.validateValues -----------------------------------
    k("advertised-meta-address", "K22", "reject", "advertised",
      listeners('    "1": {listeners: ["INTERNAL://:9092"], advertised: ["INTERNAL://0.0.0.0:9092"]}\n'),
      VC, "non-routable meta-address", path=LISTENERS),
    k("advertised-not-listener", "K23", "reject", "advertised",
      listeners('    "1": {listeners: ["INTERNAL://:9092"], advertised: ["INTERNAL://a:9092", "EXTERNAL://a:9094"]}\n'),
      VC, "subset of listeners", path=LISTENERS),
    k("inter-broker-not-advertised", "K24", "reject", "interBrokerListener",
      listeners('    "1": {listeners: ["EXTERNAL://:9094"]}\n'), VC, "inter-broker listener", path=LISTENERS),
    k("listener-without-protocol", "K25", "reject", "securityProtocolMap",
      listeners('    "1": {listeners: ["INTERNAL://:9092", "OTHER://:9095"]}\n'),
      "KafkaConfig.effectiveListenerSecurityProtocolMap", "no security protocol defined for listener OTHER",
      path=LISTENERS),
    # --- K26-K29: DynamicBrokerConfig.validateConfigs (what ConfigCommand and the Admin API refuse) ---------
    k("read-only-key", "K26", "reject", "log.dirs", default("    log.dirs: /data   #<-\n"),
      "DynamicBrokerConfig.validateConfigs", "read-only"),
    k("bare-security-key", "K27", "reject", "ssl.keystore.location",
      default("    ssl.keystore.location: /k.jks   #<-\n"), "DynamicBrokerConfig.validateConfigs",
      "only per listener"),
    k("type-and-range", "K28", "reject", "num.io.threads", default("    num.io.threads: 0   #<-\n"),
      "DynamicConfig.Broker.validate (ConfigDef)", "at least 1"),
    k("per-broker-at-default", "K29", "reject", "listeners", default('    listeners: "A://:9092"   #<-\n'),
      "DynamicBrokerConfig.validateConfigs", "per-broker config"),
    # --- K30: ACL resource names as ZkAclStore's znode names (ZooKeeper refuses them: PathUtils.validatePath) ---
    k("acl-name-dot-dot", "K30", "reject", "name", acls('{type: Group, name: "..", entries: ['
      '{principal: "User:bob", operation: Read}]}   #<-'), "ZkAclStore.path", "relative paths not allowed"),
    k("acl-name-slash", "K30", "reject", "name", acls('{type: Topic, name: "a/b", pattern: PREFIXED, entries: ['
      '{principal: "User:bob", operation: Read}]}   #<-'), "ZkAclStore.path", "never settle"),
    k("acl-name-dots-inside", "K30", "accept", "name", acls('{type: Group, name: "a..b", entries: ['
      '{principal: "User:bob", operation: Read}]}'), "ZkAclStore.path"),
    # --- K31: explicit replicas, as an assignment (validateTopicCreate) and a reassignment JSON (brokers 1, 2) ----
    k("replicas-gap", "K31", "reject", "replicas", topics('    o: {replicas: {"0": [1], "2": [2]}}   #<-\n'),
      "AdminZkClient.validateTopicCreate", "consecutive 0-based integer sequence"),
    k("replicas-twice", "K31", "reject", "replicas", topics('    o: {replicas: {"0": [2, 2]}}   #<-\n'),
      "ReassignPartitionsCommand.parseExecuteAssignmentArgs", "may not contain duplicate entries"),
    k("replicas-unknown", "K31", "reject", "replicas", topics('    o: {replicas: {"0": [1, 3]}}   #<-\n'),
      "ReassignPartitionsCommand.verifyBrokerIds", "Unknown broker id 3"),
    k("replicas-valid", "K31", "accept", "replicas", topics('    o: {partitions: 2, replicationFactor: 2, '
      'replicas: {"0": [1, 2], "1": [2, 1]}}\n'), "AdminZkClient.validateTopicCreate"),
]
