"""A KRaft cluster's live state, read through its Admin API into the same `LiveState` a ZooKeeper read gives,
so that diff, risk, rules, renderers, drift and `describe` work unchanged:

* brokers: DescribeCluster, with each broker's advertised listeners and protocol map from its DescribeConfigs;
* `brokers/<id>`: that broker's DescribeConfigs entries (and synonyms) whose source is DYNAMIC_BROKER_CONFIG,
  `brokers/<default>`: the cluster default resource's (`ConfigResource(BROKER, "")`) DYNAMIC_DEFAULT_BROKER_CONFIG
  ones, `topics/<t>`: DYNAMIC_TOPIC_CONFIG ones. Only dynamic sources are live dynamic config: static
  server.properties values and defaults are what ZooKeeper mode never held either
  (`ConfigHelper.describeConfigs` / `DescribeConfigsResponse.ConfigSource`);
* topics: Metadata (partitions, replicas, topic ids);
* `clients/`, `users/`, `ips/` entities: DescribeClientQuotas with no filter (`ClientQuotaEntity` types
  `client-id`, `user`, `ip`; a null name is the `<default>` entity);
* ACLs: DescribeAcls (filter ANY);
* SCRAM credentials: DescribeUserScramCredentials (mechanism and iterations only: `users/<u>` gets a
  `SCRAM-SHA-256` key whose live value is `kraft:iterations=N`, see kraft/passwords.py).

A password never comes back (DescribeConfigs answers null for sensitive values): its key's live value is
`passwords.PRESENT`, and kraft/passwords.py decides "unchanged" from the fingerprints the last apply
recorded in the reconciler's state (kraft/state.py). Versions: KRaft has no znode versions; entities read
have version 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from reconciler.catalog import load_catalog
from reconciler.kraft.admin import (
    BROKER,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DescribedConfig,
    KraftAdmin,
)
from reconciler.kraft.passwords import PRESENT, scram_marker
from reconciler.model import (
    DEFAULT_ENTITY,
    ENTITY_TYPES,
    AclEntry,
    AclResource,
    BrokerRegistration,
    ControllerInfo,
    EntityRef,
    LiveAcls,
    LiveEntity,
    LiveState,
    LiveTopic,
    frozen_map,
)
from reconciler.values import java_double_to_string

# ClientQuotaEntity's entity types -> our entity types
QUOTA_TYPES = {"user": "users", "client-id": "clients", "ip": "ips"}


def dynamic_values(configs: list[DescribedConfig], source: int) -> dict[str, str]:
    """The keys set at `source` (a DescribeConfigs answer lists a key once, at its highest-precedence source;
    its synonyms list every source that sets it, so a `<default>` value under a per-broker one is found)."""
    out: dict[str, str] = {}
    for c in configs:
        for name, value, src in c.synonyms or ((c.name, c.value, c.source),):
            if src == source:
                out[name] = PRESENT if c.sensitive or value is None else value
    return out


def topic_values(overrides: list[tuple[str, str | None, bool]]) -> dict[str, str]:
    """A topic's own keys (`KraftAdmin.topic_overrides`), as `dynamic_values` gives them at DYNAMIC_TOPIC_CONFIG."""
    return {name: PRESENT if sensitive or value is None else value for name, value, sensitive in overrides}


def _quota_ref(components: tuple[tuple[str, str | None], ...]) -> EntityRef | None:
    named = {kind: (DEFAULT_ENTITY if name is None else name) for kind, name in components}
    if set(named) == {"user", "client-id"}:
        return EntityRef("users", named["user"], named["client-id"])
    if len(named) == 1:
        kind, name = next(iter(named.items()))
        return EntityRef(QUOTA_TYPES[kind], name) if kind in QUOTA_TYPES else None
    return None


def quota_text(ref: EntityRef, key: str, value: float) -> str:
    """A quota as ZooKeeper mode holds it: the wire carries a double (`ClientQuotaAlteration.Op`), the catalog
    types byte rates LONG and connection rates INT (`QuotaConfig`), whose integral values print without `.0`."""
    known = load_catalog().quota(ref.quota_kind, key)
    if known is not None and known.type in ("INT", "LONG") and value.is_integer():
        return str(int(value))
    return java_double_to_string(value)


