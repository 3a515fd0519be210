"""Rules on the Cluster document itself: where the reconciler may keep its own znodes, encoder bounds, and
the static server.properties values the reconciler itself parses.

`reconcilerPath` holds the apply lock's ephemeral children and the audit entries. Kafka owns every
top-level path it creates or watches, and treats their children as its own: the controller parses each
child of `/brokers/ids` as a broker id, the config change listener each child of `/config/changes` as a
`config_change_<seq>` notification. So the path must be outside all of them. The list mirrors Kafka 3.9's
`kafka.zk.ZkData.SecureRootPaths` (AdminZNode, BrokersZNode, ClusterZNode, ConfigZNode, ControllerZNode,
ControllerEpochZNode, IsrChangeNotificationZNode, ProducerIdBlockZNode, LogDirEventNotificationZNode,
DelegationTokenAuthZNode, ExtendedAclZNode, MigrationZNode, FeatureZNode, ++ ZkAclStore.securePaths: the
literal and extended ACL stores and their change paths) plus `ConsumerPathZNode` (`/consumers`, the old
consumers' path) and ZooKeeper's own reserved `/zookeeper`.

One ZooKeeper ensemble holds many clusters, each under its own chroot, and a chroot can be any path: so a
znode is inside *some* cluster's Kafka namespace as soon as any component of its server-side path (chroot
included) is one of those names (`/kafka/pad/brokers/ids` is `/brokers/ids` of the cluster at `/kafka/pad`).
The rule is therefore on components, not on the first one: neither the chroot nor `reconcilerPath` may name
one at any depth. It is checked at validation (at the manifest's line) and again where the reconciler
connects and creates its lock and audit znodes (`zk/session.py`, `zk/lock.py`, `zk/audit.py`).

The connect string is parsed here, once, exactly as kazoo's client will read it (`kazoo.hosts.collect_hosts`:
`urllib.parse.urlsplit("xxx://" + host_port)` per comma-separated entry, the chroot after the first `/`,
`kazoo.protocol.paths.normpath`), in a grammar strict enough that nothing is read two ways: a host is a DNS
name, a dotted-quad IPv4 address or a bracketed IPv6 address, with an optional decimal port in 1..65535.
Userinfo (`a@b`), queries, fragments, percent signs, whitespace, control characters, empty entries, bare IPv6
and the numeric forms a resolver reads as IPv4 (`127.1`, `0x7f.1`, `2130706433`, `010.0.0.1`) are refused.
The allow-list (`allowlist.py`) matches the parsed hosts, and `zk/session.py` hands kazoo the connect
string rebuilt from them (`ConnectString.text`): what is checked is what is dialled.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from reconciler.catalog import Catalog, load_catalog, version_tuple
from reconciler.errors import Diagnostic, clip, printable
from reconciler.model import NO_ZOOKEEPER, AdminClientSpec, ClusterSettings, DesiredState, SourceRef

KAFKA_ROOT_PATHS = (
    "/admin", "/brokers", "/cluster", "/config", "/controller", "/controller_epoch", "/isr_change_notification",
    "/latest_producer_id_block", "/log_dir_event_notification", "/delegation_token", "/kafka-acl",
    "/kafka-acl-changes", "/kafka-acl-extended", "/kafka-acl-extended-changes", "/migration", "/feature",
    "/consumers", "/zookeeper",
)
# Bounds of values the reconciler itself computes with (Kafka's own defaults are far inside them).
MAX_ENCODER_ITERATIONS = 600_000
ENCODER_KEY_LENGTHS = (128, 192, 256)


KAFKA_NAMESPACE_NAMES = frozenset(p.lstrip("/") for p in KAFKA_ROOT_PATHS)
DEFAULT_PORT = 2181
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")  # what inet_aton would read as (part of) an address
_ENTRY = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?")


@dataclass(frozen=True, slots=True)
class ConnectString:
    """A ZooKeeper connect string as kazoo reads it: the (host, port) pairs it dials, and its chroot ("" for
    none). Hosts are lower-case (kazoo's `urlsplit(...).hostname` is); IPv6 hosts without brackets."""

    hosts: tuple[tuple[str, int], ...]
    chroot: str

    @property
    def text(self) -> str:
        """The connect string rebuilt from the parsed parts: what the client is given."""
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts) + self.chroot


