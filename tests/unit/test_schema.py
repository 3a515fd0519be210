"""JSON Schemas of the manifest kinds, and the messages that point operators at the offending key."""

from __future__ import annotations

import copy
import dataclasses
import json
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from reconciler.errors import Diagnostic
from reconciler.manifests import schema as schema_module
from reconciler.manifests.load import Document, load_text
from reconciler.manifests.schema import KINDS, validate_document
from reconciler.model import SourceRef

# The example repository of SPEC §2, verbatim, plus a FleetDefaults document.
SPEC_EXAMPLE = """\
apiVersion: reconciler/v1
kind: Cluster
meta: {name: prod-eu-1, labels: {env: prod, region: eu-west-1}}
spec:
  kafkaVersion: "3.6"                        # selects the config catalog rules
  zookeeper:
    connect: "zk-1:2181,zk-2:2181/kafka"     # chroot allowed
    auth: {scheme: digest, credentials: {env: PROD_EU_1_ZK_AUTH}}   # optional
  passwordEncoder:                           # required once any sensitive config is managed
    secret: {env: PROD_EU_1_ENCODER_SECRET}  # = password.encoder.secret in server.properties
  brokers: [1, 2, 3]                         # the broker ids this cluster is expected to have
  policy:
    prune: false
    ignoreKeys: []
    maxDeletes: 20
---
apiVersion: reconciler/v1
kind: BrokerConfig            # meta.broker: "default" -> /config/brokers/<default>, or a broker id
meta: {broker: default}
spec:
  config:
    unclean.leader.election.enable: false
    num.io.threads: 16
    log.retention.ms: 604800000
---
apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: 1}
spec:
  static: {file: static/broker-1.properties}
  config:
    log.cleaner.threads: 2
---
apiVersion: reconciler/v1
kind: Listeners
meta: {}
spec:
  securityProtocolMap: {INTERNAL: PLAINTEXT, REPLICATION: SSL, EXTERNAL: SASL_SSL}
  interBrokerListener: REPLICATION
  brokers:
    "1": {listeners: ["INTERNAL://:9092", "REPLICATION://:9093", "EXTERNAL://:9094"],
          advertised: ["INTERNAL://b1.int:9092", "REPLICATION://b1.int:9093", "EXTERNAL://b1.example.com:9094"]}
  listenerConfigs:
    EXTERNAL:
      sasl.enabled.mechanisms: SCRAM-SHA-512
      scram-sha-512.sasl.jaas.config: {secret: {env: EXTERNAL_JAAS}}
      ssl.keystore.location: /etc/kafka/external.jks
      ssl.keystore.password: {secret: {env: EXTERNAL_KEYSTORE_PASSWORD}}
---
apiVersion: reconciler/v1
kind: Topics
meta: {}
spec:
  defaults: {replicationFactor: 3, config: {min.insync.replicas: 2}}
  topics:
    orders: {partitions: 12, config: {retention.ms: 86400000, cleanup.policy: delete}}
    payments.ledger: {partitions: 6, config: {cleanup.policy: compact}}
---
apiVersion: reconciler/v1
kind: Quotas
meta: {}
spec:
  clients: {default: {producer_byte_rate: 1048576}, billing-app: {producer_byte_rate: 4194304}}
  users: {alice: {request_percentage: 50}}
  userClients: {alice: {app-1: {producer_byte_rate: 2097152}}}
  ips: {default: {connection_creation_rate: 50}}
---
apiVersion: reconciler/v1
kind: FleetDefaults
meta: {name: prod-defaults}
spec:
  selector: {labels: {env: prod}}
  brokerDefaults: {log.retention.ms: 604800000, auto.create.topics.enable: null}
  topicDefaults: {replicationFactor: 3, partitions: 6, config: {min.insync.replicas: 2}}
  policy: {prune: true, maxDeletes: 0, allowDestructive: false}
"""


