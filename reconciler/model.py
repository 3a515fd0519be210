"""Frozen core types shared by every layer: where values came from, entities, desired and live state.

Values are Kafka's canonical strings (see `values.py`); secrets travel as `SecretRef`, never as plaintext.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import quote, unquote

DEFAULT_ENTITY = "<default>"
ENTITY_TYPES = ("topics", "brokers", "clients", "users", "ips", "groups", "client-metrics", "features")
# KRaft-only config entities (Kafka 4.x; client metrics from 3.7): ConfigResource.Type GROUP, CLIENT_METRICS, and
# the cluster's finalized feature levels as one entity whose keys are feature names (kind Features)
KRAFT_ENTITY_TYPES = frozenset({"groups", "client-metrics", "features"})
FEATURES_ENTITY = "cluster"  # the one features entity: features/cluster
REPLICATION_THROTTLE_KEYS = frozenset(
    {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
)


K = TypeVar("K")
V = TypeVar("V")


def frozen_map(items: Mapping[K, V] | None = None) -> Mapping[K, V]:
    """A read-only view of a copy, sorted by key, so frozen dataclasses stay immutable and deterministic."""
    if not items:
        return MappingProxyType({})
    return MappingProxyType(dict(sorted(items.items(), key=lambda kv: str(kv[0]))))


@dataclass(frozen=True, slots=True, order=True)
class SourceRef:
    """Where something was written: 1-based line and column in a manifest file."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A secret that is not in the manifest: an environment variable, a file, or a Kafka-encoded value.

    `encoded` is ciphertext produced by `reconciler seal` (safe to commit) but is still never printed.
    """

    env: str | None = None
    file: str | None = None
    encoded: str | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.env, self.file, self.encoded)) != 1:
            raise ValueError("a SecretRef names exactly one of env, file, encoded")

    def describe(self) -> str:
        """Safe to print: names the reference, never the value."""
        if self.env is not None:
            return f"secret from env {self.env}"
        if self.file is not None:
            return f"secret from file {self.file}"
        return "sealed (Kafka-encoded) value"

    def __repr__(self) -> str:  # never leak an encoded value through repr/logging
        return f"SecretRef({self.describe()})"


ConfigValue = str | SecretRef


@dataclass(frozen=True, slots=True)
class DesiredValue:
    value: ConfigValue
    source: SourceRef | None = None
    # a SCRAM credential (users/<user> keys SCRAM-SHA-256/512): its iteration count; `value` is the password's
    # SecretRef (secrets/scram.py makes the stored credential from both at apply time)
    iterations: int | None = None

    @property
    def sensitive(self) -> bool:
        return isinstance(self.value, SecretRef)


def sanitize(name: str) -> str:
    """Kafka's `Sanitizer.sanitize` for client ids and user principals (URL-encoding, `*`/`+` escaped)."""
    if name == DEFAULT_ENTITY:
        return name
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return name if name == DEFAULT_ENTITY else unquote(name)


@dataclass(frozen=True, slots=True, order=True)
class EntityRef:
    """A config entity: `brokers/<default>`, `brokers/1`, `topics/orders`, `users/alice/clients/app-1`.

    `name` and `client` are unsanitised (as the user writes them); `path` is the znode path under `/config/`.
    """

    entity_type: str
    name: str
    client: str | None = None  # only for users/<user>/clients/<client>

    def __post_init__(self) -> None:
        if self.entity_type not in ENTITY_TYPES:
            raise ValueError(f"unknown entity type {self.entity_type!r}")
        if self.client is not None and self.entity_type != "users":
            raise ValueError("only users entities have a client part")

    @property
    def path(self) -> str:
        if self.entity_type in ("clients", "users"):
            base = f"{self.entity_type}/{sanitize(self.name)}"
        else:
            base = f"{self.entity_type}/{self.name}"
        return base if self.client is None else f"{base}/clients/{sanitize(self.client)}"

    @property
    def display(self) -> str:
        base = f"{self.entity_type}/{self.name}"
        return base if self.client is None else f"{base}/clients/{self.client}"

    @property
    def quota_kind(self) -> str:
        """Which quota key set applies: clients, users, user-clients (also users/<default>), ips, brokers, topics."""
        if self.entity_type == "users" and (self.client is not None or self.name == DEFAULT_ENTITY):
            return "user-clients"
        return self.entity_type

    @classmethod
    def from_path(cls, path: str) -> EntityRef:
        """Inverse of `path` (e.g. from a notification's `entity_path`)."""
        parts = path.split("/")
        if len(parts) == 2:
            return cls(parts[0], desanitize(parts[1]))
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls("users", desanitize(parts[1]), desanitize(parts[3]))
        raise ValueError(f"not an entity path: {path!r}")

    def __str__(self) -> str:
        return self.display


