"""A corpus of config changes judged twice: by `validate` (offline, the rules on a desired state holding only that
change) and by a real broker's own validation (validateOnly IncrementalAlterConfigs, CreateTopics,
AlterClientQuotas), to measure how often they agree (issue 41, item 6; docs/kafka-validation.md).

The corpus is generated from the catalogs of both lines (3.9 and 4.1): every settable topic, broker and quota key
with values around its type and validator (the default, the bounds and one step beyond, a wrong type, an unknown
enum value), every read-only broker key once, and cases by hand (listener prefixes, per-broker keys at the
default, keys of the other line, custom keys). Passwords are never sent. The same changes go to both targets;
each side judges with its own line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.catalog import Catalog, ConfigKey, load_catalog
from reconciler.model import (
    DEFAULT_ENTITY,
    NO_ZOOKEEPER,
    AdminClientSpec,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredTopic,
    DesiredValue,
    EntityRef,
    KraftSpec,
    SourceRef,
    ZooKeeperSpec,
    frozen_map,
)
from reconciler.rules.offline import validate

Scope = Literal["topic", "create-topic", "broker-default", "broker", "clients", "users", "ips", "group",
                "client-metrics"]
Verdict = Literal["reject", "warn", "accept"]
AT = SourceRef("clusters/corpus/case.yaml", 1)
TOPIC = "corpus-topic"  # exists on each target (the caller creates it)
NEW_TOPIC = "corpus-new-topic"  # never created: CreateTopics validateOnly only
BROKER_ID = "1"
GROUP_NAME = "corpus-group"  # group configs need no group (KIP-1142); validateOnly writes nothing anyway
SUBSCRIPTION = "corpus-subscription"


@dataclass(frozen=True, slots=True)
class Case:
    scope: Scope
    key: str
    value: str

    @property
    def id(self) -> str:
        return f"{self.scope}:{self.key}={self.value}"


@dataclass(frozen=True, slots=True)
class Judged:
    case: Case
    ours: Verdict
    our_message: str
    broker: Verdict  # reject or accept
    broker_message: str

    @property
    def agree(self) -> bool:
        return (self.ours == "reject") == (self.broker == "reject")


# --- the corpus ------------------------------------------------------------------------------------------------

def _numbers(key: ConfigKey) -> list[str]:
    bits = {"SHORT": 15, "INT": 31, "LONG": 63}.get(key.type)
    out = ["1", "0", "-1", "abc", "1.5"]
    v = key.validator
    if v is not None and v.kind in ("range", "gzip_level"):
        for bound, step in ((v.min, -1), (v.max, 1)):
            if bound is not None:
                out += [_num(bound), _num(bound + step)]
    if bits is not None:
        out.append(str(2 ** bits))  # one beyond the type's range
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def values(key: ConfigKey) -> list[str]:
    """Values around `key`'s type and validator; its default first (when it has one)."""
    out = [key.default] if key.default else []
    v = key.validator
    if key.type == "BOOLEAN":
        out += ["true", "false", "TRUE", "maybe"]
    elif key.type in ("INT", "SHORT", "LONG", "DOUBLE"):
        out += _numbers(key)
    elif v is not None and v.kind in ("one_of", "one_of_ci"):
        out += [v.allowed[0], v.allowed[0].swapcase(), "bogus"]
    elif v is not None and v.kind == "each_of":
        out += [v.allowed[0], ",".join(v.allowed), "bogus"]
    elif v is not None and v.kind == "throttled_replicas":
        out += ["0:1", "*", "0-1"]
    elif v is not None and v.kind == "non_empty_string":
        out += ["x", ""]
    elif v is not None and v.kind == "share_offset_reset":
        out += ["earliest", "by_duration:PT1H", "EARLIEST", "by_duration:-PT1H"]
    elif key.type == "CLASS":
        out += ["org.apache.kafka.common.metrics.JmxReporter", "com.example.NoSuchClass"]
    elif key.type == "LIST":
        out += ["a,b"]
    else:
        out += ["x"]
    return list(dict.fromkeys(out))