def docs_of(text: str) -> list[Document]:
    docs, diags = load_text(text, "f.yaml")
    assert diags == [], [d.render() for d in diags]
    return docs


def problems(text: str) -> list[Diagnostic]:
    (doc,) = docs_of(text)
    return validate_document(doc)


def test_the_spec_example_is_valid() -> None:
    docs = docs_of(SPEC_EXAMPLE)
    assert [d.data["kind"] for d in docs] == [
        "Cluster", "BrokerConfig", "BrokerConfig", "Listeners", "Topics", "Quotas", "FleetDefaults",
    ]  # fmt: skip
    for doc in docs:
        assert validate_document(doc) == [], doc.data["kind"]


VALID_EDGE_CASES = [
    # quoted numbers, booleans, lists, null, unicode, sealed and file secrets in config maps
    """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: "2", cluster: prod-eu-1}
spec:
  config:
    log.retention.ms: "604800000"
    auto.create.topics.enable: FALSE
    ssl.cipher.suites: [TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384]
    ssl.enabled.protocols: []
    message.max.bytes: 1.5e6
    min.insync.replicas: null
    listener.name.x.ssl.key.password: {encoded: "AbC=="}
    ssl.truststore.password: {secret: {file: /run/secrets/ts}}
    "note.ünïcode": "värde ✓"
""",
    """apiVersion: reconciler/v1
kind: BrokerConfig
meta: {broker: 0}
spec: {config: {}}
""",
    # listener broker ids written as YAML ints are kept as strings
    """apiVersion: reconciler/v1
kind: Listeners
meta: {cluster: c}
spec:
  securityProtocolMap: {A: PLAINTEXT}
  brokers:
    1: {listeners: ["A://:9092"]}
    02: {listeners: ["A://:9092"], advertised: ["A://h:9092"]}
""",
    """apiVersion: reconciler/v1
kind: Quotas
meta: {cluster: c}
spec:
  clients: {default: {producer_byte_rate: "1048576", request_percentage: 12.5}}
  userClients: {"User:CN=alice,O=x": {default: {consumer_byte_rate: 1e6}}}
  ips: {"10.0.0.1": {connection_creation_rate: "50.5"}}
""",
    """apiVersion: reconciler/v1
kind: Topics
meta: {cluster: c, name: payments}
spec:
  topics:
    "héllo": {}
    _internal.x-y: {partitions: 1, replicationFactor: 3, config: {cleanup.policy: [compact, delete]}}
""",
    """apiVersion: reconciler/v1
kind: Cluster
meta: {name: c}
spec:
  kafkaVersion: "2.8.2"
  zookeeper:
    connect: "zk:2181"
    sessionTimeoutSeconds: 12.5
    auth: {scheme: digest, credentials: {secret: {file: f}}}
  passwordEncoder:
    secret: {file: /run/secrets/enc}
    oldSecret: {env: OLD}
    keyFactoryAlgorithm: PBKDF2WithHmacSHA1
    cipherAlgorithm: AES/GCM/NoPadding
    keyLength: 256
    iterations: 1024
  brokers: [0]
  policy: {allowDestructive: true}
""",
]


@pytest.mark.parametrize("text", VALID_EDGE_CASES)
def test_valid_edge_cases(text: str) -> None:
    assert problems(text) == []