# --- desired state -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DesiredEntity:
    """The complete desired config of one entity (ownership: undeclared live keys are removed)."""

    ref: EntityRef
    config: Mapping[str, DesiredValue]
    source: SourceRef | None = None


PLACEMENTS = ("keep", "rackAware")  # a topic's `placement:` (reconciler/reassign/placement.py says what each does)


@dataclass(frozen=True, slots=True)
class DesiredTopic:
    name: str
    partitions: int | None
    replication_factor: int | None
    config: Mapping[str, DesiredValue]
    source: SourceRef | None = None
    # where `partitions:` / `replicationFactor:` are written (the topic, its document's defaults, fleet.yaml)
    partitions_source: SourceRef | None = None
    rf_source: SourceRef | None = None
    # `placement:` (None: the cluster's spec.placement.default) and explicit `replicas:` (partition -> replica
    # list, preferred leader first), with where they are written
    placement: str | None = None
    replicas: Mapping[int, tuple[int, ...]] | None = None
    placement_source: SourceRef | None = None
    replicas_source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class DesiredFeature:
    """A finalized feature level a KRaft cluster should have (kind Features): `level` as UpdateFeatures takes it,
    None when `text` names no level of the cluster's Kafka line (the rules say so)."""

    name: str  # metadata.version, kraft.version, group.version, ...
    text: str  # as written: "4.1-IV1", "4.1", "1"
    level: int | None
    source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class PasswordEncoderSpec:
    """The brokers' `password.encoder.*` settings (the secret stays a reference)."""

    secret: SecretRef | None = None
    old_secret: SecretRef | None = None
    key_factory_algorithm: str | None = None  # None: Kafka's default PBKDF2WithHmacSHA512
    cipher_algorithm: str = "AES/CBC/PKCS5Padding"
    key_length: int = 128
    iterations: int = 4096
    source: SourceRef | None = None  # where `secret` is written (diagnostics name it)


@dataclass(frozen=True, slots=True)
class TlsSpec:
    """TLS to ZooKeeper, as Kafka's `zookeeper.ssl.*` (KIP-515) in PEM files: paths relative to cluster.yaml."""

    ca_file: str | None = None  # trusted CAs (zookeeper.ssl.truststore.*); None: the system's
    cert_file: str | None = None  # client certificate chain (zookeeper.ssl.keystore.*)
    key_file: SecretRef | None = None  # its private key: a secret file reference
    key_password: SecretRef | None = None  # decrypts the key (zookeeper.ssl.keystore.password)
    verify_hostname: bool = True  # zookeeper.ssl.endpoint.identification.algorithm=HTTPS (Kafka's default)


@dataclass(frozen=True, slots=True)
class ZooKeeperSpec:
    connect: str  # "host:port,host:port/chroot"
    auth_scheme: str | None = None  # "digest" (addAuth) or "sasl" (SASL DIGEST-MD5, like Kafka's JAAS Client)
    auth_credentials: SecretRef | None = None  # resolves to "user:password"
    session_timeout_s: float = 30.0
    set_acl: bool = False  # create znodes with Kafka's secure ACLs (brokers' zookeeper.set.acl=true)
    reconciler_path: str = "/reconciler"  # lock and audit entries live under this znode (inside the chroot)
    tls: TlsSpec | None = None  # None: plaintext (zookeeper.ssl.client.enable=false)
    source: SourceRef | None = None  # where `connect` is written (errors name it)

    @property
    def hosts(self) -> str:
        return self.connect.split("/", 1)[0]

    @property
    def chroot(self) -> str:
        return "/" + self.connect.split("/", 1)[1] if "/" in self.connect else ""


