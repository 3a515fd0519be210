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
"""

from __future__ import annotations

from reconciler.errors import Diagnostic
from reconciler.model import ClusterSettings

KAFKA_ROOT_PATHS = (
    "/admin", "/brokers", "/cluster", "/config", "/controller", "/controller_epoch", "/isr_change_notification",
    "/latest_producer_id_block", "/log_dir_event_notification", "/delegation_token", "/kafka-acl",
    "/kafka-acl-changes", "/kafka-acl-extended", "/kafka-acl-extended-changes", "/migration", "/feature",
    "/consumers", "/zookeeper",
)
# Bounds of values the reconciler itself computes with (Kafka's own defaults are far inside them).
MAX_ENCODER_ITERATIONS = 600_000
ENCODER_KEY_LENGTHS = (128, 192, 256)


def kafka_namespace_problem(path: str) -> str | None:
    """Why `path` may not hold the reconciler's znodes, or None when it may."""
    parts = [p for p in path.split("/") if p]
    if not path.startswith("/") or not parts:
        return f"reconcilerPath must be an absolute znode path below the root, not {path[:100]!r}"
    if any(p in (".", "..") for p in parts):
        return "reconcilerPath may not contain '.' or '..' segments"
    top = "/" + parts[0]
    if top in KAFKA_ROOT_PATHS:
        return (f"reconcilerPath {path[:100]!r} is inside {top}, which Kafka owns (kafka.zk.ZkData): the "
                "apply lock and audit entries would be read by brokers as their own; use e.g. /reconciler")
    return None


def check_cluster(state: ClusterSettings) -> list[Diagnostic]:
    cluster = state.cluster
    diags: list[Diagnostic] = []
    problem = kafka_namespace_problem(cluster.zookeeper.reconciler_path)
    if problem is not None:
        diags.append(Diagnostic("error", problem, cluster.source, "reconcilerPath"))
    diags.extend(_static_encoder_values(state))
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