# (document, line, column or the text found there, key, message): the message must appear in one
# diagnostic, at that place.
HEAD = "apiVersion: reconciler/v1\n"
CLUSTER = HEAD + "kind: Cluster\nmeta: {name: c}\nspec:\n  zookeeper: {connect: zk}\n  brokers: [1]\n"
TOPICS = HEAD + "kind: Topics\nmeta: {}\nspec:\n  topics:\n"
LISTENERS = (
    HEAD
    + "kind: Listeners\nmeta: {}\nspec:\n  securityProtocolMap: {A: SSL}\n  brokers: {b1: {listeners: []}}\n"
)
CONFIG = HEAD + "kind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n"
# fmt: off
BAD: list[tuple[str, int, int | str, str | None, str]] = [
    # unknown fields point at the unknown key itself, list what is allowed, suggest
    (TOPICS + "    orders: {partiton: 3}\n", 6, "partiton", "partiton",
     "unknown field 'partiton' in spec.topics.orders (allowed: config, partitions, placement, replicas, "
     "replicationFactor); did you mean 'partitions'?"),
    (CLUSTER + "  foo: 1\n", 7, "foo", "foo",
     "unknown field 'foo' in spec (allowed: adminClient, brokers, kafkaVersion,"),
    (CLUSTER.replace("{name: c}", "{name: c, lables: {}}"), 3, "lables", "lables", "did you mean 'labels'?"),
    (HEAD + "kind: Quotas\nmeta: {}\nspec: {}\nstatus: {}\n",
     5, 1, "status", "unknown field 'status' in the document"),
    (TOPICS + "    payments.ledger: {partitions: 1, x: 2}\n",
     6, "x:", "x", "unknown field 'x' in spec.topics[\"payments.ledger\"]"),
    # missing required fields: at the parent's key (or the document start), keyed by the missing name
    (CLUSTER.replace("  brokers: [1]\n", ""), 4, 1, "brokers", "missing required field 'brokers' in spec"),
    (CLUSTER, 4, 1, "kafkaVersion", "missing required field 'kafkaVersion' in spec"),
    (HEAD + "kind: Topics\nmeta: {}\nspec: {}\n", 4, 1, "topics", "missing required field 'topics' in spec"),
    (HEAD + "kind: Topics\nmeta: {}\n", 1, 1, "spec", "missing required field 'spec' in the document"),
    (HEAD + "kind: Cluster\nmeta: {}\nspec: {}\n", 3, 1, "name", "missing required field 'name' in meta"),
    # wrong types name the key, the expected and the actual type and value
    (TOPICS + '    orders: {partitions: "12"}\n',
     6, "partitions", "partitions", "'partitions' must be an integer, got string \"12\""),
    (TOPICS + "    orders: {partitions: 12.0}\n",
     6, "partitions", "partitions", "must be an integer, got number 12.0"),
    (TOPICS + "    orders: {partitions: true}\n",
     6, "partitions", "partitions", "must be an integer, got boolean true"),
    (TOPICS + "    orders:\n", 6, "orders", "orders", "'orders' must be a mapping, got null"),
    (TOPICS + "    orders: [1]\n", 6, "orders", "orders", "'orders' must be a mapping, got a list"),
    (CLUSTER + "  kafkaVersion: 3.6\n", 7, "kafkaVersion", "kafkaVersion",
     "'kafkaVersion' must be a string, got number 3.6; quote it in YAML to keep it a string (\"3.6\")"),
    (CLUSTER + "  kafkaVersion: '5.0'\n",
     7, "kafkaVersion", "kafkaVersion", 'must be a Kafka version such as "3.6"'),
    (CLUSTER.replace("{name: c}", "{name: c, labels: {tier: 1}}"),
     3, "tier", "tier", "'tier' must be a string, got integer 1"),
    (CLUSTER.replace("{name: c}", "{name: 'a b'}"),
     3, "name", "name", "'name' must be a name of letters, digits"),
    (CLUSTER.replace("[1]", "[1, 1, -2, x]"), 6, "brokers", "brokers", "'brokers' lists 1 more than once"),
    (CLUSTER.replace("[1]", "[1, 1, -2, x]"),
     6, "-2", "brokers", "item 3 of 'brokers' must be >= 0, got integer -2"),
    (CLUSTER.replace("[1]", "[1, 1, -2, x]"), 6, "x]", "brokers", "item 4 of 'brokers' must be an integer"),
    (CLUSTER.replace("[1]", "[]"), 6, "brokers", "brokers", "'brokers' must have at least 1 item"),
    (CLUSTER + "  policy: {prune: yes}\n",
     7, "prune", "prune", "'prune' must be a boolean (true/false), got string \"yes\""),
    (CLUSTER + "  policy: {maxDeletes: -1}\n",
     7, "maxDeletes", "maxDeletes", "'maxDeletes' must be >= 0, got integer -1"),
    # enums list what is allowed
    (CLUSTER + "  passwordEncoder: {keyLength: 100}\n",
     7, "keyLength", "keyLength", "'keyLength' must be one of 128, 192, 256, got integer 100"),
    (CLUSTER + "  passwordEncoder: {cipherAlgorithm: aes/gcm/nopadding}\n",
     7, "cipherAlgorithm", "cipherAlgorithm", "did you mean 'AES/GCM/NoPadding'?"),
    (CLUSTER + "  passwordEncoder: {iterations: 1000}\n",
     7, "iterations", "iterations", "'iterations' must be >= 1024"),
    (CLUSTER.replace("{connect: zk}", "{connect: zk, auth: {scheme: gssapi, credentials: {env: A}}}"),
     5, "scheme", "scheme", 'must be one of "digest", "sasl"'),
    # secrets: exactly one source, known fields, right types
    (CLUSTER + "  passwordEncoder: {secret: {env: A, file: B}}\n",
     7, "secret", "secret", "'secret' must name exactly one of: env, file"),
    (CLUSTER + "  passwordEncoder: {secret: {envv: A}}\n", 7, "envv", "envv", "unknown field 'envv'"),
    (CLUSTER + "  passwordEncoder: {secret: {secret: {env: 1}}}\n",
     7, "env", "env", "'env' must be a string"),
    (CLUSTER + "  passwordEncoder: {secret: PLAIN}\n",
     7, "secret", "secret", "'secret' must be a secret reference"),
    (CONFIG + "    ssl.key.password: {secret: {env: 5}}\n",
     6, "env", "env", "'env' must be a string, got integer 5"),
    (CONFIG + "    ssl.key.password: {secret: {}}\n",
     6, "secret", "secret", "'secret' must name exactly one of: env, file"),
    (CONFIG + "    ssl.key.password: {encoded: ''}\n",
     6, "encoded", "encoded", "'encoded' must not be empty"),
    (CONFIG + "    ssl.key.password: {secret: {env: A}, x: 1}\n", 6, "x:", "x", "unknown field 'x'"),
    (CONFIG + "    ssl.key.password: {plain: text}\n",
     6, "ssl", "ssl.key.password", "'ssl.key.password' must be a config value: a scalar, a list of scalars"),
    (CONFIG + "    a.b: [x, {y: 1}]\n",
     6, "{y", "a.b", "item 2 of 'a.b' must be a string or a number or a boolean"),
    (CONFIG + "    a.b: [x, null]\n",
     6, "null", "a.b", "item 2 of 'a.b' must be a string or a number or a boolean"),
    # BrokerConfig's broker, Listeners' broker ids and protocols, Quotas' numbers
    (HEAD + "kind: BrokerConfig\nmeta: {broker: defualt}\nspec: {config: {}}\n", 3, "broker", "broker",
     "'broker' must be \"default\" (the cluster-wide default) or a broker id (an integer >= 0); "
     'got string "defualt"'),
    (HEAD + "kind: BrokerConfig\nmeta: {broker: -1}\nspec: {config: {}}\n",
     3, "broker", "broker", "got integer -1"),
    (HEAD + "kind: BrokerConfig\nmeta: {}\nspec: {config: {}}\n",
     3, 1, "broker", "missing required field 'broker'"),
    (  # any case is accepted (Kafka's SecurityProtocol.forName upper-cases), an unknown protocol is not
        LISTENERS.replace("{A: SSL}", "{A: TLS}"),
        5,
        "A:",
        "A",
        "TLS",
    ),
    (
        LISTENERS,
        6,
        "b1",
        "b1",
        "key 'b1' in spec.brokers must be a broker id",
    ),
    (HEAD + "kind: Listeners\nmeta: {}\nspec:\n  securityProtocolMap: {}\n  brokers: {1: {advertised: []}}\n",
     6, "1:", "listeners", "missing required field 'listeners' in spec.brokers.1"),
    (
        HEAD + "kind: Quotas\nmeta: {}\nspec: {clients: {default: {producer_byte_rate: lots}}}\n",
        4,
        "producer_byte_rate",
        "producer_byte_rate",
        "'producer_byte_rate' must be a number (or a string holding one), got string",
    ),
    (HEAD + "kind: Quotas\nmeta: {}\nspec: {userClients: {alice: {app: {request_percentage: [1]}}}}\n",
     4, "request_percentage", "request_percentage", "must be a number or a string, got a list"),
    (HEAD + "kind: FleetDefaults\nmeta: {name: f}\nspec: {selector: {labels: {env: true}}}\n",
     4, "env", "env", 'quote it in YAML to keep it a string ("true")'),
    (HEAD + "kind: FleetDefaults\nmeta: {name: f}\nspec: {}\n",
     4, 1, "selector", "missing required field 'selector'"),
    # apiVersion and kind
    ("apiVersion: reconciler/v2\nkind: Topics\nmeta: {}\nspec: {topics: {}}\n",
     1, 1, "apiVersion", "apiVersion must be 'reconciler/v1', got string \"reconciler/v2\""),
    ("kind: Topics\nmeta: {}\nspec: {topics: {}}\n",
     1, 1, "apiVersion", "missing required field 'apiVersion'"),
    (HEAD + "kind: Topic\nmeta: {}\n",
     2, 1, "kind", "unknown kind \"Topic\"; did you mean 'Topics'? (valid kinds: Cluster,"),
    (HEAD + "kind: brokerconfig\n", 2, 1, "kind", "did you mean 'BrokerConfig'?"),
    (HEAD + "kind: 7\n", 2, 1, "kind", "unknown kind 7"),
    (HEAD + "meta: {}\n",
     1, 1, "kind", "missing required field 'kind' (one of: Cluster, BrokerConfig, Listeners,"),
    ("- a\n- b\n",
     1, 1, None, "a manifest must be a mapping with apiVersion, kind, meta and spec, got a list"),
    ("just text\n", 1, 1, None, 'got string "just text"'),
]
# fmt: on