@dataclass(frozen=True, slots=True)
class SaslSpec:
    """SASL to the brokers, as a Kafka client's sasl.mechanism and JAAS login (PLAIN or SCRAM)."""

    mechanism: str  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str
    password: SecretRef


@dataclass(frozen=True, slots=True)
class AdminClientSpec:
    """The brokers' Admin API, as a Kafka client reaches it: `apply --verify` asks the brokers through it."""

    bootstrap_servers: tuple[str, ...]  # "host:port"
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (security.protocol)
    tls: TlsSpec | None = None  # SSL / SASL_SSL: CA, client certificate (ssl.truststore/keystore in PEM)
    sasl: SaslSpec | None = None  # SASL_PLAINTEXT / SASL_SSL
    source: SourceRef | None = None  # where bootstrapServers is written (errors name it)


@dataclass(frozen=True, slots=True)
class KraftSpec:
    """spec.kraft: a KRaft cluster (Kafka 3.3+ without ZooKeeper, every 4.x), read and written only through its
    Admin API (reconciler/kraft/). `admin`: the bootstrap servers and client security, as spec.adminClient.
    `allow_plaintext_passwords`: the operator accepts that password configs travel over a connection that is
    not TLS (IncrementalAlterConfigs carries them in plaintext; there is no encoder on KRaft). `state_topic`:
    the compacted topic in the cluster holding the reconciler's lock, audit entries and fingerprints
    (kraft/state.py); `local_state`: the operator keeps them in the local audit log instead (one machine)."""

    admin: AdminClientSpec
    allow_plaintext_passwords: bool = False
    source: SourceRef | None = None  # where `kraft:` is written (errors name it)
    state_topic: str = "_kafka-reconciler"  # DEFAULT_STATE_TOPIC
    local_state: bool = False


DEFAULT_STATE_TOPIC = "_kafka-reconciler"


# A cluster with spec.kraft has no ZooKeeper: its `zookeeper` is this empty spec, never dialled (the backend
# seam, reconciler/backend.py, sends every read and write of a KRaft cluster to reconciler/kraft/).
NO_ZOOKEEPER = ZooKeeperSpec(connect="")


@dataclass(frozen=True, slots=True)
class Policy:
    prune: bool = False
    ignore_keys: tuple[str, ...] = ()
    max_deletes: int = 20
    allow_destructive: bool = False
    delete_topics: tuple[str, ...] = ()  # names or shell patterns of undeclared live topics apply may delete
    prune_acls: bool = False  # policy.pruneAcls: remove ACL resources in ZooKeeper that no manifest declares
    prune_scram_users: bool = False  # policy.pruneScramUsers: remove SCRAM credentials no scramUsers entry declares


DEFAULT_THROTTLE = 52_428_800  # bytes/s a reassignment is throttled to when spec.reassignment.throttle is not set
DEFAULT_MAX_MOVING_PARTITIONS = 50


@dataclass(frozen=True, slots=True)
class PlacementSpec:
    """spec.placement: where replicas go. `default`: the placement of topics that declare none ("keep": replicas
    stay where they are unless the replication factor or a drain moves them; "rackAware": every partition also
    spread over as many racks as it has replicas). `drain`: brokers every replica is moved off."""

    default: str = "keep"
    drain: tuple[int, ...] = ()
    source: SourceRef | None = None
    drain_source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class ReassignmentSpec:
    """spec.reassignment: how replica moves run. `throttle`: bytes/s, set as leader.replication.throttled.rate and
    follower.replication.throttled.rate on the brokers involved (as `kafka-reassign-partitions.sh --throttle`);
    `max_partitions` / `max_bytes`: at most that many partitions / bytes moving at once (one step)."""

    throttle: int = DEFAULT_THROTTLE
    max_partitions: int = DEFAULT_MAX_MOVING_PARTITIONS
    max_bytes: int | None = None
    source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    kafka_version: str  # "3.6"
    zookeeper: ZooKeeperSpec
    brokers: tuple[int, ...]
    labels: Mapping[str, str] = field(default_factory=frozen_map)
    password_encoder: PasswordEncoderSpec | None = None
    policy: Policy = field(default_factory=Policy)
    source: SourceRef | None = None
    admin: AdminClientSpec | None = None  # spec.adminClient: None when the manifests name no bootstrap servers
    kraft: KraftSpec | None = None  # spec.kraft: a KRaft cluster (then `zookeeper` is NO_ZOOKEEPER)
    renamed_from: str | None = None  # meta.renamedFrom: the directory name whose target this cluster takes over
    placement: PlacementSpec = field(default_factory=PlacementSpec)  # spec.placement
    reassignment: ReassignmentSpec = field(default_factory=ReassignmentSpec)  # spec.reassignment

    @property
    def is_kraft(self) -> bool:
        return self.kraft is not None


