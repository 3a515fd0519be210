"""Documents of one cluster (+ the fleet layer) -> `DesiredState`.

Structural problems (two documents declaring the same entity, a Cluster document in the wrong place,
`meta.cluster` naming another cluster, `null` with nothing to remove) are reported here; Kafka's own
config rules run afterwards on the result (`reconciler.rules`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reconciler.catalog import Catalog, load_catalog
from reconciler.errors import Diagnostic
from reconciler.manifests.acls import build_acls
from reconciler.manifests.convert import layer_config, marker, secret_ref
from reconciler.manifests.desired_features import build_features
from reconciler.manifests.desired_groups import build_client_metrics, build_groups
from reconciler.manifests.desired_parts import (
    Declared,
    build_listeners,
    build_quotas,
    build_topics,
)
from reconciler.manifests.fleet import FleetLayer, fleet_layer
from reconciler.manifests.load import Document
from reconciler.manifests.repo import CLUSTER_FILE, ClusterSources, Repository
from reconciler.manifests.scram import build_scram_users
from reconciler.manifests.static import read_properties
from reconciler.model import (
    DEFAULT_ENTITY,
    DEFAULT_MAX_MOVING_PARTITIONS,
    DEFAULT_STATE_TOPIC,
    DEFAULT_THROTTLE,
    NO_ZOOKEEPER,
    AdminClientSpec,
    ApplySettings,
    ClusterSpec,
    DesiredEntity,
    DesiredState,
    DesiredValue,
    EntityRef,
    KraftSpec,
    PasswordEncoderSpec,
    PlacementSpec,
    Policy,
    ReassignmentSpec,
    SaslSpec,
    SecretRef,
    SourceRef,
    TlsSpec,
    ZooKeeperSpec,
    frozen_map,
)


def _kind(doc: Document) -> str:
    return str(doc.data.get("kind"))


def _meta(doc: Document) -> Mapping[str, Any]:
    return doc.data.get("meta") or {}


def _spec(doc: Document) -> Mapping[str, Any]:
    return doc.data.get("spec") or {}


def _cluster_doc(sources: ClusterSources, diags: list[Diagnostic]) -> Document | None:
    found: Document | None = None
    for doc in sources.documents:
        if _kind(doc) != "Cluster":
            continue
        if Path(doc.file).name != CLUSTER_FILE:
            diags.append(
                Diagnostic("error", f"a Cluster document belongs in {CLUSTER_FILE}", doc.mark(("kind",)), "kind")
            )
        elif found is not None:
            diags.append(
                Diagnostic("error", f"second Cluster document (first at {found.mark(())})", doc.mark(("kind",)), "kind")
            )
        else:
            found = doc
    if found is None:
        return None
    name = _meta(found).get("name")
    if name != sources.name:
        diags.append(
            Diagnostic(
                "error",
                f"meta.name {name!r} must equal the cluster directory name {sources.name!r}",
                found.mark(("meta", "name")),
                "name",
            )
        )
    return found


def _policy(fleet: FleetLayer, own: Mapping[str, Any]) -> Policy:
    merged = {k: v.raw for k, v in fleet.policy.items()} | dict(own)
    return Policy(
        prune=bool(merged.get("prune", False)),
        ignore_keys=tuple(sorted(merged.get("ignoreKeys") or ())),
        max_deletes=int(merged.get("maxDeletes", 20)),
        allow_destructive=bool(merged.get("allowDestructive", False)),
        delete_topics=tuple(str(p) for p in merged.get("deleteTopics") or ()),
        prune_acls=bool(merged.get("pruneAcls", False)),
        prune_scram_users=bool(merged.get("pruneScramUsers", False)),
    )


def _cluster_spec(doc: Document, fleet: FleetLayer) -> ClusterSpec:
    spec = _spec(doc)
    kraft = _kraft(doc, spec["kraft"]) if "kraft" in spec else None
    enc = spec.get("passwordEncoder")
    encoder = None
    if enc is not None:
        encoder = PasswordEncoderSpec(
            secret=secret_ref(enc["secret"]) if "secret" in enc else None,
            old_secret=secret_ref(enc["oldSecret"]) if "oldSecret" in enc else None,
            key_factory_algorithm=enc.get("keyFactoryAlgorithm"),
            cipher_algorithm=enc.get("cipherAlgorithm", "AES/CBC/PKCS5Padding"),
            key_length=int(enc.get("keyLength", 128)),
            iterations=int(enc.get("iterations", 4096)),
            source=doc.mark(("spec", "passwordEncoder", "secret")),
        )
    return ClusterSpec(
        name=str(_meta(doc)["name"]),
        kafka_version=str(spec["kafkaVersion"]),
        zookeeper=_zookeeper(doc, spec["zookeeper"]) if "zookeeper" in spec else NO_ZOOKEEPER,
        brokers=tuple(int(b) for b in spec["brokers"]),
        labels=frozen_map({str(k): str(v) for k, v in (_meta(doc).get("labels") or {}).items()}),
        password_encoder=encoder,
        policy=_policy(fleet, spec.get("policy") or {}),
        source=doc.mark(()),
        # a KRaft cluster's Admin API is also where `apply --verify` asks, unless adminClient says otherwise
        admin=(_admin_client(doc, spec["adminClient"]) if "adminClient" in spec
               else kraft.admin if kraft is not None else None),
        kraft=kraft,
        renamed_from=str(_meta(doc)["renamedFrom"]) if "renamedFrom" in _meta(doc) else None,
        placement=_placement(doc, spec.get("placement") or {}),
        reassignment=_reassignment(doc, spec.get("reassignment") or {}),
    )


def _placement(doc: Document, raw: Mapping[str, Any]) -> PlacementSpec:
    return PlacementSpec(
        default=str(raw.get("default", "keep")), drain=tuple(int(b) for b in raw.get("drain") or ()),
        source=doc.mark(("spec", "placement")) if raw else None,
        drain_source=doc.mark(("spec", "placement", "drain")) if "drain" in raw else None)


def _reassignment(doc: Document, raw: Mapping[str, Any]) -> ReassignmentSpec:
    most = raw.get("maxMovingBytes")
    return ReassignmentSpec(
        throttle=int(raw.get("throttle", DEFAULT_THROTTLE)),
        max_partitions=int(raw.get("maxMovingPartitions", DEFAULT_MAX_MOVING_PARTITIONS)),
        max_bytes=None if most is None else int(most),
        source=doc.mark(("spec", "reassignment")) if raw else None)


def _zookeeper(doc: Document, zk: Mapping[str, Any]) -> ZooKeeperSpec:
    auth = zk.get("auth") or {}
    return ZooKeeperSpec(
        connect=str(zk["connect"]),
        auth_scheme=auth.get("scheme"),
        auth_credentials=secret_ref(auth["credentials"]) if "credentials" in auth else None,
        session_timeout_s=float(zk.get("sessionTimeoutSeconds", 30.0)),
        set_acl=bool(zk.get("setAcl", False)),
        reconciler_path=str(zk.get("reconcilerPath", "/reconciler")),
        tls=_tls(zk["tls"]) if "tls" in zk else None,
        source=doc.mark(("spec", "zookeeper", "connect")),
    )


def _kraft(doc: Document, raw: Mapping[str, Any]) -> KraftSpec:
    """spec.kraft: the Admin API connection (spec.adminClient's shape) and the plaintext-password consent."""
    connection = {k: v for k, v in raw.items() if k not in ("allowPlaintextPasswords", "stateTopic", "localState")}
    admin = replace(_admin_client(doc, connection), source=doc.mark(("spec", "kraft", "bootstrapServers")))
    return KraftSpec(admin, bool(raw.get("allowPlaintextPasswords", False)), doc.mark(("spec", "kraft")),
                     state_topic=str(raw.get("stateTopic", DEFAULT_STATE_TOPIC)),
                     local_state=bool(raw.get("localState", False)))


def _admin_client(doc: Document, raw: Mapping[str, Any]) -> AdminClientSpec:
    servers = raw["bootstrapServers"]
    sasl = raw.get("sasl")
    return AdminClientSpec(
        bootstrap_servers=tuple(str(s).strip() for s in (servers.split(",") if isinstance(servers, str) else servers)),
        security_protocol=str(raw.get("securityProtocol", "PLAINTEXT")),
        tls=_tls(raw["tls"]) if "tls" in raw else None,
        sasl=None if sasl is None else SaslSpec(str(sasl["mechanism"]), str(sasl["username"]),
                                                secret_ref(sasl["password"])),
        source=doc.mark(("spec", "adminClient", "bootstrapServers")),
    )


def _tls(raw: Mapping[str, Any]) -> TlsSpec:
    return TlsSpec(
        ca_file=str(raw["ca"]) if "ca" in raw else None,
        cert_file=str(raw["certificate"]) if "certificate" in raw else None,
        key_file=SecretRef(file=str(raw["key"]["file"])) if "key" in raw else None,
        key_password=secret_ref(raw["keyPassword"]) if "keyPassword" in raw else None,
        verify_hostname=bool(raw.get("verifyHostname", True)),
    )


def _no_mark(key: str) -> SourceRef:
    raise AssertionError(f"no own values to locate ({key})")


def _broker_name(raw: Any) -> str:
    return DEFAULT_ENTITY if str(raw) in ("default", DEFAULT_ENTITY) else str(int(str(raw)))


def _check_owners(sources: ClusterSources, diags: list[Diagnostic]) -> None:
    """A document's `meta.cluster`, when given, must name the directory it lives in."""
    for doc in sources.documents:
        owner = _meta(doc).get("cluster")
        if owner is not None and owner != sources.name:
            diags.append(
                Diagnostic(
                    "error",
                    f"meta.cluster {owner!r} does not match the directory it is in ({sources.name!r})",
                    doc.mark(("meta", "cluster")),
                    "cluster",
                )
            )


def _broker_entities(
    repo: Repository, sources: ClusterSources, fleet: FleetLayer, catalog: Catalog, version: str,
    declared: Declared, diags: list[Diagnostic],
) -> dict[str, dict[str, DesiredValue]]:
    """Declare brokers/<default> and brokers/<id> (fleet defaults layered under `<default>` only, as Kafka
    applies `<default>` to every broker) and return each broker document's static server.properties."""

    def broker_lookup(key: str) -> Any:
        return catalog.resolve_broker(key, version).base

    static: dict[str, dict[str, DesiredValue]] = {}
    broker_docs = [d for d in sources.documents if _kind(d) == "BrokerConfig"]
    if fleet.broker_defaults and not any(_broker_name(_meta(d).get("broker")) == DEFAULT_ENTITY for d in broker_docs):
        config = layer_config(fleet.broker_defaults, None, _no_mark, broker_lookup, diags, "brokers/<default>")
        declared.add_entity(EntityRef("brokers", DEFAULT_ENTITY), config, None, diags)
    for doc in broker_docs:
        name = _broker_name(_meta(doc)["broker"])
        inherited = fleet.broker_defaults if name == DEFAULT_ENTITY else {}
        config = layer_config(
            inherited, _spec(doc).get("config") or {}, marker(doc, "spec", "config"), broker_lookup, diags,
            f"brokers/{name}",
        )
        declared.add_entity(EntityRef("brokers", name), config, doc.mark(("meta", "broker")), diags)
        static_file = (_spec(doc).get("static") or {}).get("file")
        if static_file is not None:
            path = (Path(repo.root) / doc.file).parent / str(static_file)
            props, prop_diags = read_properties(path, repo.display(path), repo.root,
                                                doc.mark(("spec", "static", "file")), str(static_file))
            diags.extend(prop_diags)
            static[name] = {k: DesiredValue(v, src) for k, (v, src) in props.items()}
    return static


def _frozen_static(static: dict[str, dict[str, DesiredValue]]) -> Mapping[str, Mapping[str, DesiredValue]]:
    return frozen_map({k: frozen_map(v) for k, v in static.items()})


def _cluster_header(
    repo: Repository, sources: ClusterSources, diags: list[Diagnostic]
) -> tuple[ClusterSpec, FleetLayer] | None:
    """The cluster's spec and its fleet layer (None without a usable Cluster document); owners checked."""
    cluster_doc = _cluster_doc(sources, diags)
    if cluster_doc is None:
        return None
    labels = {str(k): str(v) for k, v in (_meta(cluster_doc).get("labels") or {}).items()}
    fleet, fleet_diags = fleet_layer(repo.fleet, labels)
    diags.extend(fleet_diags)
    _check_owners(sources, diags)
    return _cluster_spec(cluster_doc, fleet), fleet


def build_settings(
    repo: Repository, sources: ClusterSources, catalog: Catalog | None = None
) -> tuple[ApplySettings | None, list[Diagnostic]]:
    """What `apply PLAN` needs of one cluster: its spec and the brokers' static server.properties, from
    sources loaded with `APPLY_KINDS` only. Topics, listeners and quotas are not built: the plan says what to
    write, and its id was checked."""
    diags: list[Diagnostic] = []
    header = _cluster_header(repo, sources, diags)
    if header is None:
        return None, diags
    cluster, fleet = header
    static = _broker_entities(repo, sources, fleet, catalog or load_catalog(), cluster.kafka_version, Declared(),
                              diags)
    return ApplySettings(cluster, _frozen_static(static)), diags


def build_desired(
    repo: Repository, sources: ClusterSources, catalog: Catalog | None = None
) -> tuple[DesiredState | None, list[Diagnostic]]:
    """Assemble one cluster's desired state. Returns None when there is no usable Cluster document."""
    catalog = catalog or load_catalog()
    diags: list[Diagnostic] = []
    header = _cluster_header(repo, sources, diags)
    if header is None:
        return None, diags
    cluster, fleet = header
    version = cluster.kafka_version
    declared = Declared()
    static = _broker_entities(repo, sources, fleet, catalog, version, declared, diags)
    listeners = build_listeners(sources.documents, cluster, catalog, declared, diags)
    topics = build_topics(sources.documents, fleet, catalog, version, diags)
    build_quotas(sources.documents, catalog, declared, diags)
    acls = build_acls(sources.documents, diags)
    build_scram_users(sources.documents, declared, diags)  # beside the users' quotas: after them
    features = build_features(sources.documents, catalog, version, declared, diags)
    build_groups(sources.documents, catalog, version, declared, diags)
    build_client_metrics(sources.documents, catalog, version, declared, diags)

    entities = {
        ref: DesiredEntity(ref, frozen_map(config), declared.sources.get(ref))
        for ref, config in declared.configs.items()
    }
    state = DesiredState(
        cluster=cluster,
        entities=frozen_map(entities),
        topics=frozen_map(topics),
        listeners=listeners,
        static=_frozen_static(static),
        acls=acls,
        features=features,
    )
    return state, diags


def build_all(
    repo: Repository, names: Sequence[str] = ()
) -> tuple[dict[str, DesiredState], list[Diagnostic]]:
    catalog = load_catalog()
    states: dict[str, DesiredState] = {}
    diags: list[Diagnostic] = []
    for name, sources in repo.clusters.items():
        if names and name not in names:
            continue
        state, problems = build_desired(repo, sources, catalog)
        diags.extend(problems)
        if state is not None:
            states[name] = state
    return states, diags


__all__ = ["SourceRef", "build_all", "build_desired", "build_settings"]
