"""The Admin API requests a KRaft cluster is read and written with (kafka-python's protocol classes, on the
connection `brokers.admin.BrokerAdmin` opens: the same allow-list, TLS and SASL). Raw requests where
kafka-python's helpers would lose what we need: DescribeConfigs and IncrementalAlterConfigs for the cluster
default (`ConfigResource(BROKER, "")`, which kafka-python's helpers refuse: they parse a broker id), and every
answer's per-resource error code and message (a refusal names the entity; `validateOnly` answers are reports).

Kafka's own client does the same requests: `KafkaAdminClient.describeConfigs` / `incrementalAlterConfigs` (a
BROKER resource with an id goes to that broker, others to any), `createTopics`, `createPartitions`,
`alterClientQuotas`, `createAcls` / `deleteAcls`, `alterUserScramCredentials`. Error messages pass through
`errors.printable` where they are shown; no request or answer here carries a password back."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.brokers.admin import BrokerAdmin, BrokerAdminError

# org.apache.kafka.common.config.ConfigResource.Type and DescribeConfigsResponse.ConfigSource ids
TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
# AlterConfigOp.OpType
SET, DELETE = 0, 1


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    """One entry of a DescribeConfigs answer: its value (None when sensitive), source and synonyms."""

    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: tuple[tuple[str, str | None, int], ...]  # (name, value, source), highest precedence first


@dataclass(frozen=True, slots=True)
class Refusal:
    """A resource (or topic, quota entity, user, ACL) the cluster refused, with Kafka's error name and message;
    `index`: its position in the request sent (-1 when the answer does not say)."""

    what: str
    error: str
    message: str
    index: int = -1


RESOURCE_MS = 5  # more request timeout per resource of a large request (`_send`)
UNBOUNDED = 10_000  # an answer of unknown size (every topic, ACL, quota) gets the time of this many resources
# more request timeout per DeleteAcls filter: the controller compares each filter with every ACL of the cluster
# (AclControlManager.deleteAclsForFilter): one exact filter took ~117 ms on a node of 120,000 ACLs (bench/access.py,
# 2026-11-28), ~0.7 us a comparison; 1 s a filter covers ~1.4 million ACLs
DELETE_FILTER_MS = 1000
_ANY = 1  # ResourceType.ANY, PatternType.ANY, AclOperation.ANY, AclPermissionType.ANY


@dataclass(frozen=True)
class _AclNames:
    types: dict[int, str]
    patterns: dict[int, str]
    operations: dict[int, str]
    permissions: dict[int, str]


@functools.cache
def _acl_names() -> _AclNames:
    """Kafka's codes -> our names (`Topic`, `LITERAL`, `IdempotentWrite`, `Allow`), from kafka-python's enums."""
    from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

    def camel(name: str) -> str:
        return "".join(part.capitalize() for part in name.split("_"))

    return _AclNames({t.value: camel(t.name) for t in ResourceType},
                     {t.value: t.name for t in ACLResourcePatternType},
                     {t.value: camel(t.name) for t in ACLOperation},
                     {t.value: camel(t.name) for t in ACLPermissionType})


def _error_name(code: int) -> str:
    import kafka.errors as errors

    return str(errors.for_code(code).__name__)


class KraftAdmin(BrokerAdmin):
    """One Admin API connection to a KRaft cluster, for reading its dynamic state and writing a plan."""

    def _send(self, request: Any, node: int | None = None, resources: int = 0, per_resource_ms: int = RESOURCE_MS
              ) -> Any:
        """One request; one of many `resources` gets more time (RESOURCE_MS each beyond the connection's request
        timeout): on a busy broker a DescribeConfigs of 10,000 topics took longer than the 15 s a small request
        gets. (Split into requests of 1,000 it took 1.5x as long, pipelined as long as one request.)"""
        manager = self._admin._manager
        timeout_ms = int(self.request_timeout_s * 1000) + per_resource_ms * resources if resources else None

        async def ask() -> Any:
            return await manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

        return manager.run(ask)

    def cluster(self) -> tuple[str | None, int, dict[int, tuple[str, int]]]:
        """DescribeCluster: cluster id, the controller id it reports, broker id -> (host, port)."""
        answer = self._admin.describe_cluster()
        brokers = {int(b["broker_id"]): (str(b["host"]), int(b["port"])) for b in answer["brokers"]}
        return answer.get("cluster_id"), int(answer.get("controller_id") or -1), brokers

    def _describe(self, resource_type: int, names: Sequence[str], node: int | None, synonyms: bool) -> list[Any]:
        """DescribeConfigs of every resource in one request: the answer's results (refused ones raise, a topic
        deleted since it was listed is left out)."""
        from kafka.protocol.admin import DescribeConfigsRequest

        response = self._send(DescribeConfigsRequest(
            resources=[(resource_type, name, None) for name in names], include_synonyms=synonyms), node, len(names))
        results = []
        for result in response.results:
            if result.error_code != 0:
                if resource_type == TOPIC and _error_name(result.error_code) == "UnknownTopicOrPartitionError":
                    continue  # deleted since it was listed
                raise BrokerAdminError(f"the {self.where} refused DescribeConfigs for {result.resource_name!r} "
                                       f"({_error_name(result.error_code)})")
            results.append(result)
        return results

    def describe_configs(self, resource_type: int, names: Sequence[str],
                         node: int | None = None) -> dict[str, list[DescribedConfig]]:
        """Every config of each resource (with synonyms), or BrokerAdminError naming the refused resource."""
        if not names:
            return {}
        return {result.resource_name: [
                    DescribedConfig(c.name, c.value, int(c.config_source), bool(c.is_sensitive),
                                    tuple((s.name, s.value, int(s.source)) for s in c.synonyms or ()))
                    for c in result.configs]
                for result in self._describe(resource_type, names, node, synonyms=True)}

    def topic_overrides(self, names: Sequence[str]) -> dict[str, list[tuple[str, str | None, bool]]]:
        """Each topic's keys set on the topic itself: (name, value, sensitive) of the entries whose source is
        DYNAMIC_TOPIC_CONFIG. A topic's own setting is the highest-precedence source of its keys
        (`ConfigHelper.createTopicConfigEntry`: the entry's source is the first synonym's, the topic's own when
        set), so the entry says it and no synonyms are asked: for 10,000 topics that halves the answer the
        brokers build and the client decodes (330,000 entries and 280,000 synonyms with them)."""
        if not names:
            return {}
        return {result.resource_name: [(c.name, c.value, bool(c.is_sensitive)) for c in result.configs
                                       if c.config_source == DYNAMIC_TOPIC_CONFIG]
                for result in self._describe(TOPIC, names, None, synonyms=False)}

    def alter_configs(self, resource_type: int, name: str, ops: Sequence[tuple[str, int, str | None]],
                      validate_only: bool) -> Refusal | None:
        """IncrementalAlterConfigs for one resource (SET/DELETE per key), sent as Kafka's client sends it (a
        broker id's resource to that broker, which validates what only it can, then forwards to the
        controllers). None when accepted (or, with `validate_only`, when it would be)."""
        from kafka.protocol.admin import IncrementalAlterConfigsRequest

        node = int(name) if resource_type == BROKER and name else None
        response = self._send(IncrementalAlterConfigsRequest(resources=[(resource_type, name, list(ops))],
                                                             validate_only=validate_only), node)
        for result in response.responses:
            if result.error_code != 0:
                return Refusal(name, _error_name(result.error_code), result.error_message or "")
        return None

    def alter_many(self, resources: Sequence[tuple[int, str, Sequence[tuple[str, int, str | None]]]],
                   validate_only: bool, node: int | None = None) -> list[tuple[int, Refusal]]:
        """IncrementalAlterConfigs of several resources in one request, as `KafkaAdminClient.
        incrementalAlterConfigs` sends every resource that is not one broker's (`node`: the broker a broker's own
        resource goes to). Kafka decides each resource on its own, all of its keys or none
        (`ConfigurationControlManager.incrementalAlterConfigs`): (resource type, Refusal) per refused resource,
        whatever the order of the answer."""
        from kafka.protocol.admin import IncrementalAlterConfigsRequest

        if not resources:
            return []
        response = self._send(IncrementalAlterConfigsRequest(
            resources=[(rtype, name, list(ops)) for rtype, name, ops in resources], validate_only=validate_only),
            node, len(resources))
        return [(int(r.resource_type), Refusal(r.resource_name, _error_name(r.error_code), r.error_message or ""))
                for r in response.responses if r.error_code != 0]

    def topics(self) -> list[dict[str, Any]]:
        """Metadata for every topic: name, topic id, partitions with their replicas."""
        return list(self._admin.describe_topics())

    def topic_assignments(self) -> list[tuple[str, str | None, dict[int, tuple[int, ...]]]]:
        """Metadata for every topic, read straight from the answer: (name, topic id, partition -> replicas) of
        each topic the answer does not mark with an error (kafka-python's `describe_topics` first copies the
        whole answer into dicts: a second of a 10,000-topic plan)."""
        from kafka.protocol.metadata import MetadataRequest

        response = self._send(MetadataRequest(topics=None, allow_auto_topic_creation=False), resources=UNBOUNDED)
        return [(t.name, str(t.topic_id) if t.topic_id else None,
                 {p.partition_index: tuple(p.replica_nodes or ()) for p in t.partitions or ()})
                for t in response.topics if t.error_code == 0]

    def topic_exists(self, name: str) -> bool:
        """Whether the topic exists (Metadata for that topic only)."""
        return any(t.get("error_code", 0) == 0 for t in self._admin.describe_topics([name]))

    def create_topics(self, topics: Mapping[str, Mapping[str, Any]], validate_only: bool) -> list[Refusal]:
        """CreateTopics with explicit replica assignments and configs; one Refusal per refused topic."""
        answer = self._admin.create_topics(dict(topics), validate_only=validate_only, raise_errors=False)
        return [Refusal(t["name"], _error_name(t["error_code"]), t.get("error_message") or "")
                for t in answer["topics"] if t["error_code"] != 0]

    def create_partitions(self, increases: Mapping[str, Mapping[str, Any]], validate_only: bool) -> list[Refusal]:
        response = self._admin.create_partitions(dict(increases), validate_only=validate_only, raise_errors=False)
        return [Refusal(r.name, _error_name(r.error_code), r.error_message or "")
                for r in response.results if r.error_code != 0]

    def delete_topics(self, names: Sequence[str]) -> list[Refusal]:
        """DeleteTopics: kafka-python answers a dict ({"topics": [{name, error_code, error_message}]})."""
        answer = self._admin.delete_topics(list(names), raise_errors=False)
        return [Refusal(str(t.get("name")), _error_name(t["error_code"]), t.get("error_message") or "")
                for t in answer.get("topics", ()) if t.get("error_code")]

    def client_quotas(self) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]:
        """DescribeClientQuotas with no filter: (entity components (type, name or None for default), values)."""
        from kafka.protocol.admin import DescribeClientQuotasRequest

        response = self._send(DescribeClientQuotasRequest(components=[], strict=False), resources=UNBOUNDED)
        if response.error_code != 0:
            raise BrokerAdminError(f"the {self.where} refused DescribeClientQuotas "
                                   f"({_error_name(response.error_code)})")
        return [(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                 {v.key: float(v.value) for v in entry.values}) for entry in response.entries]

    def alter_client_quotas(self, entries: Iterable[tuple[Sequence[tuple[str, str | None]],
                                                          Sequence[tuple[str, float, bool]]]],
                            validate_only: bool) -> list[Refusal]:
        """AlterClientQuotas: per entity, (key, value, remove) ops."""
        from kafka.protocol.admin import AlterClientQuotasRequest

        entries = [(list(entity), list(ops)) for entity, ops in entries]
        if not entries:
            return []
        response = self._send(AlterClientQuotasRequest(entries=entries, validate_only=validate_only),
                              resources=len(entries))
        return [Refusal(",".join(f"{e.entity_type}={e.entity_name}" for e in r.entity),
                        _error_name(r.error_code), r.error_message or "")
                for r in response.entries if r.error_code != 0]

    def acl_bindings(self, principal: str | None = None) -> list[tuple[str, str, str, list[tuple[str, str, str, str]]]]:
        """Every ACL binding, in one DescribeAcls whose filter matches everything (resource type, pattern type,
        operation and permission ANY, as `kafka-acls.sh --list` asks; version 3+, which KRaft clusters all speak,
        includes User resources): per resource pattern, (resource type, pattern type, name, [(principal, host,
        operation, permission)]) in our names (Kafka's `SecurityUtils.resourceTypeName` / `operationName` /
        `permissionTypeName`). Read straight from the answer: kafka-python's helper builds an object and three enums
        per binding (100,000 bindings took seconds). `principal`: only that principal's bindings."""
        import kafka.errors as errors
        from kafka.protocol.admin import DescribeAclsRequest

        response = self._send(DescribeAclsRequest(
            min_version=3, resource_type_filter=_ANY, resource_name_filter=None, pattern_type_filter=_ANY,
            principal_filter=principal, host_filter=None, operation=_ANY, permission_type=_ANY), resources=UNBOUNDED)
        if response.error_code != 0:
            raise BrokerAdminError(f"the {self.where} refused DescribeAcls ({_error_name(response.error_code)}: "
                                   f"{errors.for_code(response.error_code).description})")
        names = _acl_names()
        try:
            return [(names.types[r.resource_type], names.patterns[r.pattern_type], r.resource_name,
                     [(a.principal, a.host, names.operations[a.operation], names.permissions[a.permission_type])
                      for a in r.acls]) for r in response.resources]
        except KeyError as exc:
            raise BrokerAdminError(f"the {self.where} answered DescribeAcls with a code this client does not "
                                   f"know ({exc})") from None

    def create_acls(self, acls: Sequence[Any]) -> list[Refusal]:
        """CreateAcls: one result per ACL, in order (kafka-python's helper drops which ACL and the message)."""
        from kafka.protocol.admin import CreateAclsRequest

        if not acls:
            return []
        creations = [self._admin._convert_create_acls_resource_request(acl) for acl in acls]
        response = self._send(CreateAclsRequest(creations=creations), resources=len(creations))
        return [Refusal(str(acls[i].resource_pattern), _error_name(r.error_code), r.error_message or "", i)
                for i, r in enumerate(response.results) if r.error_code != 0]

    def delete_acls(self, filters: Sequence[Any]) -> list[Refusal]:
        """DeleteAcls: one result per filter, in order, and one per ACL it matched."""
        out = []
        for i, (code, message, _) in enumerate(self._delete(filters)):
            if code != 0:
                out.append(Refusal(str(filters[i].resource_pattern), _error_name(code), message or "", i))
        return out

    def delete_acls_matching(self, acl_filter: Any) -> tuple[Refusal | None, list[tuple[str, ...]]]:
        """DeleteAcls of one filter: Kafka's refusal, or every binding it deleted as (resource type, pattern type,
        name, principal, host, operation, permission) in our names."""
        [(code, message, matched)] = self._delete([acl_filter])
        if code != 0:
            return Refusal(str(acl_filter.principal), _error_name(code), message or "", 0), []
        names = _acl_names()
        return None, [(names.types[m.resource_type], names.patterns[m.pattern_type], m.resource_name, m.principal,
                       m.host, names.operations[m.operation], names.permissions[m.permission_type])
                      for m in matched]

    def _delete(self, filters: Sequence[Any]) -> list[tuple[int, str | None, list[Any]]]:
        """Per filter: the first error (the filter's, else one of a matched ACL's) and the ACLs it matched."""
        from kafka.protocol.admin import DeleteAclsRequest

        if not filters:
            return []
        wire = [self._admin._convert_delete_acls_resource_request(f) for f in filters]
        response = self._send(DeleteAclsRequest(filters=wire), resources=len(wire), per_resource_ms=DELETE_FILTER_MS)
        out = []
        for result in response.filter_results:
            matched = list(result.matching_acls or ())
            codes = [(result.error_code, result.error_message)] + [(m.error_code, m.error_message) for m in matched]
            code, message = next(((c, m) for c, m in codes if c != 0), (0, None))
            out.append((code, message, matched))
        return out

    def scram_users(self) -> dict[str, dict[str, int]]:
        return self.scram_credentials()

    def alter_scram(self, alterations: Sequence[Any]) -> list[Refusal]:
        """AlterUserScramCredentials: one result per user (so at most one alteration per user per request)."""
        if not alterations:
            return []
        users = [a.user for a in alterations]
        if len(set(users)) != len(users):
            raise ValueError("one alteration per user per AlterUserScramCredentials request")
        answer = self._admin.alter_user_scram_credentials(list(alterations))
        return [Refusal(user, "refused", message or "", users.index(user)) for user, message in answer.items()
                if message]