@dataclass(frozen=True, slots=True)
class BrokerListeners:
    """One broker's listeners as declared (names upper-case, as Kafka normalises them)."""

    broker: int
    listeners: tuple[str, ...]  # "NAME://host:port"
    advertised: tuple[str, ...]
    source: SourceRef | None = None
    listener_sources: tuple[SourceRef, ...] = ()  # the line of each entry (diagnostics point at it)
    advertised_sources: tuple[SourceRef, ...] = ()


@dataclass(frozen=True, slots=True)
class ListenersSpec:
    security_protocol_map: Mapping[str, str]
    inter_broker_listener: str | None
    brokers: Mapping[int, BrokerListeners]
    source: SourceRef | None = None
    inter_broker_source: SourceRef | None = None  # the `interBrokerListener:` line


# --- ACLs (Kafka's AclAuthorizer in ZooKeeper mode; layout and formats in zk/acls.py, docs/acls.md) -----------

# SecurityUtils.resourceTypeName: the names in ZooKeeper paths and in manifests
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
ACL_PATTERNS = ("LITERAL", "PREFIXED")


@dataclass(frozen=True, slots=True, order=True)
class AclResource:
    """A resource pattern (Kafka's ResourcePattern): type, pattern type and name (or prefix)."""

    resource_type: str  # one of ACL_RESOURCE_TYPES
    pattern: str  # LITERAL or PREFIXED
    name: str

    @property
    def display(self) -> str:
        return f"{self.resource_type}:{self.pattern}:{self.name}"

    def __str__(self) -> str:
        return self.display


@dataclass(frozen=True, slots=True, order=True)
class AclEntry:
    """One access control entry (Kafka's AclEntry): principal `Type:name`, host, operation, Allow/Deny."""

    principal: str
    host: str
    operation: str  # SecurityUtils.operationName: Read, Write, IdempotentWrite, ...
    permission: str  # Allow or Deny

    @property
    def display(self) -> str:
        return f"{self.permission} {self.principal} {self.operation} from {self.host}"


@dataclass(frozen=True, slots=True)
class DesiredAcls:
    """The complete set of entries one resource pattern should have (entries not listed are removed)."""

    resource: AclResource
    entries: frozenset[AclEntry]
    source: SourceRef | None = None


@dataclass(frozen=True, slots=True)
class LiveAcls:
    resource: AclResource
    entries: frozenset[AclEntry]
    version: int  # the resource znode's version (apply guards on it, as AclAuthorizer.updateResourceAcls)


@dataclass(frozen=True, slots=True)
class DesiredState:
    """Everything the manifests say about one cluster, after fleet layering and listener compilation."""

    cluster: ClusterSpec
    entities: Mapping[EntityRef, DesiredEntity]
    topics: Mapping[str, DesiredTopic]
    listeners: ListenersSpec | None = None
    # static server.properties (validation and impact only, never written): "default" or broker id -> key -> value
    static: Mapping[str, Mapping[str, DesiredValue]] = field(default_factory=frozen_map)
    revision: str | None = None
    acls: Mapping[AclResource, DesiredAcls] = field(default_factory=frozen_map)  # kind Acls (manifests/acls.py)
    features: Mapping[str, DesiredFeature] = field(default_factory=frozen_map)  # kind Features (KRaft)


class ClusterSettings(Protocol):
    """What applying a plan needs of a cluster's manifests: the Cluster (connection, policy, password encoder)
    and the brokers' static server.properties (their encoder parameters). A `DesiredState` is one."""

    @property
    def cluster(self) -> ClusterSpec: ...

    @property
    def static(self) -> Mapping[str, Mapping[str, DesiredValue]]: ...


