"""What the brokers report, asked through Kafka's Admin API with kafka-python: each broker's own
DescribeConfigs answer (sent to that broker: a ZooKeeper-mode broker answers for its *running*
configuration, `ZkAdminManager.describeConfigs`), topics' configs and layouts, and client quotas.

kafka-python's records below INFO print requests and responses (SASL exchanges among them): they never pass,
whatever `-v` asks for. Errors name the bootstrap servers and the exception type, never a credential."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reconciler.brokers.endpoints import checked_address, checked_servers, server_text
from reconciler.errors import ReconcilerError
from reconciler.model import AclEntry, AclResource, AdminClientSpec, Secret
from reconciler.verify.expect import quota_key
from reconciler.verify.judge import ReportedConfig, ReportedLayout, Synonym
from reconciler.zk.session import QuietLibraryLog


class BrokerAdminError(ReconcilerError):
    """The brokers' Admin API is unreachable or refused a request (names the bootstrap servers only)."""


# kafka-python logs every refused connection at ERROR: a broker that is down is a verification outcome,
# reported once per key, not a stream of log lines.
_LOG = logging.getLogger("kafka")
_LOG.setLevel(logging.CRITICAL)
_LOG.addFilter(QuietLibraryLog())
for _name in ("kafka.conn", "kafka.client", "kafka.net", "kafka.admin", "kafka.protocol"):
    logging.getLogger(_name).addFilter(QuietLibraryLog())


@dataclass(frozen=True)
class AdminSecurity:
    """The client security of `AdminClientSpec`, resolved: checked PEM files and secrets."""

    ca: Path | None = None
    certificate: Path | None = None
    key: Path | None = None
    key_password: Secret | None = None
    sasl_password: Secret | None = None


def _client_options(spec: AdminClientSpec, security: AdminSecurity) -> dict[str, Any]:
    options: dict[str, Any] = {"security_protocol": spec.security_protocol}
    if spec.security_protocol in ("SSL", "SASL_SSL"):
        options.update(
            ssl_cafile=str(security.ca) if security.ca else None,
            ssl_certfile=str(security.certificate) if security.certificate else None,
            ssl_keyfile=str(security.key) if security.key else None,
            ssl_password=security.key_password.reveal() if security.key_password else None,
            ssl_check_hostname=spec.tls.verify_hostname if spec.tls else True,
        )
    if spec.sasl is not None:
        if security.sasl_password is None:
            raise BrokerAdminError("the brokers' Admin API: SASL needs its password")
        options.update(sasl_mechanism=spec.sasl.mechanism, sasl_plain_username=spec.sasl.username,
                       sasl_plain_password=security.sasl_password.reveal())
    return options