@pytest.mark.parametrize(("text", "line", "column", "key", "message"), BAD)
def test_problems_name_the_key_and_point_at_it(
    text: str, line: int, column: int | str, key: str | None, message: str
) -> None:
    if isinstance(column, str):
        source_line = text.split("\n")[line - 1]
        assert source_line.count(column) == 1, f"ambiguous {column!r} in {source_line!r}"
        column = source_line.index(column) + 1
    diags = problems(text)
    found = [d for d in diags if message in d.message]
    assert found, [d.render() for d in diags]
    assert found[0].severity == "error"
    assert (found[0].source, found[0].key) == (SourceRef("f.yaml", line, column), key), found[0].render()


def test_every_problem_is_reported_once_in_file_order() -> None:
    diags = problems(
        CLUSTER.replace("{name: c}", "{name: c, x: 1}")
        + "  kafkaVersion: 3.6\n  policy: {prune: 1, maxDeletes: x}\n  extra: {}\n"
    )
    assert [(d.source.line if d.source else 0, d.key) for d in diags] == [
        (3, "x"), (7, "kafkaVersion"), (8, "prune"), (8, "maxDeletes"), (9, "extra"),
    ]  # fmt: skip


def test_wrong_api_version_and_kind_are_reported_once() -> None:
    diags = problems("kind: Nope\nmeta: {}\n")
    assert [d.key for d in diags] == ["apiVersion", "kind"]