@dataclass(frozen=True, slots=True)
class ApplySettings:
    """Only a cluster's settings (`apply PLAN` builds no more): not a desired state, so it cannot be diffed."""

    cluster: ClusterSpec
    static: Mapping[str, Mapping[str, DesiredValue]]


# --- live state ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveEntity:
    ref: EntityRef
    config: Mapping[str, str]
    version: int | None  # znode version read; None when the znode does not exist
    has_children: bool = False
    mtime_ms: int | None = None  # the znode's last modification (ZooKeeper's stat), for drift reports


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker: int
    endpoints: tuple[str, ...]  # advertised "NAME://host:port"
    protocol_map: Mapping[str, str]
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class LiveTopic:
    name: str
    assignment: Mapping[int, tuple[int, ...]]  # partition -> replicas (first = preferred leader)
    version: int | None = None
    topic_id: str | None = None

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if 0 in self.assignment else 0


@dataclass(frozen=True, slots=True)
class InFlightMove:
    """A partition under reassignment (KIP-455), as ListPartitionReassignments answers: `replicas` is the whole
    set while it moves (the target, then the replicas being removed), `adding` and `removing` the difference."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """Where it is going: the replicas without those being removed (Kafka lists the target first)."""
        return tuple(b for b in self.replicas if b not in self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        """Where it came from: the replicas without those being added."""
        return tuple(b for b in self.replicas if b not in self.adding)


@dataclass(frozen=True, slots=True)
class ControllerInfo:
    broker: int
    kraft_controller_epoch: int = -1
    version: int | None = None  # znode version, checked by apply like Kafka's KRaft guard does

    @property
    def is_kraft(self) -> bool:
        return self.kraft_controller_epoch > 0


@dataclass(frozen=True, slots=True)
class LiveState:
    cluster: str
    brokers: Mapping[int, BrokerRegistration]
    topics: Mapping[str, LiveTopic]
    entities: Mapping[EntityRef, LiveEntity]
    controller: ControllerInfo | None = None
    # password key -> {"ref", "stored"} fingerprints the newest applies recorded (secrets/fingerprint.py);
    # read only when a plan may need them (passwords to compare, see zk/audit.py)
    applied_passwords: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # /admin/delete_topics children: topics marked for deletion that the controller has not finished deleting
    topics_being_deleted: frozenset[str] = frozenset()
    # /kafka-acl and /kafka-acl-extended/prefixed resource znodes (zk/acls.py); None: not read
    acls: Mapping[AclResource, LiveAcls] | None = None
    # finalized feature levels (KRaft: DescribeFeatures, the ApiVersions answer); None: not read (ZooKeeper)
    features: Mapping[str, int] | None = None
    # replica placement (reconciler/reassign/): partitions under reassignment (ListPartitionReassignments), each
    # partition's size on its leader (DescribeLogDirs), and the record of the reassignment the reconciler runs
    # (its throttles: whose they are); None: not read
    reassignments: Mapping[tuple[str, int], InFlightMove] | None = None
    partition_sizes: Mapping[tuple[str, int], int] | None = None
    reassignment_record: Mapping[str, Any] | None = None


ChangeOp = Literal["+", "~", "-"]
Risk = Literal["safe", "disruptive", "destructive"]
RISK_ORDER: Mapping[str, int] = MappingProxyType({"safe": 0, "disruptive": 1, "destructive": 2})


class Secret:
    """A resolved secret (password plaintext, encoder secret, ZooKeeper credentials).

    Its repr/str never show the value; only `reveal()` does, and only `passwords`, `secrets` and `zk` call it.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret(<redacted>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


RedactedState = Literal["changed", "unchanged", "unknown"]


@dataclass(frozen=True, slots=True)
class SecretState:
    """Whether a live password equals the desired one; computed by an adapter that decodes live passwords, read
    by the diff."""

    state: RedactedState  # "changed" | "unchanged" | "unknown"
    reencode: bool = False  # unchanged but stored with the old secret / undecodable -> re-encode
    rotation: bool = False  # stored with passwordEncoder.oldSecret: re-encoding it rotates the encoder secret


@dataclass(frozen=True, slots=True)
class Redacted:
    """How a sensitive value appears in plans and output: only whether it changes."""

    state: RedactedState

    def __str__(self) -> str:
        return f"(sensitive, {self.state})"