def _host(entry: str) -> tuple[str, int]:
    match = _ENTRY.fullmatch(entry)
    if match is None:
        raise ValueError("a host must be NAME[:PORT], IPv4[:PORT] or [IPv6][:PORT] (no user@, ?, #, %, spaces)")
    port = int(match.group("port")) if match.group("port") is not None else DEFAULT_PORT
    if not 1 <= port <= 65535:
        raise ValueError("a port must be 1..65535")
    if match.group("v6") is not None:
        try:
            ipaddress.IPv6Address(match.group("v6"))
        except ValueError:
            raise ValueError("a bracketed host must be an IPv6 address") from None
        return match.group("v6"), port
    name = match.group("name")
    labels = name.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels) or len(name) > 253:
        raise ValueError("a host name must be dot-separated labels of letters, digits and '-'")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        try:
            canonical = str(ipaddress.IPv4Address(name))
        except ValueError:
            canonical = ""
        if canonical != name:
            raise ValueError("a numeric host must be a dotted-quad IPv4 address (resolvers read 127.1, 0x7f.1, "
                             "2130706433 or 010.0.0.1 as other addresses)")
    return name, port


def parse_connect(connect: str) -> ConnectString:
    """`connect` as kazoo's client will read it, or ValueError (a reason, without the text) when it is not in
    the strict grammar of the module docstring."""
    if not connect.isascii() or not connect.isprintable() or any(c.isspace() for c in connect):
        raise ValueError("only printable ASCII without spaces may appear in a connect string")
    hosts_part, _, chroot_part = connect.partition("/")
    entries = hosts_part.lower().split(",")  # host names are case-insensitive; znode names are not
    if any(not e for e in entries):
        raise ValueError("empty host (a leading, trailing or doubled ',')")
    hosts = tuple(_host(entry) for entry in entries)
    return ConnectString(hosts, _chroot(chroot_part))


def _chroot(text: str) -> str:
    """kazoo's `normpath("/" + text)`: empty components dropped; '.' and '..' refused (kazoo raises too)."""
    parts = [p for p in text.split("/") if p]
    if text and not parts:  # kazoo reads `host//` as the chroot "/" and `host/` as none: say neither
        raise ValueError("a chroot must name a znode (`host:port/chroot`), not only slashes")
    if any(p in (".", "..") for p in parts):
        raise ValueError("the chroot may not contain '.' or '..' segments")
    if any(p != p.strip() or not p.isprintable() for p in parts):
        raise ValueError("the chroot may not contain spaces or control characters")
    return "".join("/" + p for p in parts)


def _namespace_component(parts: list[str]) -> tuple[str, str] | None:
    """The first (prefix, name) where `name` is a Kafka namespace root under the chroot `prefix`."""
    for i, part in enumerate(parts):
        if part in KAFKA_NAMESPACE_NAMES:
            return "".join("/" + p for p in parts[:i]), part
    return None


def chroot_problem(chroot: str) -> str | None:
    """Why a cluster may not live at `chroot` (it is inside another cluster's Kafka namespace), or None."""
    found = _namespace_component([p for p in chroot.split("/") if p])
    if found is None:
        return None
    prefix, name = found
    return (f"the chroot {printable(clip(chroot, 100))!r} is inside {prefix}/{name}, which Kafka owns "
            f"(kafka.zk.ZkData) for a cluster at {prefix or '/'} on the same ensemble: this cluster's znodes "
            "would be read by that cluster's brokers as their own")


def kafka_namespace_problem(path: str, chroot: str = "") -> str | None:
    """Why `path` (relative to `chroot`) may not hold the reconciler's znodes, or None when it may.

    Refused: a relative or empty path, '.', '..' or empty segments, and any path whose server-side form
    (chroot + path) has a Kafka namespace root as a component at any depth: the reconciler's znodes would be
    inside the namespace of a cluster whose chroot is the components before it."""
    shown = printable(clip(path, 100))
    parts = path.strip("/").split("/")
    if not path.startswith("/") or not path.strip("/"):
        return f"reconcilerPath must be an absolute znode path below the root, not {shown!r}"
    if any(p in (".", "..", "") for p in parts):
        return "reconcilerPath may not contain '.', '..' or empty segments"
    if any(p != p.strip() or not p.isprintable() for p in parts):
        return "reconcilerPath may not contain spaces or control characters"
    found = _namespace_component([*(p for p in chroot.split("/") if p), *parts])
    if found is None:
        return None
    prefix, name = found
    where = f"/{name}" if not prefix else f"{prefix}/{name}, the /{name} of a cluster whose chroot is {prefix},"
    return (f"reconcilerPath {shown!r}{' (in chroot ' + printable(clip(chroot, 100)) + ')' if chroot else ''} "
            f"is inside {where} which Kafka owns (kafka.zk.ZkData): the apply lock and audit entries would be "
            "read by brokers as their own; use e.g. /reconciler")


