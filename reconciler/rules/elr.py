"""Eligible leader replicas (KIP-966) and min.insync.replicas, as a Kafka 4.x controller enforces them.

With ELR enabled (the feature eligible.leader.replicas.version at 1 or above) the controller keeps exactly one
cluster-level `min.insync.replicas` (`ConfigurationControlManager`, Kafka 4.0/4.1):

* enabling ELR writes the cluster-level value (the brokers' static one) when there is none, and removes every
  broker-level one (`maybeGenerateElrSafetyRecords`);
* while ELR is enabled, altering a broker-level value is refused ("Broker-level min.insync.replicas cannot be
  altered while ELR is enabled.", `isDisallowedBrokerMinIsrTransition`), and so is removing the cluster-level
  one ("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
  `isDisallowedClusterMinIsrTransition`).

So a cluster with ELR enabled must declare `min.insync.replicas` in brokers/<default> (its value is the one
the cluster has; a plan would otherwise remove it, which Kafka refuses) and none per broker. Offline, ELR is
enabled when the manifests declare the feature (kind Features); at plan time also when the cluster has it
(`check_elr_live`).
"""

from __future__ import annotations

from dataclasses import replace

from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, EntityRef, SourceRef

ELR = "eligible.leader.replicas.version"
MIN_ISR = "min.insync.replicas"
_DEFAULT = EntityRef("brokers", DEFAULT_ENTITY)


def check_elr(state: DesiredState) -> list[Diagnostic]:
    """Offline: the manifests enable ELR (Features: eligible.leader.replicas.version >= 1, a KRaft cluster). A 4.x
    cluster that does not declare the feature probably has it (new 4.1 clusters are formatted with it): a
    broker-level min.insync.replicas is then a warning saying so (plan decides with the cluster's level)."""
    declared = state.features.get(ELR)
    if declared is None and state.cluster.is_kraft and _major(state.cluster.kafka_version) >= 4:
        return [replace(d, severity="warning", message=d.message + ". A 4.x cluster formatted with its release has "
                        "ELR enabled; plan checks the cluster's level (declare the feature in a Features document to "
                        "decide it here)")
                for d in _problems(state, "if the cluster has it", None, require_default=False)]
    if declared is None or declared.level is None or declared.level < 1 or not state.cluster.is_kraft:
        return []
    return _problems(state, f"{ELR} {declared.text} is declared at {declared.source}", declared.source,
                     require_default=True)


def check_elr_live(state: DesiredState, live_level: int | None) -> list[Diagnostic]:
    """Plan time: the cluster has ELR enabled (`live_level` >= 1) and the manifests do not declare the feature.
    A cluster-level value is required where the plan would remove it: brokers/<default> is managed (declared, or
    pruned) without one."""
    if state.features.get(ELR) is not None or live_level is None or live_level < 1:
        return []
    managed = _DEFAULT in state.entities or state.cluster.policy.prune
    return _problems(state, f"the cluster has {ELR}={live_level}", state.cluster.source, require_default=managed)


def _problems(state: DesiredState, why: str, where: SourceRef | None, *, require_default: bool) -> list[Diagnostic]:
    diags = []
    default = state.entities.get(_DEFAULT)
    ignored = MIN_ISR in state.cluster.policy.ignore_keys  # no plan touches it then
    if require_default and not ignored and (default is None or MIN_ISR not in default.config):
        diags.append(Diagnostic(
            "error",
            f"ELR is enabled ({why}): declare min.insync.replicas in brokers/<default> (BrokerConfig default). The "
            "cluster keeps one cluster-level value (the controller writes it when ELR is enabled) and refuses to "
            "remove it: \"Cluster-level min.insync.replicas cannot be removed while ELR is enabled.\" "
            "(ConfigurationControlManager, KIP-966)",
            default.source if default is not None and default.source is not None else where, MIN_ISR))
    for ref, entity in sorted(state.entities.items()):
        if ref.entity_type != "brokers" or ref.name == DEFAULT_ENTITY or MIN_ISR not in entity.config:
            continue
        diags.append(Diagnostic(
            "error",
            f"brokers/{ref.name}: a broker-level min.insync.replicas is refused while ELR is enabled ({why}): "
            "\"Broker-level min.insync.replicas cannot be altered while ELR is enabled.\" "
            "(ConfigurationControlManager, KIP-966); set it once, in brokers/<default>",
            entity.config[MIN_ISR].source, MIN_ISR))
    return diags


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0
