"""Bad-manifest cases: each names the files to add/replace in a valid base repository, the key the error
must name and a phrase of its message. The line that must be reported carries a trailing `#<-` marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BASE: dict[str, str] = {
    "clusters/c1/cluster.yaml": """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1, labels: {env: prod}}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:2181/c1"}
  passwordEncoder: {secret: {env: C1_ENCODER_SECRET}}
  brokers: [1, 2, 3]
""",
    "clusters/c1/listeners.yaml": """\
apiVersion: reconciler/v1
kind: Listeners
meta: {}
spec:
  securityProtocolMap: {INTERNAL: PLAINTEXT, EXTERNAL: SASL_SSL}
  interBrokerListener: INTERNAL
  brokers:
    "1": {listeners: ["INTERNAL://:9092", "EXTERNAL://:9094"]}
  listenerConfigs:
    EXTERNAL:
      ssl.keystore.password: {secret: {env: EXT_KS}}
""",
}


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str]
    key: str | None
    phrase: str
    line: int | None = None  # when the marker cannot be used (binary files)
    extra: dict[str, str] = field(default_factory=dict)


def doc(kind: str, body: str, meta: str = "{}") -> str:
    return f"apiVersion: reconciler/v1\nkind: {kind}\nmeta: {meta}\nspec:\n{body}"


def case(id: str, body: str, key: str | None, phrase: str, *, path: str = "clusters/c1/case.yaml") -> Case:
    return Case(id, {path: body}, key, phrase)


def broker(config: str, broker_id: str = "default") -> str:
    return doc("BrokerConfig", f"  config:\n{config}", f"{{broker: {broker_id}}}")


def topics(body: str) -> str:
    return doc("Topics", f"  topics:\n{body}")


def quotas(body: str) -> str:
    return doc("Quotas", body)


def listeners(brokers: str, extra: str = "", proto: str = "{INTERNAL: PLAINTEXT, EXTERNAL: SASL_SSL}") -> str:
    return doc(
        "Listeners",
        f"  securityProtocolMap: {proto}\n  interBrokerListener: INTERNAL\n  brokers:\n{brokers}{extra}",
    )


LISTENERS = "clusters/c1/listeners.yaml"
CLUSTER = "clusters/c1/cluster.yaml"

CASES: list[Case] = [
    # --- strict YAML -----------------------------------------------------------------------------------
    case("yaml-duplicate-key", broker("    num.io.threads: 8\n    num.io.threads: 9   #<-\n"), "num.io.threads", "duplicate"),
    case("yaml-anchor", broker("    num.io.threads: &n 8   #<-\n    background.threads: *n\n"), "num.io.threads", "anchor"),
    case("yaml-merge-key", broker("    base: &b {num.io.threads: 8}\n    <<: *b   #<-\n"), "<<", "merge"),
    case("yaml-syntax", broker("    num.io.threads: [8\n    background.threads: 4   #<-\n"), None, ""),
    case("yaml-tab-indent", "apiVersion: reconciler/v1\nkind: Quotas\nmeta: {}\nspec:\n\tclients: {}   #<-\n", None, "tab"),
    case("yaml-indent-between-levels",  # the wrong line, and what to line it up with
         topics("    a:\n      partitions: 3\n     replicationFactor: 2   #<-\n"), None, "must line up with the keys"),
    case("yaml-indent-too-deep", topics("    a:\n      partitions: 3\n        replicationFactor: 2   #<-\n"), None,
         "indented deeper than the key above it"),
    case("yaml-complex-key", broker("    ? [a, b]   #<-\n    : 1\n"), None, "key"),
    case("yaml-null-key", broker("    ~: 1   #<-\n"), None, "key"),
    # --- JSON Schema -----------------------------------------------------------------------------------
    case("schema-unknown-field", doc("BrokerConfig", "  config: {}\n  extra: 1   #<-\n", "{broker: default}"),
         "extra", "unknown field"),
    case("schema-api-version", "apiVersion: reconciler/v2   #<-\nkind: Quotas\nmeta: {}\nspec: {}\n", "apiVersion",
         "reconciler/v1"),
    case("schema-unknown-kind", "apiVersion: reconciler/v1\nkind: Topic   #<-\nmeta: {}\nspec: {}\n", "kind", "Topics"),
    case("schema-missing-config",
         "apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:   #<-\n"
         "  static: {file: x.properties}\n", "config", "missing required field"),
    case("schema-partitions-string", topics("    orders: {partitions: \"12\"}   #<-\n"), "partitions", "integer"),
    case("schema-quota-not-number", quotas("  clients:\n    app: {producer_byte_rate: fast}   #<-\n"),
         "producer_byte_rate", ""),
    case("schema-secret-two-sources",
         listeners('    "1": {listeners: ["INTERNAL://:9092"]}\n',
                   "  listenerConfigs:\n    INTERNAL:\n      ssl.key.password: {secret: {env: A, file: b}}   #<-\n"),
         "secret", "exactly one", path=LISTENERS),
    case("schema-bad-protocol", listeners('    "1": {listeners: ["INTERNAL://:9092"]}\n',
                                          proto="{INTERNAL: PLAINTEXT, EXTERNAL: TLS}   #<-"),
         "EXTERNAL", "", path=LISTENERS),
    case("schema-broker-id-text", doc("BrokerConfig", "  config: {}\n", "{broker: first}   #<-"), "broker", ""),
    case("schema-kafka-version-number",
         BASE[CLUSTER].replace('kafkaVersion: "3.6"', "kafkaVersion: 3.6   #<-"), "kafkaVersion", "quote",
         path=CLUSTER),
    case("schema-brokers-missing", BASE[CLUSTER].replace("  brokers: [1, 2, 3]\n", "").replace(
        "spec:\n", "spec:   #<-\n"), "brokers", "brokers", path=CLUSTER),
    # --- structure -------------------------------------------------------------------------------------
    case("meta-cluster-mismatch", doc("Quotas", "  clients: {}\n", "{cluster: c2}   #<-"), "cluster", "c1"),
    case("cluster-doc-elsewhere", BASE[CLUSTER].replace("kind: Cluster", "kind: Cluster   #<-"), "kind",
         "cluster.yaml"),
    case("cluster-name-mismatch", BASE[CLUSTER].replace("meta: {name: c1,", "meta: {name: c9,   #<-\n       "),
         "name", "directory", path=CLUSTER),
    case("broker-default-twice",
         broker("    num.io.threads: 8\n") + "---\n" + doc("BrokerConfig", "  config: {}\n", "{broker: default}   #<-"),
         "brokers/<default>", "declared twice"),
    case("topic-twice", topics("    orders: {}\n") + "---\n" + topics("    orders: {}   #<-\n"), "orders",
         "declared twice"),
    case("null-not-inherited", broker("    num.io.threads: null   #<-\n", "1"), "num.io.threads", "inherit"),
    case("null-topic-not-inherited", topics("    orders: {config: {retention.ms: null}}   #<-\n"), "retention.ms",
         "inherit"),
    case("fleet-conflict",
         doc("FleetDefaults", "  selector: {labels: {env: prod}}\n  brokerDefaults: {num.io.threads: 8}\n",
             "{name: a}") + "---\n"
         + doc("FleetDefaults", "  selector: {labels: {}}\n  brokerDefaults:\n    num.io.threads: 9   #<-\n",
               "{name: b}"),
         "num.io.threads", "different values", path="clusters/fleet.yaml"),
    case("listener-key-twice", broker("    listeners: INTERNAL://:9092   #<-\n", "1"), "listeners",
         "Listeners document"),
    # --- broker configs --------------------------------------------------------------------------------
    case("broker-unknown-did-you-mean", broker("    num.io.thread: 8   #<-\n"), "num.io.thread", "num.io.threads"),
    case("broker-topic-key", broker("    retention.ms: 1000   #<-\n"), "retention.ms", "log.retention.ms"),
    case("broker-read-only-synonym", broker("    log.retention.hours: 168   #<-\n"), "log.retention.hours",
         "log.retention.ms"),
    case("broker-read-only", broker("    auto.create.topics.enable: false   #<-\n"), "auto.create.topics.enable",
         "read-only"),
    case("broker-read-only-restart", broker("    log.dirs: /data   #<-\n", "1"), "log.dirs", "restart"),
    case("broker-per-broker-at-default", broker("    sasl.enabled.mechanisms: PLAIN   #<-\n"),
         "sasl.enabled.mechanisms", "per-broker"),
    case("broker-bare-ssl", broker("    ssl.keystore.location: /k.jks   #<-\n", "1"), "ssl.keystore.location",
         "listener"),
    case("broker-int-not-number", broker("    num.io.threads: many   #<-\n"), "num.io.threads", "INT"),
    case("broker-int-range", broker("    num.io.threads: 0   #<-\n"), "num.io.threads", "at least 1"),
    case("broker-bool-yes", broker("    unclean.leader.election.enable: yes   #<-\n"),
         "unclean.leader.election.enable", "true or false"),
    case("broker-enum", broker("    compression.type: brotli   #<-\n"), "compression.type", "brotli"),
    case("broker-list-enum", broker("    log.cleanup.policy: [compact, forever]   #<-\n"), "log.cleanup.policy",
         "forever"),
    case("broker-version-gated", broker("    compression.gzip.level: 5   #<-\n"), "compression.gzip.level", "3.8"),
    case("broker-int-overflow", broker("    message.max.bytes: 3000000000   #<-\n"), "message.max.bytes", "INT"),
    case("broker-float-for-int", broker("    background.threads: 2.5   #<-\n"), "background.threads", "INT"),
    case("broker-double-bad", broker("    log.cleaner.io.buffer.load.factor: lots   #<-\n"),
         "log.cleaner.io.buffer.load.factor", "DOUBLE"),
    case("broker-throttle-negative", broker("    leader.replication.throttled.rate: -5   #<-\n"),
         "leader.replication.throttled.rate", "at least 0"),
    # --- topic configs ---------------------------------------------------------------------------------
    case("topic-unknown", topics("    orders: {config: {retention.msec: 1}}   #<-\n"), "retention.msec", "retention.ms"),
    case("topic-broker-key", topics("    orders: {config: {log.retention.ms: 1}}   #<-\n"), "log.retention.ms",
         "retention.ms"),
    case("topic-min-isr-zero", topics("    orders: {config: {min.insync.replicas: 0}}   #<-\n"),
         "min.insync.replicas", "at least 1"),
    case("topic-segment-bytes", topics("    orders: {config: {segment.bytes: 10}}   #<-\n"), "segment.bytes",
         "at least 14"),
    case("topic-cleanup-enum", topics("    orders: {config: {cleanup.policy: forever}}   #<-\n"), "cleanup.policy",
         "forever"),
    case("topic-timestamp-type", topics("    orders: {config: {message.timestamp.type: WallClock}}   #<-\n"),
         "message.timestamp.type", "CreateTime"),
    case("topic-long-overflow", topics("    orders: {config: {retention.ms: 99999999999999999999}}   #<-\n"),
         "retention.ms", "LONG"),
    case("topic-ratio-range", topics("    orders: {config: {min.cleanable.dirty.ratio: 1.5}}   #<-\n"),
         "min.cleanable.dirty.ratio", "1"),
    case("topic-compaction-lag",
         topics("    orders:\n      config:\n        min.compaction.lag.ms: 10   #<-\n        max.compaction.lag.ms: 5\n"),
         "min.compaction.lag.ms", "max.compaction.lag.ms"),
    case("topic-version-gated", topics("    orders: {config: {compression.zstd.level: 5}}   #<-\n"),
         "compression.zstd.level", "3.8"),
    case("topic-secret-ref", topics("    orders: {config: {retention.ms: {secret: {env: X}}}}   #<-\n"),
         "retention.ms", "not a password"),
    # --- secrets ---------------------------------------------------------------------------------------
    case("secret-plaintext",
         listeners('    "1": {listeners: ["INTERNAL://:9092"]}\n',
                   "  listenerConfigs:\n    INTERNAL:\n      ssl.key.password: hunter2   #<-\n"),
         "listener.name.internal.ssl.key.password", "plaintext", path=LISTENERS),
    case("secret-at-default", broker("    listener.name.internal.ssl.key.password: {secret: {env: K}}   #<-\n"),
         "listener.name.internal.ssl.key.password", "only per broker"),
    case("secret-on-plain-key", broker("    num.io.threads: {secret: {env: N}}   #<-\n"), "num.io.threads",
         "not a password"),
    case("secret-sealed-gcm-on-cbc",
         broker("    listener.name.internal.ssl.key.password: {encoded: \"cipherAlgorithm:AES/GCM/NoPadding,"
                "keyLength:128\"}   #<-\n", "1"),
         "listener.name.internal.ssl.key.password", "CBC and GCM"),
    case("secret-no-encoder", BASE[CLUSTER].replace(
        "  passwordEncoder: {secret: {env: C1_ENCODER_SECRET}}\n", "").replace("apiVersion: reconciler/v1",
                                                                              "apiVersion: reconciler/v1   #<-"),
         "passwordEncoder", "passwordEncoder", path=CLUSTER),
    # --- listeners -------------------------------------------------------------------------------------
    case("listener-bad-endpoint", listeners('    "1": {listeners: ["INTERNAL:9092"]}   #<-\n'), "listeners",
         "endpoint", path=LISTENERS),
    case("listener-duplicate-name",
         listeners('    "1": {listeners: ["INTERNAL://:9092", "INTERNAL://:9093"]}   #<-\n'), "listeners",
         "different name", path=LISTENERS),
    case("listener-duplicate-port",
         listeners('    "1": {listeners: ["INTERNAL://:9092", "EXTERNAL://:9092"]}   #<-\n'), "listeners",
         "different port", path=LISTENERS),
    case("listener-no-protocol", listeners('    "1": {listeners: ["INTERNAL://:9092", "OTHER://:9095"]}   #<-\n'),
         "securityProtocolMap", "OTHER", path=LISTENERS),
    case("listener-advertised-not-subset",
         listeners('    "1": {listeners: ["INTERNAL://:9092"], advertised: ["INTERNAL://h:9092", '
                   '"EXTERNAL://h:9094"]}   #<-\n'), "advertised", "subset", path=LISTENERS),
    case("listener-advertised-wildcard",
         listeners('    "1": {listeners: ["INTERNAL://:9092"], advertised: ["INTERNAL://0.0.0.0:9092"]}   #<-\n'),
         "advertised", "0.0.0.0", path=LISTENERS),
    case("listener-inter-broker-missing",  # at the `interBrokerListener:` line, what the broker cannot drop
         listeners('    "1": {listeners: ["EXTERNAL://:9094"]}\n').replace(
             "interBrokerListener: INTERNAL", "interBrokerListener: INTERNAL   #<-"),
         "interBrokerListener", "INTERNAL", path=LISTENERS),
    case("listener-entry-unparsable",  # at the entry itself, not the broker or the document
         listeners('    "1":\n      listeners:\n        - "INTERNAL://:9092"\n        - "BROKEN"   #<-\n'),
         "listeners", "unable to parse", path=LISTENERS),
    case("listener-duplicate-name-second",
         listeners('    "1":\n      listeners:\n        - "INTERNAL://:9092"\n        - "INTERNAL://:9093"   #<-\n'),
         "listeners", "different name", path=LISTENERS),
    case("topic-rf-line", topics("    t:\n      partitions: 3\n      replicationFactor: 9   #<-\n"),
         "replicationFactor", "larger than the cluster"),
    case("topic-partitions-line", topics("    t:\n      partitions: 0   #<-\n"), "partitions", "at least 1"),
    case("schema-error-does-not-hide-rules",  # the bad topic `a` is reported, and `b`'s Kafka-rule error too
         topics('    a: {partitions: "x"}\n    b:\n      partitions: 1\n      config:\n'
                "        min.compaction.lag.ms: 10   #<-\n        max.compaction.lag.ms: 5\n"),
         "min.compaction.lag.ms", "conflict"),
    case("listener-prefix-unknown", broker("    listener.name.other.ssl.key.password: {secret: {env: K}}   #<-\n",
                                           "1"),
         "listener.name.other.ssl.key.password", "other"),
    case("listener-broker-not-in-cluster", listeners('    "7": {listeners: ["INTERNAL://:9092"]}   #<-\n'),
         "broker", "7", path=LISTENERS),
    # --- quotas ----------------------------------------------------------------------------------------
    case("quota-unknown", quotas("  clients:\n    app: {producer_rate: 1}   #<-\n"), "producer_rate",
         "producer_byte_rate"),
    case("quota-long-fraction", quotas("  clients:\n    app: {producer_byte_rate: 1024.5}   #<-\n"),
         "producer_byte_rate", "whole numbers"),
    case("quota-long-float-form", quotas("  users:\n    bob: {consumer_byte_rate: \"1024.0\"}   #<-\n"),
         "consumer_byte_rate", "LONG"),
    case("quota-scram", quotas("  users:\n    bob: {SCRAM-SHA-512: \"salt=x\"}   #<-\n"), "SCRAM-SHA-512", "SCRAM"),
    case("quota-ip-key-on-client", quotas("  clients:\n    app: {connection_creation_rate: 5}   #<-\n"),
         "connection_creation_rate", "unknown quota"),
    case("quota-percentage-text", quotas("  users:\n    bob: {request_percentage: \"half\"}   #<-\n"),
         "request_percentage", "number"),
    case("quota-ip-rate-fraction", quotas("  ips:\n    default: {connection_creation_rate: 2.5}   #<-\n"),
         "connection_creation_rate", "INT"),
    # --- topics ----------------------------------------------------------------------------------------
    case("topic-name-space", topics('    "my topic": {}   #<-\n'), "my topic", "letters"),
    case("topic-name-unicode", topics('    "zählung": {}   #<-\n'), "zählung", "letters"),
    case("topic-name-dot", topics('    ".": {}   #<-\n'), ".", "'.'"),
    case("topic-name-long", topics(f'    "{"t" * 250}": {{}}   #<-\n'), "t" * 250, "249"),
    case("topic-partitions-zero", topics("    orders: {partitions: 0}   #<-\n"), "partitions", ""),
    case("topic-rf-too-big", topics("    orders: {partitions: 1, replicationFactor: 4}   #<-\n"),
         "replicationFactor", "3 broker"),
    case("topic-collision", topics("    a.b: {}\n    a_b: {}   #<-\n"), "a_b", "collides"),
    # --- replica placement (rules/placement.py: Kafka's checks of an assignment and a reassignment JSON) ----
    case("replicas-not-consecutive", topics('    o:\n      replicas:   #<-\n        "0": [1, 2]\n        "2": [2, 3]\n'),
         "replicas", "consecutive 0-based"),
    case("replicas-duplicate-broker", topics('    o: {replicas: {"0": [1, 1]}}   #<-\n'), "replicas",
         "may not contain duplicate entries: o-0 contains multiple entries for 1"),
    case("replicas-unknown-broker", topics('    o: {replicas: {"0": [1, 9]}}   #<-\n'), "replicas", "Unknown broker id 9"),
    case("replicas-uneven", topics('    o: {replicas: {"0": [1, 2], "1": [3]}}   #<-\n'), "replicas",
         "same number of replicas"),
    case("replicas-vs-partitions", topics('    o: {partitions: 3, replicas: {"0": [1], "1": [2]}}   #<-\n'), "replicas",
         "partitions is 3"),
    case("replicas-vs-rf", topics('    o: {replicationFactor: 2, replicas: {"0": [1, 2, 3]}}   #<-\n'), "replicas",
         "replicationFactor is 2"),
    case("placement-unknown", topics("    o: {placement: rackaware}   #<-\n"), "placement", "rackAware"),
    Case("drain-unknown-broker", {"clusters/c1/cluster.yaml": """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1, labels: {env: prod}}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:2181/c1"}
  passwordEncoder: {secret: {env: C1_ENCODER_SECRET}}
  brokers: [1, 2, 3]
  placement:
    drain: [7]   #<-
"""}, "drain", "not one of this cluster's brokers"),
    Case("drain-leaves-too-few", {"clusters/c1/cluster.yaml": """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1, labels: {env: prod}}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:2181/c1"}
  passwordEncoder: {secret: {env: C1_ENCODER_SECRET}}
  brokers: [1, 2, 3]
  placement: {drain: [3]}
""", "clusters/c1/case.yaml": topics("    o: {replicationFactor: 3}   #<-\n")}, "replicationFactor",
         "larger than available brokers: 2"),
    Case("replicas-on-drained", {"clusters/c1/cluster.yaml": """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c1, labels: {env: prod}}
spec:
  kafkaVersion: "3.6"
  zookeeper: {connect: "127.0.0.1:2181/c1"}
  passwordEncoder: {secret: {env: C1_ENCODER_SECRET}}
  brokers: [1, 2, 3]
  placement: {drain: [3]}
""", "clusters/c1/case.yaml": topics('    o: {replicas: {"0": [1, 3]}}   #<-\n')}, "replicas", "drains"),
    # --- broker ids ------------------------------------------------------------------------------------
    case("broker-id-unknown", doc("BrokerConfig", "  config: {num.io.threads: 8}\n", "{broker: 9}   #<-"), "broker",
         "not one of"),
]