class BrokerAdmin:
    """One Admin API connection to a cluster's brokers."""

    def __init__(self, spec: AdminClientSpec, security: AdminSecurity | None = None, *,
                 request_timeout_s: float = 5.0, connect_timeout_s: float = 30.0) -> None:
        from kafka.admin import KafkaAdminClient  # kafka-python: imported only where the brokers are asked

        servers = [server_text(h, p) for h, p in checked_servers(spec.bootstrap_servers)]
        self.where = "brokers at " + ",".join(servers)
        self.request_timeout_s = request_timeout_s
        # the same checked servers, dial guard and security for this cluster's other clients (kraft/state.py)
        self.client_config: dict[str, Any] = {"bootstrap_servers": servers, "kafka_client": _guarded_client,
                                              **_client_options(spec, security or AdminSecurity())}
        try:
            self._admin = KafkaAdminClient(
                client_id="kafka-reconciler-verify", request_timeout_ms=int(request_timeout_s * 1000),
                reconnect_backoff_max_ms=1000,
                bootstrap_timeout_ms=max(1000, int(connect_timeout_s * 1000)),  # honours --verify-timeout
                **self.client_config)
        except ReconcilerError:
            raise
        except Exception as exc:
            raise BrokerAdminError(f"cannot connect to the {self.where} within {connect_timeout_s:g} s "
                                   f"({type(exc).__name__})") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._admin.close()

    def __enter__(self) -> BrokerAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def live_brokers(self) -> dict[int, str]:
        """The brokers registered now (DescribeCluster): id -> host:port."""
        cluster = self._admin.describe_cluster()
        return {int(b["broker_id"]): f"{b['host']}:{b['port']}" for b in cluster["brokers"]}

    def broker_configs(self, broker: int, keys: Iterable[str]) -> dict[str, ReportedConfig]:
        """Broker `broker`'s own DescribeConfigs answer (with synonyms) for `keys`; a key it does not report is
        absent (a password it could not decode, among others)."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resource = ConfigResource(ConfigResourceType.BROKER, str(broker), configs=dict.fromkeys(keys))
        answer = self._admin.describe_configs([resource], include_synonyms=True, config_filter="all")
        return _configs(answer.get("broker", {}).get(str(broker), {}))

    def topic_configs(self, topic: str, keys: Iterable[str]) -> dict[str, ReportedConfig] | None:
        """A topic's DescribeConfigs answer for `keys`; None when the broker reports no such topic."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict.fromkeys(keys))
        answer = self._admin.describe_configs([resource], include_synonyms=True, config_filter="all")
        configs = answer.get("topic", {}).get(topic)
        return None if not configs else _configs(configs)

    def resource_configs(self, resource_type: str, name: str, keys: Iterable[str]) -> dict[str, ReportedConfig]:
        """A GROUP or CLIENT_METRICS resource's DescribeConfigs answer for `keys` (Kafka 4.x / 3.7+); its entries
        carry no synonyms, so each reports itself as its only layer."""
        from kafka.admin import ConfigResource, ConfigResourceType

        resource = ConfigResource(ConfigResourceType[resource_type], name, configs=dict.fromkeys(keys))
        answer: Mapping[str, Mapping[str, Any]] = self._admin.describe_configs(
            [resource], include_synonyms=True, config_filter="all")
        by_name: Mapping[str, Any] = next(iter(answer.values()), {})  # keyed by the type's name ("group")
        configs = _configs(by_name.get(name, {}))
        return {k: c if c.synonyms else replace(c, synonyms=(Synonym(k, c.source, c.value),))
                for k, c in configs.items()}

    def feature_levels(self) -> dict[str, int]:
        """The finalized feature levels (DescribeFeatures, as kafka-features.sh describe): feature -> level."""
        return {str(name): int(info["finalized"][1]) for name, info in self._admin.describe_features().items()
                if "finalized" in info}

    def topic_layouts(self, topics: Sequence[str]) -> dict[str, ReportedLayout]:
        """Partition count and replication factor of each existing topic of `topics` (Metadata)."""
        out: dict[str, ReportedLayout] = {}
        for topic in self._admin.describe_topics(list(topics)):
            if topic.get("error_code", 0) != 0:
                continue
            partitions = topic.get("partitions") or []
            rf = max((len(p.get("replica_nodes") or p.get("replicas") or ()) for p in partitions), default=0)
            out[str(topic["topic"] if "topic" in topic else topic["name"])] = ReportedLayout(len(partitions), rf)
        return out

    def quotas(self) -> dict[str, dict[str, float]]:
        """Every client quota the brokers report (DescribeClientQuotas, no filter), keyed as
        `verify.expect.quota_key` names an entity."""
        from kafka.protocol.admin import DescribeClientQuotasRequest

        async def ask() -> Any:
            return await self._admin._manager.send(DescribeClientQuotasRequest(components=[], strict=False))

        response = self._admin._manager.run(ask)
        if response.error_code != 0:
            raise BrokerAdminError(f"the {self.where} refused DescribeClientQuotas (error {response.error_code})")
        out: dict[str, dict[str, float]] = {}
        for entry in response.entries:
            key = quota_key((e.entity_type, e.entity_name) for e in entry.entity)
            out[key] = {v.key: float(v.value) for v in entry.values}
        return out

    def scram_credentials(self) -> dict[str, dict[str, int]]:
        """Every user's SCRAM credentials as the brokers report them (DescribeUserScramCredentials, all users):
        user -> mechanism (`SCRAM-SHA-256`) -> iterations. Keys and salts are never part of the answer."""
        answer = self._admin.describe_user_scram_credentials()
        out: dict[str, dict[str, int]] = {}
        for user, result in (answer or {}).items():
            if result.get("error"):
                continue  # a user without credentials (RESOURCE_NOT_FOUND): none reported
            out[str(user)] = {str(info["mechanism"].name).replace("_", "-"): int(info["iterations"])
                              for info in result.get("credential_infos") or ()}
        return out

    def acls(self) -> dict[str, set[str]]:
        """Every ACL the brokers' authorizer reports (DescribeAcls, filter ANY): resource pattern display
        (`Topic:PREFIXED:app-`) -> entry displays (`Allow User:alice Read from *`), in our names (Kafka's
        SecurityUtils.resourceTypeName / operationName / permissionTypeName)."""
        from kafka.admin import (
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePatternFilter,
            ResourceType,
        )

        def camel(name: str) -> str:
            return "".join(part.capitalize() for part in name.split("_"))

        out: dict[str, set[str]] = {}
        for rtype in (t for t in ResourceType if t.name not in ("UNKNOWN", "ANY")):
            wanted = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                               permission_type=ACLPermissionType.ANY,
                               resource_pattern=ResourcePatternFilter(rtype, None, ACLResourcePatternType.ANY))
            found, _ = self._admin.describe_acls(wanted)
            for acl in found:
                pattern = acl.resource_pattern
                resource = AclResource(camel(pattern.resource_type.name), pattern.pattern_type.name,
                                       pattern.resource_name)
                entry = AclEntry(acl.principal, acl.host, camel(acl.operation.name), camel(acl.permission_type.name))
                out.setdefault(resource.display, set()).add(entry.display)
        return out


def _guarded_client(**configs: Any) -> Any:
    """kafka-python's network client, with every connection it opens checked first (`endpoints.checked_address`):
    the addresses the cluster advertises are dialled as well as the bootstrap servers. A refused address fails
    that connection with NotAllowedError, which the request waiting for it raises. (kafka-python's
    `KafkaConnectionManager._build_transport` is where every node's connection starts, bootstrap or not; the
    library is pinned, and tests/integration/test_security_review3_dial.py fails if this stops holding.)"""
    from kafka.net.compat import KafkaNetClient

    client = KafkaNetClient(**configs)
    manager = client._manager
    build = manager._build_transport

    async def checked(node: Any, timeout_at: float | None = None) -> Any:
        checked_address(str(node.host), int(node.port))
        return await build(node, timeout_at=timeout_at)

    manager._build_transport = checked
    return client


def _configs(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, ReportedConfig]:
    return {
        name: ReportedConfig(
            value=entry.get("value"),
            source=str(entry.get("config_source")),
            sensitive=bool(entry.get("is_sensitive")),
            synonyms=tuple(Synonym(str(s["name"]), str(s["source"]), s.get("value"))
                           for s in entry.get("synonyms") or ()),
        )
        for name, entry in raw.items()
    }