# --- the schema files --------------------------------------------------------------------------------

SCHEMA_DIR = files("reconciler") / "schemas"


def _schema_files() -> dict[str, Any]:
    return {
        entry.name: json.loads(entry.read_text(encoding="utf-8"))
        for entry in SCHEMA_DIR.iterdir()
        if entry.name.endswith(".json")
    }


def test_every_kind_has_a_valid_2020_12_schema_with_an_id() -> None:
    schemas = _schema_files()
    assert set(KINDS.values()) | {"common.json"} == set(schemas)
    for name, contents in schemas.items():
        Draft202012Validator.check_schema(contents)
        assert contents["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert contents["$id"].endswith("/" + name)
        assert contents.get("description"), name


def _objects(node: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        if "properties" in node:
            found.append((where, node))
        for key, value in node.items():
            found.extend(_objects(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_objects(value, f"{where}/{index}"))
    return found


def test_every_object_with_fields_refuses_unknown_ones() -> None:
    for name, contents in _schema_files().items():
        for where, node in _objects(contents, name):
            assert node.get("additionalProperties") is False, where


# --- the fast path agrees with jsonschema ------------------------------------------------------------

_REPLACEMENTS: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, False, 0, -1, 1, 3.5, 12.0, "", "x", "12", "default", "SSL", "3.6", [], [1, 1], ["a", {}],
     {}, {"secret": {"env": "E"}}, {"secret": {"env": 1}}, {"secret": {}}, {"encoded": ""}, {"env": "A"},
     {"env": "A", "file": "B"}, {"unknown": 1}, {"listeners": []}, {"partitions": "1"}]
)  # fmt: skip


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(_paths(value, (*path, index)))
    return out


@st.composite
def _mutated(draw: st.DrawFn) -> Document:
    doc = draw(st.sampled_from(docs_of(SPEC_EXAMPLE + "---\n" + "---\n".join(VALID_EDGE_CASES))))
    data = copy.deepcopy(doc.data)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p and p[0] not in ("apiVersion", "kind")]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["x", "1", "b1", "partitons", "env"]))] = copy.deepcopy(
                draw(_REPLACEMENTS)
            )
        else:
            parent[path[-1]] = copy.deepcopy(draw(_REPLACEMENTS))
    return Document(doc.file, doc.index, data, doc.marks)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_fast_path_reports_exactly_what_jsonschema_alone_reports(doc: Document) -> None:
    """jsonschema-rs (with the strict-integer keyword) finds the failing parts; jsonschema alone, on the whole
    document, must report exactly the same: the fast path is never laxer, nor does it lose or move an error."""
    fast = validate_document(doc)
    original_schema, original_failing = schema_module._schema, schema_module._failing

    class NeverValid:
        def is_valid(self, data: Any) -> bool:
            return False

    def jsonschema_only(kind: str) -> Any:
        return dataclasses.replace(original_schema(kind), fast=NeverValid())

    def whole(kind: Any, data: Any) -> list[tuple[tuple[()], Any, Any]]:
        return [((), kind.schema, data)]

    schema_module._schema = jsonschema_only  # type: ignore[assignment]
    schema_module._failing = whole  # type: ignore[assignment]
    try:
        reference = validate_document(doc)
    finally:
        schema_module._schema, schema_module._failing = original_schema, original_failing
    assert [d.render() for d in fast] == [d.render() for d in reference]


def test_ten_thousand_topics_validate_through_the_fast_path() -> None:
    topics = "".join(f"    t{i}: {{partitions: 3, config: {{retention.ms: {i}}}}}\n" for i in range(10_000))
    (doc,) = docs_of(TOPICS + topics)
    assert validate_document(doc) == []
    (doc,) = docs_of(TOPICS + topics + "    bad: {partitions: x}\n  extra: 1\n")
    assert [(d.key, d.source.line if d.source else 0) for d in validate_document(doc)] == [
        ("partitions", 10_006),
        ("extra", 10_007),
    ]