def corpus(catalog: Catalog | None = None) -> list[Case]:
    catalog = catalog or load_catalog()
    lines = [catalog.line("3.9"), catalog.line("4.1")]
    cases: list[Case] = []
    topic_keys = sorted({n for line in lines for n in line.names("topic")})
    for name in topic_keys:
        key = next(k for line in lines if (k := line.topic(name)) is not None)
        for value in values(key):
            cases.append(Case("topic", name, value))
        cases.append(Case("create-topic", name, values(key)[-1]))
    broker_keys = sorted({n for line in lines for n in line.names("broker")})
    for name in broker_keys:
        key = next(k for line in lines if (k := line.broker(name)) is not None)
        if key.password or key.dynamic_only:
            continue  # never send a password; replication throttles: see the quota rows
        dynamic = any((k := line.broker(name)) is not None and k.scope != "read-only" for line in lines)
        if not dynamic:
            cases.append(Case("broker-default", name, key.default or "1"))
            continue
        per_broker = any((k := line.broker(name)) is not None and k.scope == "per-broker" for line in lines)
        scope: Scope = "broker" if per_broker else "broker-default"
        for value in values(key):
            cases.append(Case(scope, name, value))
    for kind, scope in (("clients", "clients"), ("users", "users"), ("ips", "ips")):
        for name in sorted({n for line in lines for n in line.names(kind)} - {"SCRAM-SHA-256", "SCRAM-SHA-512"}):
            for value in ("1024", "0", "-1", "1.5", "1e3"):
                cases.append(Case(scope, name, value))  # type: ignore[arg-type]
    for scope in ("group", "client-metrics"):  # ConfigResource.Type GROUP (4.0+), CLIENT_METRICS (3.7+)
        for name in sorted({n for line in lines for n in line.names(scope)}):
            key = next(k for line in lines if (k := line.entity_key(scope, name)) is not None)
            for value in values(key):
                cases.append(Case(scope, name, value))  # type: ignore[arg-type]
    cases += _by_hand()
    return list(dict.fromkeys(cases))


def _by_hand() -> Iterator[Case]:
    yield Case("broker", "listener.name.plaintext.max.connections", "100")  # cluster-level listener config
    yield Case("broker-default", "listener.name.plaintext.max.connections", "100")
    yield Case("broker-default", "listener.name.plaintext.ssl.client.auth", "required")  # per-broker at default
    yield Case("broker-default", "ssl.client.auth", "required")  # per-broker key at the default
    yield Case("broker-default", "listeners", "PLAINTEXT://:9092")
    yield Case("broker", "ssl.keystore.type", "PKCS12")  # only with a listener prefix
    yield Case("broker-default", "my.custom.plugin.option", "x")  # a key Kafka does not know
    yield Case("topic", "my.custom.topic.option", "x")
    yield Case("broker-default", "log.retention.hours", "24")  # read-only synonym
    yield Case("topic", "retention.ms", "604800")  # seconds for milliseconds: a warning of ours
    yield Case("broker-default", "min.insync.replicas", "2")
    yield Case("broker", "min.insync.replicas", "2")  # KIP-966: refused by a 4.x cluster with ELR enabled
    for interval in ("100", "99", "3600000", "3600001"):  # ClientMetricsConfigs: interval between 100 and 1 hour
        yield Case("client-metrics", "interval.ms", interval)
    for match in ("client_id=app-.*", "client_software_name=java,client_id=x", "client_nme=x", "client_id=(",
                  "client_id"):
        yield Case("client-metrics", "match", match)
    yield Case("client-metrics", "metrics", "*")
    for session in ("44999", "45000", "60000", "60001"):  # group.consumer.min/max.session.timeout.ms defaults
        yield Case("group", "consumer.session.timeout.ms", session)
    yield Case("group", "consumer.heartbeat.interval.ms", "50000")  # not below the session timeout (45000)


# --- the offline judge -------------------------------------------------------------------------------------------

def cluster_spec(version: str, kraft: bool) -> ClusterSpec:
    if kraft:
        return ClusterSpec("corpus", version, NO_ZOOKEEPER, (1,), kraft=KraftSpec(AdminClientSpec(("h:9092",))),
                           source=AT)
    return ClusterSpec("corpus", version, ZooKeeperSpec("h:2181/corpus"), (1,), source=AT)


def desired(case: Case, cluster: ClusterSpec) -> DesiredState:
    value = {case.key: DesiredValue(case.value, AT)}
    entities: dict[EntityRef, DesiredEntity] = {}
    topics: dict[str, DesiredTopic] = {}
    if case.scope in ("topic", "create-topic"):
        name = TOPIC if case.scope == "topic" else NEW_TOPIC
        topics[name] = DesiredTopic(name, 1, 1, frozen_map(value), AT)
    else:
        ref = {"broker-default": EntityRef("brokers", DEFAULT_ENTITY), "broker": EntityRef("brokers", BROKER_ID),
               "clients": EntityRef("clients", "corpus-client"), "users": EntityRef("users", "corpus-user"),
               "ips": EntityRef("ips", "127.0.0.2"), "group": EntityRef("groups", GROUP_NAME),
               "client-metrics": EntityRef("client-metrics", SUBSCRIPTION)}[case.scope]
        entities[ref] = DesiredEntity(ref, frozen_map(value), AT)
    return DesiredState(cluster, frozen_map(entities), frozen_map(topics))


def offline(case: Case, cluster: ClusterSpec, catalog: Catalog) -> tuple[Verdict, str]:
    # the change's own key, or its entity (a group or subscription a ZooKeeper-mode cluster cannot have)
    about = (case.key, None, GROUP_NAME, SUBSCRIPTION)
    diags = [d for d in validate(desired(case, cluster), catalog) if d.key in about or case.key in d.message]
    errors = [d.message for d in diags if d.severity == "error"]
    if errors:
        return "reject", errors[0]
    warnings = [d.message for d in diags if d.severity == "warning"]
    return ("warn", warnings[0]) if warnings else ("accept", "")