def check_cluster(state: ClusterSettings) -> list[Diagnostic]:
    cluster = state.cluster
    zk = cluster.zookeeper
    if cluster.kraft is not None or zk == NO_ZOOKEEPER:
        return _backend(state) + (removed_configs(state, load_catalog()) if isinstance(state, DesiredState) else [])
    diags: list[Diagnostic] = []
    if version_major(cluster.kafka_version) >= 4:  # Kafka 4.0 removed ZooKeeper mode (KIP-833)
        diags.append(Diagnostic("error", f"kafkaVersion {cluster.kafka_version!r} has no ZooKeeper mode (removed in "
                                "Kafka 4.0, KIP-833): describe the cluster with spec.kraft (bootstrapServers) "
                                "instead of spec.zookeeper", cluster.source, "kafkaVersion"))
    where = zk.source or cluster.source
    try:
        chroot = parse_connect(zk.connect).chroot
    except ValueError as exc:
        diags.append(Diagnostic("error", f"zookeeper.connect {printable(clip(zk.connect, 200))!r} is refused: {exc}",
                                where, "connect"))
        chroot = None
    if chroot is not None and (problem := chroot_problem(chroot)) is not None:
        diags.append(Diagnostic("error", problem, where, "connect"))
        chroot = None  # reported once, at the connect string; reconcilerPath is then checked on its own
    if (problem := kafka_namespace_problem(zk.reconciler_path, chroot or "")) is not None:
        diags.append(Diagnostic("error", problem, where, "reconcilerPath"))
    diags.extend(_static_encoder_values(state))
    diags.extend(_admin_client(cluster.admin))
    return diags


_SERVER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?))"
                     r":(?P<port>[0-9]{1,5})")


def parse_bootstrap_server(text: str) -> tuple[str, int]:
    """`host:port` of bootstrap.servers, strictly: a DNS name, a dotted-quad IPv4 or a bracketed IPv6 address,
    a port 1-65535; no scheme, userinfo or blanks (what is allow-listed is exactly what the client dials)."""
    match = _SERVER.fullmatch(text)
    if match is None or not 1 <= int(match.group("port")) <= 65535:
        raise ValueError("not HOST:PORT")
    host = match.group("v6") or match.group("host")
    if match.group("host") and re.fullmatch(r"[0-9.]+", host) and not re.fullmatch(r"(\d{1,3}\.){3}\d{1,3}", host):
        raise ValueError("not a dotted-quad IPv4 address")
    return host.lower(), int(match.group("port"))