def _brokers(admin: KraftAdmin, entity_types: frozenset[str]
             ) -> tuple[int, dict[int, BrokerRegistration], dict[EntityRef, LiveEntity]]:
    """The controller id, each registered broker (its listeners from its own DescribeConfigs answer), and the
    `brokers/<id>` and `brokers/<default>` entities."""
    _cluster_id, controller, registered = admin.cluster()
    brokers = {}
    entities: dict[EntityRef, LiveEntity] = {}
    for b, (host, port) in registered.items():
        answer = admin.describe_configs(BROKER, [str(b)], node=b).get(str(b), [])
        values = {c.name: c.value for c in answer}
        advertised = values.get("advertised.listeners") or values.get("listeners") or f"PLAINTEXT://{host}:{port}"
        protocol_map = dict(pair.split(":", 1) for pair in (values.get("listener.security.protocol.map") or "")
                            .split(",") if ":" in pair)
        brokers[b] = BrokerRegistration(b, tuple(e.strip() for e in advertised.split(",") if e.strip()),
                                        frozen_map(protocol_map), values.get("broker.rack"))
        own = dynamic_values(answer, DYNAMIC_BROKER_CONFIG)
        if own and "brokers" in entity_types:
            entities[EntityRef("brokers", str(b))] = LiveEntity(EntityRef("brokers", str(b)), frozen_map(own), 0)
    if "brokers" in entity_types:
        default = dynamic_values(admin.describe_configs(BROKER, [""]).get("", []), DYNAMIC_DEFAULT_BROKER_CONFIG)
        if default:
            ref = EntityRef("brokers", DEFAULT_ENTITY)
            entities[ref] = LiveEntity(ref, frozen_map(default), 0)
    return controller, brokers, entities


def _topics(admin: KraftAdmin, hidden: frozenset[str]) -> dict[str, LiveTopic]:
    topics: dict[str, LiveTopic] = {}
    for name, topic_id, assignment in admin.topic_assignments():
        if name in hidden:  # the reconciler's own state topic (kraft/state.py): never planned, imported, deleted
            continue
        topics[name] = LiveTopic(name, frozen_map(assignment), 0, topic_id)
    return topics


def _quota_entities(admin: KraftAdmin, entity_types: frozenset[str]) -> dict[EntityRef, LiveEntity]:
    """clients/, users/ and ips/ entities: their quotas, and each user's SCRAM mechanisms (iterations only)."""
    quotas: dict[EntityRef, dict[str, str]] = defaultdict(dict)
    if entity_types & {"users", "clients", "ips"}:
        for components, rates in admin.client_quotas():
            quota_ref = _quota_ref(components)
            if quota_ref is not None and quota_ref.entity_type in entity_types:
                quotas[quota_ref].update({k: quota_text(quota_ref, k, v) for k, v in rates.items()})
    if "users" in entity_types:
        for user, mechanisms in admin.scram_users().items():
            for mechanism, iterations in mechanisms.items():
                quotas[EntityRef("users", user)][mechanism] = scram_marker(iterations)
    return {ref: LiveEntity(ref, frozen_map(config), 0) for ref, config in quotas.items()}


def _acls(admin: KraftAdmin) -> dict[AclResource, LiveAcls]:
    acls: dict[AclResource, set[AclEntry]] = defaultdict(set)
    for rtype, pattern, name, entries in admin.acl_bindings():
        acls[AclResource(rtype, pattern, name)].update(AclEntry(*entry) for entry in entries)
    return {r: LiveAcls(r, frozenset(e), 0) for r, e in acls.items()}


def read_live(admin: KraftAdmin, cluster: str, entity_types: frozenset[str] = frozenset(ENTITY_TYPES),
              progress: Callable[[int, int], None] | None = None, hidden: frozenset[str] = frozenset()) -> LiveState:
    """The live state of the cluster `admin` reaches; entity types outside `entity_types` are not read
    (as `zk.read.ReadScope`: ownership needs whole types only where the manifests manage them); `hidden`
    topics (the reconciler's state topic) are left out."""
    def step(done: int) -> None:
        if progress is not None:
            progress(done, 5)

    controller, brokers, entities = _brokers(admin, entity_types)
    step(1)
    topics = _topics(admin, hidden)
    step(2)
    if "topics" in entity_types:
        for name, overrides in admin.topic_overrides(sorted(topics)).items():
            ref = EntityRef("topics", name)
            entities[ref] = LiveEntity(ref, frozen_map(topic_values(overrides)), 0)
    step(3)
    entities.update(_quota_entities(admin, entity_types))
    step(4)
    acls = _acls(admin)
    step(5)
    return LiveState(cluster=cluster, brokers=frozen_map(brokers), topics=frozen_map(topics),
                     entities=frozen_map(entities), controller=ControllerInfo(controller), acls=frozen_map(acls))