# --- the broker judge (a KraftAdmin: validateOnly requests) -----------------------------------------------------

def on_broker(case: Case, admin: Any) -> tuple[Verdict, str]:
    from reconciler.kraft.admin import BROKER, SET
    from reconciler.kraft.admin import TOPIC as TOPIC_TYPE

    if case.scope in ("clients", "users", "ips"):
        try:
            number = float(case.value)
        except ValueError:
            return "reject", "not a number (AlterClientQuotas carries a double)"
        entity = {"clients": [("client-id", "corpus-client")], "users": [("user", "corpus-user")],
                  "ips": [("ip", "127.0.0.2")]}[case.scope]
        refused = admin.alter_client_quotas([(entity, [(case.key, number, False)])], validate_only=True)
        return ("reject", f"{refused[0].error}: {refused[0].message}") if refused else ("accept", "")
    if case.scope == "create-topic":
        refused = admin.create_topics({NEW_TOPIC: {"assignments": {0: [int(BROKER_ID)]},
                                                   "configs": {case.key: case.value}}}, validate_only=True)
        return ("reject", f"{refused[0].error}: {refused[0].message}") if refused else ("accept", "")
    rtype, name = {"topic": (TOPIC_TYPE, TOPIC), "broker-default": (BROKER, ""), "broker": (BROKER, BROKER_ID),
                   "group": (32, GROUP_NAME), "client-metrics": (16, SUBSCRIPTION)}[case.scope]
    refusal = admin.alter_configs(rtype, name, [(case.key, SET, case.value)], validate_only=True)
    return ("reject", f"{refusal.error}: {refusal.message}") if refusal else ("accept", "")


def judge(cases: Iterable[Case], cluster: ClusterSpec, admin: Any, catalog: Catalog | None = None,
          progress: Callable[[int], None] | None = None) -> list[Judged]:
    catalog = catalog or load_catalog()
    out = []
    for i, case in enumerate(cases):
        ours, our_message = offline(case, cluster, catalog)
        broker, broker_message = on_broker(case, admin)
        out.append(Judged(case, ours, our_message, broker, broker_message))
        if progress is not None and i % 100 == 0:
            progress(i)
    return out


# Where validate and a broker disagree on purpose (docs/kafka-validation.md, "Agreement with the brokers"): a
# disagreement matching none of these, and not a warning of ours that says why, fails the corpus test.
ON_PURPOSE: dict[str, Callable[[Judged], bool]] = {
    "a key the release removed: the 4.x controller keeps a broker key it does not know, which does nothing":
        lambda j: j.broker == "accept" and "was removed in Kafka" in j.our_message,
    "a key only a newer release has: the broker keeps it as an unknown key, which does nothing":
        lambda j: j.broker == "accept" and "needs Kafka" in j.our_message,
    "an unknown (custom) broker key: Kafka keeps it; a typo of a real key is likelier":
        lambda j: j.broker == "accept" and j.our_message.startswith("unknown broker config"),
    "a whole-number quota written as a double (1e3): the wire carries a double, but ZooKeeper-mode brokers parse "
    "the stored text with Long.parseLong, so manifests keep the integer form on every backend":
        lambda j: j.broker == "accept" and j.case.scope in ("clients", "users", "ips")
        and "Not a number of type" in j.our_message,
}


# Where the broker decides with its current state and `plan` checks it against the live cluster (the S rows of
# docs/kafka-validation.md): offline, validate cannot know it.
AT_PLAN_TIME: dict[str, Callable[[Judged], bool]] = {
    "a thread-pool step: the broker's current value decides; plan checks it against the live value (S01)":
        lambda j: j.broker == "reject" and ("thread count update validation failed" in j.broker_message
                                            or "Log cleaner threads" in j.broker_message),
    "metric.reporters: the brokers load the classes; plan warns when it changes (S06)":
        lambda j: j.broker == "reject" and j.case.key == "metric.reporters",
}


def explanation(j: Judged) -> str | None:
    """Why `j` disagrees, or None when it agrees; "unexplained" when nothing documents it."""
    if j.agree:
        return None
    if j.ours == "warn":
        return "a warning of ours: the verdict rests on broker context the manifests do not hold"
    for reasons in (AT_PLAN_TIME, ON_PURPOSE):
        found = next((reason for reason, match in reasons.items() if match(j)), None)
        if found is not None:
            return found
    return "unexplained"


def summary(target: str, judged: list[Judged]) -> str:
    agree = sum(j.agree for j in judged)
    reasons: dict[str, int] = {}
    for j in judged:
        reason = explanation(j)
        if reason is not None:
            reasons[reason] = reasons.get(reason, 0) + 1
    lines = [f"{target}: {agree}/{len(judged)} changes judged alike ({100 * agree / len(judged):.1f}%)"]
    lines += [f"  {count:4d} {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


__all__ = ["AT_PLAN_TIME", "ON_PURPOSE", "Case", "Judged", "cluster_spec", "corpus", "explanation", "judge",
           "offline", "on_broker", "summary"]
