"""What a Kafka 4.x cluster would say, case by case (issue 41): feature levels, ELR and min.insync.replicas, group
configs, client-metrics subscriptions, each a small change to a valid base KRaft cluster, with the verdict its
controllers reach and the Kafka code path that reaches it. `row` is a row of docs/kafka-validation.md's section
"Kafka 4.x entities" (test_kafka4_rules checks every row has cases). A `#<-` marker says where the diagnostic must
point. Verdicts as in tests/unit/kafka_cases.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["reject", "warn", "accept"]
CLUSTER = "clusters/k/cluster.yaml"
CASE = "clusters/k/case.yaml"
BROKERS = "clusters/k/brokers.yaml"


def kraft_cluster(version: str = "4.1") -> str:
    return (f'apiVersion: reconciler/v1\nkind: Cluster\nmeta: {{name: k}}\nspec:\n  kafkaVersion: "{version}"\n'
            '  kraft: {bootstrapServers: "127.0.0.1:9092"}\n  brokers: [1, 2]\n')


def zk_cluster(version: str = "3.9") -> str:
    return (f'apiVersion: reconciler/v1\nkind: Cluster\nmeta: {{name: k}}\nspec:\n  kafkaVersion: "{version}"\n'
            '  zookeeper: {connect: "127.0.0.1:2181/k"}\n  brokers: [1, 2]\n')


def features(body: str) -> str:
    """A Features document with `body` (YAML lines at 4 spaces)."""
    return f"apiVersion: reconciler/v1\nkind: Features\nmeta: {{}}\nspec:\n  features:\n{body}"


def broker(name: str, config: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {{broker: {name}}}\nspec:\n  config:\n{config}"


def groups(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Groups\nmeta: {{}}\nspec:\n  groups:\n{body}"


def quotas(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Quotas\nmeta: {{}}\nspec:\n{body}"


def topics(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: Topics\nmeta: {{}}\nspec:\n  topics:\n{body}"


def client_metrics(body: str) -> str:
    return f"apiVersion: reconciler/v1\nkind: ClientMetrics\nmeta: {{}}\nspec:\n  subscriptions:\n{body}"


@dataclass(frozen=True)
class Kafka4Case:
    id: str
    row: str
    verdict: Verdict
    key: str
    files: dict[str, str]
    kafka: str
    phrase: str = ""
    cluster: str = field(default_factory=kraft_cluster)


ELR_ON = "    eligible.leader.replicas.version: 1\n"
MIN_ISR_DEFAULT = broker("default", "    min.insync.replicas: 2\n")

CASES: list[Kafka4Case] = [
    # F01: features exist in the cluster's line
    Kafka4Case("feature-unknown", "F01", "reject", "group.versoin", {CASE: features("    group.versoin: 1 #<-\n")},
               "Feature.featureFromName", "did you mean group.version"),
    Kafka4Case("feature-newer-line", "F01", "reject", "streams.version",
               {CASE: features("    streams.version: 1 #<-\n")}, "Feature.PRODUCTION_FEATURES (4.1)",
               "needs Kafka 4.1 or later", kraft_cluster("4.0")),
    Kafka4Case("feature-known", "F01", "accept", "group.version", {CASE: features("    group.version: 1\n")},
               "FeatureControlManager.updateFeature"),
    # F02: levels within what the controllers support
    Kafka4Case("mv-name", "F02", "accept", "metadata.version",
               {CASE: features('    metadata.version: "4.1-IV1"\n')}, "MetadataVersion.fromVersionString"),
    Kafka4Case("mv-release", "F02", "accept", "metadata.version", {CASE: features('    metadata.version: "4.0"\n')},
               "MetadataVersion.fromVersionString (release: its latest IV)"),
    Kafka4Case("mv-unknown-name", "F02", "reject", "metadata.version",
               {CASE: features('    metadata.version: "4.3-IV0" #<-\n')}, "MetadataVersion.fromVersionString",
               "is not a level of Kafka 4.1.1"),
    Kafka4Case("mv-below-minimum", "F02", "reject", "metadata.version",
               {CASE: features("    metadata.version: 3\n")}, "MetadataVersion.MINIMUM_VERSION",
               "is below 3.3-IV3 (7)"),
    Kafka4Case("mv-not-production", "F02", "reject", "metadata.version",
               {CASE: features('    metadata.version: "4.2-IV0"\n')}, "QuorumFeatures.reasonNotSupported",
               "is not production-ready in Kafka 4.1.1"),
    Kafka4Case("streams-not-production", "F02", "reject", "streams.version",
               {CASE: features("    streams.version: 1\n")}, "QuorumFeatures.reasonNotSupported",
               "not production-ready"),
    Kafka4Case("group-version-beyond", "F02", "reject", "group.version",
               {CASE: features("    group.version: 7\n")}, "QuorumFeatures.reasonNotSupported",
               "is unknown to Kafka 4.1.1"),
    # F03: dependencies between declared levels
    Kafka4Case("elr-needs-mv", "F03", "reject", "eligible.leader.replicas.version",
               {CASE: features('    metadata.version: "3.9-IV0"\n' + ELR_ON.rstrip("\n") + " #<-\n"),
                BROKERS: MIN_ISR_DEFAULT},
               "Feature.validateVersion (FeatureVersion.dependencies)", "needs metadata.version 4.0-IV1 (23)"),
    Kafka4Case("elr-with-mv", "F03", "accept", "eligible.leader.replicas.version",
               {CASE: features('    metadata.version: "4.1"\n' + ELR_ON), BROKERS: MIN_ISR_DEFAULT},
               "Feature.validateVersion"),
    # F04: feature levels are KRaft state
    Kafka4Case("features-zookeeper", "F04", "reject", "group.version", {CASE: features("    group.version: 1\n")},
               "ZooKeeper mode has no finalized metadata.version", "KRaft clusters", zk_cluster()),
    # F05: ELR needs one cluster-level min.insync.replicas and no broker-level one
    Kafka4Case("elr-without-cluster-min-isr", "F05", "reject", "min.insync.replicas", {CASE: features(ELR_ON)},
               "ConfigurationControlManager.isDisallowedClusterMinIsrTransition",
               "declare min.insync.replicas in brokers/<default>"),
    Kafka4Case("elr-default-without-min-isr", "F05", "reject", "min.insync.replicas",
               {CASE: features(ELR_ON), BROKERS: broker("default", "    num.io.threads: 8\n")},
               "ConfigurationControlManager.isDisallowedClusterMinIsrTransition",
               "Cluster-level min.insync.replicas cannot be removed while ELR is enabled"),
    Kafka4Case("elr-broker-level-min-isr", "F05", "reject", "min.insync.replicas",
               {CASE: features(ELR_ON), BROKERS: MIN_ISR_DEFAULT + "---\n"
                + broker("1", "    min.insync.replicas: 1 #<-\n")},
               "ConfigurationControlManager.isDisallowedBrokerMinIsrTransition",
               "Broker-level min.insync.replicas cannot be altered while ELR is enabled"),
    Kafka4Case("elr-cluster-level", "F05", "accept", "min.insync.replicas",
               {CASE: features(ELR_ON), BROKERS: MIN_ISR_DEFAULT}, "ConfigurationControlManager"),
    Kafka4Case("elr-disabled-broker-level", "F05", "accept", "min.insync.replicas",
               {CASE: features("    eligible.leader.replicas.version: 0\n"),
                BROKERS: broker("1", "    min.insync.replicas: 1\n")}, "ConfigurationControlManager (ELR off)"),
    # A01-A06 (A03 is plan-time, S01): found by the validation corpus (tests/integration/test_validation_corpus.py)
    Kafka4Case("copy-disable-zk-any-case", "A01", "reject", "remote.log.copy.disable",
               {CASE: topics("    t: {config: {remote.log.copy.disable: TRUE}} #<-\n")},
               "LogConfig.validateNoInvalidRemoteStorageConfigsInZK", "in ZooKeeper mode", zk_cluster()),
    Kafka4Case("copy-disable-kraft", "A01", "accept", "remote.log.copy.disable",
               {CASE: topics("    t: {config: {remote.log.copy.disable: true}}\n")},
               "LogConfig (KRaft: no ZooKeeper-mode check)"),
    Kafka4Case("quota-zero-kraft", "A02", "reject", "producer_byte_rate",
               {CASE: quotas("  clients: {app: {producer_byte_rate: 0}} #<-\n")},
               "ClientQuotaControlManager.validateQuotaKeyValue", "must be greater than 0"),
    Kafka4Case("quota-negative-zk", "A02", "reject", "consumer_byte_rate",
               {CASE: quotas("  users: {alice: {consumer_byte_rate: -1}}\n")}, "ZkAdminManager.alterClientQuotas",
               "must be a LONG value", zk_cluster()),
    Kafka4Case("quota-zero-zk", "A02", "accept", "consumer_byte_rate",
               {CASE: quotas("  users: {alice: {consumer_byte_rate: 0}}\n")}, "ZkAdminManager.alterClientQuotas",
               cluster=zk_cluster()),
    Kafka4Case("quota-fraction-kraft", "A02", "accept", "request_percentage",
               {CASE: quotas("  clients: {app: {request_percentage: 0.5}}\n")}, "ClientQuotaControlManager"),
    Kafka4Case("principal-builder-class", "A04", "warn", "principal.builder.class",
               {BROKERS: broker("1", "    principal.builder.class: com.example.Builder #<-\n")},
               "KafkaConfig.getConfiguredInstance", "cannot see their class path"),
    Kafka4Case("listeners-malformed", "A05", "reject", "listeners",
               {BROKERS: broker("1", "    listeners: x #<-\n")}, "CoreUtils.listenerListToEndPoints",
               "unable to parse 'x' to a broker endpoint", zk_cluster()),
    Kafka4Case("protocol-map-malformed", "A05", "reject", "listener.security.protocol.map",
               {BROKERS: broker("1", "    listener.security.protocol.map: x\n")}, "KafkaConfig.getMap",
               "is not LISTENER:PROTOCOL"),
    Kafka4Case("listeners-well-formed", "A05", "warn", "listeners",
               {BROKERS: broker("1", "    listeners: PLAINTEXT://:9092\n")},
               "DynamicListenerConfig.validateReconfiguration", "Declare listeners with the Listeners kind"),
    Kafka4Case("broker-min-isr-4x-undeclared-elr", "A06", "warn", "min.insync.replicas",
               {BROKERS: broker("1", "    min.insync.replicas: 2 #<-\n")},
               "ConfigurationControlManager.isDisallowedBrokerMinIsrTransition", "has ELR enabled"),
    Kafka4Case("broker-min-isr-39-kraft", "A06", "accept", "min.insync.replicas",
               {BROKERS: broker("1", "    min.insync.replicas: 2\n")}, "3.9 has no ELR feature",
               cluster=kraft_cluster("3.9")),
    # G01-G03: group configs (kind Groups)
    Kafka4Case("group-zookeeper", "G01", "reject", "g", {CASE: groups("    g: {consumer.session.timeout.ms: 50000}\n")},
               "ZkAdminManager (no GROUP resources)", "need a KRaft cluster of Kafka 4.0", zk_cluster()),
    Kafka4Case("group-kraft-39", "G01", "reject", "g", {CASE: groups("    g: {consumer.session.timeout.ms: 50000}\n")},
               "ConfigResource.Type.GROUP is new in 4.0", "this cluster runs 3.9", kraft_cluster("3.9")),
    Kafka4Case("group-kraft-41", "G01", "accept", "consumer.session.timeout.ms",
               {CASE: groups("    g: {consumer.session.timeout.ms: 50000, consumer.heartbeat.interval.ms: 6000}\n")},
               "GroupConfig.validate"),
    Kafka4Case("group-unknown-key", "G02", "reject", "consumer.sesion.timeout.ms",
               {CASE: groups("    g: {consumer.sesion.timeout.ms: 50000} #<-\n")}, "GroupConfig.validateNames",
               "did you mean 'consumer.session.timeout.ms'"),
    Kafka4Case("group-streams-on-40", "G02", "reject", "streams.session.timeout.ms",
               {CASE: groups("    g: {streams.session.timeout.ms: 50000}\n")}, "GroupConfig (4.1)",
               "needs Kafka 4.1.0 or later", kraft_cluster("4.0")),
    Kafka4Case("group-offset-reset", "G02", "reject", "share.auto.offset.reset",
               {CASE: groups("    g: {share.auto.offset.reset: EARLIEST}\n")},
               "ShareGroupAutoOffsetResetStrategy.Validator", "The value must be either 'earliest', 'latest'"),
    Kafka4Case("group-session-below-default-bound", "G03", "warn", "consumer.session.timeout.ms",
               {CASE: groups("    g: {consumer.session.timeout.ms: 30000} #<-\n")}, "GroupConfig.validateValues",
               "if the brokers run with Kafka's default group.consumer.min.session.timeout.ms=45000"),
    Kafka4Case("group-session-below-static-bound", "G03", "reject", "consumer.session.timeout.ms",
               {CASE: groups("    g: {consumer.session.timeout.ms: 30000}\n"),
                BROKERS: "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n"
                         "  static: {file: server.properties}\n  config: {}\n",
                "clusters/k/server.properties": "group.consumer.min.session.timeout.ms=40000\n"},
               "GroupConfig.validateValues", "the brokers' server.properties set group.consumer.min.session"),
    Kafka4Case("group-session-not-above-heartbeat", "G03", "reject", "consumer.heartbeat.interval.ms",
               {CASE: groups("    g: {consumer.heartbeat.interval.ms: 50000}\n")}, "GroupConfig.validateValues",
               "consumer.session.timeout.ms 45000 must be greater than consumer.heartbeat.interval.ms 50000"),
    # C01-C02: client-metrics subscriptions (kind ClientMetrics)
    Kafka4Case("metrics-zookeeper", "C01", "reject", "s", {CASE: client_metrics("    s: {interval.ms: 60000}\n")},
               "ZkAdminManager", "AlterConfigs is only supported for topics and brokers", zk_cluster()),
    Kafka4Case("metrics-kraft-36", "C01", "reject", "s", {CASE: client_metrics("    s: {interval.ms: 60000}\n")},
               "KIP-714 (3.7)", "need Kafka 3.7 or later", kraft_cluster("3.6")),
    Kafka4Case("metrics-kraft-37", "C01", "accept", "interval.ms",
               {CASE: client_metrics("    s: {metrics: [org.apache.kafka.producer.], interval.ms: 60000, "
                                     "match: {client_id: \"app-.*\"}}\n")}, "ClientMetricsConfigs.validate",
               cluster=kraft_cluster("3.7")),
    Kafka4Case("metrics-interval", "C02", "reject", "interval.ms",
               {CASE: client_metrics("    s:\n      interval.ms: 99 #<-\n")}, "ClientMetricsConfigs.validate",
               "interval must be between 100 and 3600000"),
    Kafka4Case("metrics-selector", "C02", "reject", "match",
               {CASE: client_metrics("    s: {match: {client_nme: x}}\n")},
               "ClientMetricsConfigs.parseMatchingPatterns", "unknown client selector 'client_nme'"),
    Kafka4Case("metrics-regex", "C02", "reject", "match",
               {CASE: client_metrics("    s: {match: {client_id: \"(\"}}\n")},
               "ClientMetricsConfigs.parseMatchingPatterns (Pattern.compile)", "not a regular expression"),
]
