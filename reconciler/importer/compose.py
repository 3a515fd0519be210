"""A live cluster's state -> manifest documents that declare exactly it (so a plan on them is empty).

Every live key is declared as stored, with three exceptions the reconciler never owns unless declared (so
declaring them would take them over): the replication throttles kafka-reassign-partitions sets, SCRAM
credentials in users/<user>, and internal topics (`__consumer_offsets` …, unless asked for). Values are
written tidily (numbers and booleans as YAML scalars) only when that reads back to the same canonical
value; passwords are written as the stored `{encoded: …}`. When the cluster would inherit FleetDefaults, an
inherited key the cluster does not have live is written as `null` (removes it), so inheritance adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.catalog import SCRAM_KEYS, Catalog, ConfigKey
from reconciler.importer.acls import acls_doc
from reconciler.importer.kafka4 import kafka4_files
from reconciler.importer.listeners import compile_listeners
from reconciler.manifests.fleet import FleetLayer
from reconciler.model import DEFAULT_ENTITY, REPLICATION_THROTTLE_KEYS, EntityRef, LiveState
from reconciler.units import parse_int, parse_number
from reconciler.values import canonical, to_kafka_string

API = "reconciler/v1"
_INTEGER = re.compile(r"-?[0-9]+")
_DOUBLE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE]-?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class ImportSpec:
    cluster: str
    connection: Mapping[str, Any]  # cluster.yaml's `zookeeper:` or `kraft:` block: {"zookeeper": {...}}
    kafka_version: str
    labels: Mapping[str, str] = field(default_factory=dict)
    encoder_secret_env: str | None = None  # passwordEncoder.secret's env var (when passwords are stored)
    include_internal_topics: bool = False


@dataclass
class Composed:
    files: dict[str, list[dict[str, Any]]]  # file name -> its documents, in order
    notes: list[str]  # what was left out or could not be tidied, for the operator


def _doc(kind: str, meta: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "meta": meta, "spec": spec}


def _manifest_name(name: str) -> str:
    return "default" if name == DEFAULT_ENTITY else name


class Writer:
    """Live strings -> manifest values (tidy where lossless, sealed for passwords). Keys whose values Kafka
    would hide and that cannot be sealed (a type the catalog does not know: `ldap.bind.pw` a plugin reads) are
    never written: they are collected in `hidden` and left to the live cluster through policy.ignoreKeys."""

    def __init__(self, catalog: Catalog, version: str, unreadable: frozenset[str] = frozenset()) -> None:
        self.catalog, self.version, self.unreadable = catalog, version, unreadable
        self.hidden: set[str] = set()
        self.passwords_unread: set[str] = set()

    def is_hidden(self, scope: str, name: str, live: str | None = None) -> bool:
        """A value never written to a manifest: sensitive (`Catalog.is_sensitive`) and not a password the
        manifest can hold sealed as `{encoded: …}` (SCRAM credentials are skipped before this is asked), or a
        password whose value the cluster never returns (`unreadable`: KRaft's DescribeConfigs answers null)."""
        if self.catalog.is_sensitive(name, scope) and not self.is_password(scope, name) and name not in SCRAM_KEYS:
            self.hidden.add(name)
            return True
        if live is not None and live in self.unreadable:
            self.hidden.add(name)
            self.passwords_unread.add(name)
            return True
        return False

    def key(self, scope: str, name: str) -> ConfigKey | None:
        if scope == "topics":
            return self.catalog.topic(name, self.version)
        if scope == "brokers":
            return self.catalog.resolve_broker(name, self.version).base or self.catalog.quota("brokers", name)
        return self.catalog.quota(scope, name)

    def is_password(self, scope: str, name: str) -> bool:
        if scope != "brokers":
            return False
        return self.catalog.is_password(name) or self.catalog.resolve_broker(name, self.version).password

    def value(self, scope: str, name: str, live: str) -> Any:
        if self.is_password(scope, name):
            return {"encoded": live}
        key = self.key(scope, name)
        want = canonical(key, live)
        candidates: list[Any] = []
        if live in ("true", "false"):
            candidates.append(live == "true")
        number = parse_int(live) if _INTEGER.fullmatch(live) else None  # bounded: a znode may hold anything
        whole = parse_number(live) if re.fullmatch(r"-?[0-9]+\.0", live) else None  # e.g. quotas stored as
        if number is not None and str(number) == live:  # doubles by the Admin API
            candidates.append(number)
        elif whole is not None and abs(whole) < 2**63:
            candidates.append(int(whole))
        if key is not None and key.type == "DOUBLE" and _DOUBLE.fullmatch(live) and parse_number(live) is not None:
            candidates.append(float(live))
        for candidate in candidates:
            if canonical(key, to_kafka_string(candidate)) == want:
                return candidate
        return live

    def config(self, scope: str, live: Mapping[str, str], skip: Callable[[str], bool] = lambda k: False
               ) -> dict[str, Any]:
        return {k: self.value(scope, k, v) for k, v in sorted(live.items())
                if not skip(k) and not self.is_hidden(scope, k, v)}


def _broker_ids(live: LiveState) -> list[int]:
    """Registered brokers, plus those seen in per-broker configs and replica assignments (a broker that is
    down at import time is still part of the cluster)."""
    ids = set(live.brokers)
    ids |= {int(r.name) for r in live.entities if r.entity_type == "brokers" and r.name.isdigit()}
    ids |= {b for t in live.topics.values() for replicas in t.assignment.values() for b in replicas}
    return sorted(ids)


def cluster_doc(spec: ImportSpec, brokers: Sequence[int], has_passwords: bool,
                ignore: Sequence[str] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": spec.cluster}
    if spec.labels:
        meta["labels"] = dict(spec.labels)
    body: dict[str, Any] = {"kafkaVersion": spec.kafka_version, **spec.connection}
    if has_passwords:
        env = spec.encoder_secret_env or re.sub(r"[^A-Z0-9]", "_", spec.cluster.upper()) + "_ENCODER_SECRET"
        body["passwordEncoder"] = {"secret": {"env": env}}
    body["brokers"] = list(brokers)
    if ignore:
        body["policy"] = {"ignoreKeys": list(ignore)}
    return _doc("Cluster", meta, body)


def broker_docs(
    live: LiveState, writer: Writer, fleet: FleetLayer, same_secret: Callable[[list[str]], bool], notes: list[str]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """BrokerConfig documents (default first, then by id) and the Listeners document, if any."""
    per_broker = {
        int(ref.name): {k: v for k, v in e.config.items() if not writer.is_hidden("brokers", k, v)}
        for ref, e in live.entities.items()
        if ref.entity_type == "brokers" and ref.name != DEFAULT_ENTITY and e.config
    }
    compiled = compile_listeners(
        per_broker, same_secret, lambda k: writer.is_password("brokers", k), lambda v: {"encoded": v}
    )
    notes.extend(compiled.notes)
    skip = REPLICATION_THROTTLE_KEYS.__contains__
    docs: list[dict[str, Any]] = []
    default = live.entities.get(EntityRef("brokers", DEFAULT_ENTITY))
    default_live = dict(default.config) if default is not None else {}
    config = writer.config("brokers", default_live, skip)
    config |= dict.fromkeys(k for k in sorted(fleet.broker_defaults) if k not in default_live)
    if config:
        docs.append(_doc("BrokerConfig", {"broker": "default"}, {"config": config}))
    for broker, cfg in sorted(compiled.remaining.items()):
        own = writer.config("brokers", cfg, skip)
        if own:
            docs.append(_doc("BrokerConfig", {"broker": broker}, {"config": own}))
    return docs, compiled.document


def topics_doc(live: LiveState, writer: Writer, fleet: FleetLayer, include_internal: bool, notes: list[str]
               ) -> dict[str, Any] | None:
    names = sorted(n for n in live.topics if include_internal or not n.startswith("__"))
    internal = sorted(set(live.topics) - set(names))
    if internal:
        notes.append(f"internal topics left unmanaged: {', '.join(internal)} (--include-internal-topics)")
    if not names:
        return None
    configs: dict[str, dict[str, str]] = {}
    for name in names:
        entity = live.entities.get(EntityRef("topics", name))
        configs[name] = dict(entity.config) if entity is not None else {}
    rfs = {live.topics[n].replication_factor for n in names}
    common_rf = rfs.pop() if len(rfs) == 1 else None
    # key=value pairs every topic has go to the document's defaults (with two topics or more)
    common = dict(set.intersection(*(set(c.items()) for c in configs.values()))) if len(names) > 1 else {}
    # inherited FleetDefaults keys no topic has: one null in the defaults; missing on some: null on those
    inherited = set(fleet.topic_config)
    nowhere = {k for k in inherited if all(k not in c for c in configs.values())}
    defaults: dict[str, Any] = {} if common_rf is None else {"replicationFactor": common_rf}
    default_config = writer.config("topics", common) | dict.fromkeys(nowhere)
    if default_config:
        defaults["config"] = dict(sorted(default_config.items()))
    topics: dict[str, Any] = {}
    for name in names:
        entry: dict[str, Any] = {"partitions": live.topics[name].partitions}
        if common_rf is None:
            entry["replicationFactor"] = live.topics[name].replication_factor
        own = {k: v for k, v in configs[name].items() if k not in common}
        config = writer.config("topics", own) | dict.fromkeys(k for k in inherited - nowhere if k not in configs[name])
        if config:
            entry["config"] = dict(sorted(config.items()))
        topics[name] = entry
    spec: dict[str, Any] = {"defaults": defaults} if defaults else {}
    spec["topics"] = topics
    return _doc("Topics", {}, spec)


def _quota_order(ref: EntityRef) -> tuple[str, bool, str, bool, str]:
    """Defaults first, then by name; a user's client entities after the user's own."""
    client = ref.client or ""
    return (ref.entity_type, ref.name != DEFAULT_ENTITY, ref.name, client != DEFAULT_ENTITY, client)


def quotas_doc(live: LiveState, writer: Writer, notes: list[str]) -> dict[str, Any] | None:
    sections: dict[str, dict[str, Any]] = {"clients": {}, "users": {}, "userClients": {}, "ips": {}}
    scram_users: list[str] = []
    for ref, entity in sorted(live.entities.items(), key=lambda item: _quota_order(item[0])):
        if ref.entity_type not in ("clients", "users", "ips"):
            continue
        names = [ref.name] + ([ref.client] if ref.client is not None else [])
        if any(n == "default" for n in names):
            notes.append(f"{ref.display}: an entity literally named 'default' cannot be written in a manifest "
                         "('default' means <default> there); left unmanaged")
            continue
        config = writer.config(ref.quota_kind, entity.config, SCRAM_KEYS.__contains__)
        if ref.client is None and not SCRAM_KEYS.isdisjoint(entity.config):
            scram_users.append(f"{ref.name} ({'/'.join(sorted(SCRAM_KEYS & set(entity.config)))})")
        if not config:
            continue  # a parent of user-client quotas, or only SCRAM credentials
        if ref.client is not None:
            users = sections["userClients"].setdefault(_manifest_name(ref.name), {})
            users[_manifest_name(ref.client)] = config
        else:
            sections[ref.entity_type][_manifest_name(ref.name)] = config
    if scram_users:  # a password cannot be recovered from Kafka's salted keys: never imported; every user named
        notes.append(f"SCRAM credentials of {len(scram_users)} user(s) left unmanaged: {', '.join(scram_users)}; "
                     "to manage one, "
                     "declare it under the Quotas kind's scramUsers with a secret reference to its password "
                     "(a plan then says 'no changes' when the password is the stored one)")
    spec = {k: v for k, v in sections.items() if v}
    return _doc("Quotas", {}, spec) if spec else None


def compose(
    live: LiveState, spec: ImportSpec, catalog: Catalog, fleet: FleetLayer,
    same_secret: Callable[[list[str]], bool], unreadable: frozenset[str] = frozenset(),
) -> Composed:
    """The manifest files of the cluster: cluster.yaml, brokers.yaml, listeners.yaml, topics.yaml, quotas.yaml.
    `unreadable`: the live values that stand for a password the backend cannot read (KRaft)."""
    writer = Writer(catalog, spec.kafka_version, unreadable)
    notes: list[str] = []
    brokers, listeners = broker_docs(live, writer, fleet, same_secret, notes)
    has_passwords = any(
        writer.is_password("brokers", k) and v not in unreadable for r, e in live.entities.items()
        if r.entity_type == "brokers" for k, v in e.config.items()
    )
    ids = _broker_ids(live)
    files: dict[str, list[dict[str, Any]]] = {}
    if brokers:
        files["brokers.yaml"] = brokers
    if listeners is not None:
        files["listeners.yaml"] = [listeners]
    topics = topics_doc(live, writer, fleet, spec.include_internal_topics, notes)
    if topics is not None:
        files["topics.yaml"] = [topics]
    quotas = quotas_doc(live, writer, notes)
    if quotas is not None:
        files["quotas.yaml"] = [quotas]
    acls = acls_doc(live.acls)  # importer/acls.py
    if acls is not None:
        files["acls.yaml"] = [acls]
    files.update(kafka4_files(live, writer, catalog, spec.kafka_version))  # groups, client metrics, features
    ignore: list[str] = []
    if writer.hidden:  # after every document: the keys each of them left out
        inherited = fleet.policy.get("ignoreKeys")
        ignore = sorted(writer.hidden | set(inherited.raw if inherited is not None else ()))
        unknown = sorted(writer.hidden - writer.passwords_unread)
        if unknown:
            notes.append("keys of a type Kafka does not know, whose values it hides (so import does not write "
                         f"them): {', '.join(unknown)}; kept as they are live through policy.ignoreKeys")
        if writer.passwords_unread:
            notes.append("passwords the cluster never returns (KRaft's DescribeConfigs answers null), so import "
                         f"cannot write them: {', '.join(sorted(writer.passwords_unread))}; kept as they are live "
                         "through policy.ignoreKeys; to manage one, declare it with a secret reference and take it "
                         "out of ignoreKeys")
    return Composed({"cluster.yaml": [cluster_doc(spec, ids, has_passwords, ignore)], **files}, notes)