def removed_configs(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    """Configs Kafka 4.0 removed, set for a cluster whose kafkaVersion is 4.x: an error at the value's line
    naming what replaces it (`Catalog.removed`; KRaft brokers ignore or refuse them: a topic's
    message.format.version is refused as an unknown topic config by 4.x's `ConfigurationControlManager`)."""
    version = state.cluster.kafka_version
    if version_major(version) < 4:
        return []
    found: list[tuple[str, str, str, SourceRef | None]] = []  # (where, scope, key, line)
    for ref, entity in state.entities.items():
        if ref.entity_type in ("brokers", "topics"):
            scope = "broker" if ref.entity_type == "brokers" else "topic"
            found += [(ref.display, scope, key, value.source) for key, value in entity.config.items()]
    for topic in state.topics.values():
        found += [(f"topics/{topic.name}", "topic", key, value.source) for key, value in topic.config.items()]
    for broker, props in state.static.items():
        found += [(f"broker {broker} server.properties", "broker", key, value.source) for key, value in props.items()]
    diags = []
    for where, scope, key, source in sorted(set(found), key=lambda f: (f[0], f[2])):
        removed = catalog.removed(scope, key, version)
        if removed is not None:
            release, replacement = removed
            diags.append(Diagnostic("error", f"{where}: {key} was removed in Kafka {release} (kafkaVersion "
                                    f"{version!r}); use {replacement}", source, key))
    return diags


def version_major(version: str) -> int:
    digits = version.split(".", 1)[0]
    return int(digits) if digits.isdigit() else 0


def _backend(state: ClusterSettings) -> list[Diagnostic]:
    """Exactly one of spec.zookeeper and spec.kraft (the backend seam picks one), and the KRaft connection as a
    Kafka client would need it. A KRaft cluster has no encoder znode, lock or audit znodes: nothing of
    spec.zookeeper applies to it."""
    cluster = state.cluster
    if cluster.kraft is None:
        return [Diagnostic("error", "spec needs zookeeper (a ZooKeeper-mode cluster) or kraft (a KRaft cluster: "
                           "kraft.bootstrapServers)", cluster.source, "spec")]
    if cluster.zookeeper != NO_ZOOKEEPER:
        return [Diagnostic("error", "spec has both zookeeper and kraft: a cluster is either ZooKeeper-mode or KRaft; "
                           "keep the one that matches its brokers (docs/kraft.md)", cluster.kraft.source, "kraft")]
    if version_tuple(cluster.kafka_version) < (3, 3):  # KRaft production-ready from 3.3 (KIP-833)
        return [Diagnostic("error", f"kafkaVersion {cluster.kafka_version!r}: KRaft clusters are supported from "
                           "Kafka 3.3 (KIP-833)", cluster.source, "kafkaVersion")]
    diags = _admin_client(cluster.kraft.admin, "kraft")
    if cluster.admin is not None and cluster.admin != cluster.kraft.admin:  # `apply --verify` asks elsewhere
        diags.extend(_admin_client(cluster.admin))
    return diags


def _admin_client(spec: AdminClientSpec | None, section: str = "adminClient") -> list[Diagnostic]:
    """spec.adminClient as a Kafka client would need it: every bootstrap server HOST:PORT, SASL exactly with the
    SASL protocols (`SaslChannelBuilder` needs a mechanism and a login), TLS settings only with a TLS one."""
    if spec is None:
        return []
    diags = []
    for server in spec.bootstrap_servers:
        try:
            parse_bootstrap_server(server)
        except ValueError as exc:
            diags.append(Diagnostic("error", f"{section}.bootstrapServers: {printable(clip(server, 100))!r} is "
                                    f"refused: {exc}", spec.source, "bootstrapServers"))
    sasl_protocol = spec.security_protocol.startswith("SASL_")
    if sasl_protocol and spec.sasl is None:
        diags.append(Diagnostic("error", f"{section}.securityProtocol {spec.security_protocol} needs "
                                f"{section}.sasl (mechanism, username, password)", spec.source, "sasl"))
    if not sasl_protocol and spec.sasl is not None:
        diags.append(Diagnostic("error", f"{section}.sasl is set but securityProtocol is {spec.security_protocol}: "
                                "use SASL_SSL or SASL_PLAINTEXT", spec.source, "sasl"))
    if spec.tls is not None and spec.security_protocol not in ("SSL", "SASL_SSL"):
        diags.append(Diagnostic("error", f"{section}.tls is set but securityProtocol is {spec.security_protocol}: "
                                "use SSL or SASL_SSL", spec.source, "tls"))
    return diags


def _static_encoder_values(state: ClusterSettings) -> list[Diagnostic]:
    """`password.encoder.iterations` and `.key.length` of a broker's server.properties are used to encode its
    passwords: they must be integers Kafka accepts (`atLeast(1024)`, `atLeast(8)`) and within what an
    AES key and a bounded derivation allow."""
    diags: list[Diagnostic] = []
    for broker, props in state.static.items():
        for key, low, high in (("password.encoder.iterations", 1024, MAX_ENCODER_ITERATIONS),
                               ("password.encoder.key.length", 8, 256)):
            found = props.get(key)
            if found is None or not isinstance(found.value, str):
                continue
            text = found.value.strip()
            if not (text.isascii() and text.lstrip("+-").isdigit()) or len(text) > 12:
                diags.append(Diagnostic("error", f"broker {broker}: {key} must be an integer", found.source, key))
            elif not low <= int(text) <= high:
                diags.append(Diagnostic("error", f"broker {broker}: {key}={int(text)} is outside {low}..{high}",
                                        found.source, key))
            elif key.endswith("key.length") and int(text) not in ENCODER_KEY_LENGTHS:
                diags.append(Diagnostic("error", f"broker {broker}: {key}={int(text)} is not an AES key length "
                                        "(128, 192 or 256)", found.source, key))
    return diags
