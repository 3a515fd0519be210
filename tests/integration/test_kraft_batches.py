"""Issue 44: config changes on a KRaft cluster go in shared IncrementalAlterConfigs requests (as Kafka's Admin client
sends them), judged by a real Kafka 4.x node (tests/kraftbrokers.py) through kafka-python's own Admin API: every
topic of every request takes its value, and a resource the cluster refuses within a shared request is named, with
nothing of the plan written."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from reconciler.kraft import operations
from reconciler.kraft.admin import KraftAdmin
from tests.integration.brokerrepo import cli
from tests.integration.test_kraft_backend import admin, apply, eventually, kraft_repo
from tests.kraftbrokers import KraftCluster

BROKERS = ('apiVersion: reconciler/v1\nkind: BrokerConfig\nmeta: {broker: default}\nspec:\n  config:\n'
           '    min.insync.replicas: "1"\n')


def topics_doc(prefix: str, count: int, retention: int) -> str:
    lines = [f"    {prefix}-{i:02d}: {{config: {{retention.ms: \"{retention}\"}}}}" for i in range(count)]
    return ("apiVersion: reconciler/v1\nkind: Topics\nmeta: {name: batch}\nspec:\n"
            "  defaults: {partitions: 1, replicationFactor: 1}\n  topics:\n" + "\n".join(lines) + "\n")


def retentions(bootstrap: str, names: list[str]) -> dict[str, tuple[str, str]]:
    client = admin(bootstrap)
    try:
        answer = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n, configs={"retention.ms": None})
                                          for n in names], config_filter="all")["topic"]
    finally:
        client.close()
    return {n: (answer[n]["retention.ms"]["value"], answer[n]["retention.ms"]["config_source"]) for n in names}


def test_topic_configs_in_shared_requests_are_all_taken(kraft4: KraftCluster, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, count = f"batch-{uuid.uuid4().hex[:6]}", 23
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 86400000)})
    assert apply(root, "k1", tmp_path) == 0
    monkeypatch.setattr(operations, "CONFIG_BATCH", 10)
    sent: list[int] = []
    real = KraftAdmin.alter_many

    def counted(self: KraftAdmin, resources: Any, validate_only: bool, node: int | None = None) -> Any:
        if not validate_only:
            sent.append(len(resources))
        return real(self, resources, validate_only, node)

    monkeypatch.setattr(KraftAdmin, "alter_many", counted)
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 172800000)})
    assert apply(root, "k1", tmp_path) == 0
    assert sent == [10, 10, 3]  # 23 resources, 10 a request
    got = eventually(lambda: retentions(kraft4.bootstrap, names),
                     lambda r: all(v == ("172800000", "DYNAMIC_TOPIC_CONFIG") for v in r.values()))
    assert got == dict.fromkeys(names, ("172800000", "DYNAMIC_TOPIC_CONFIG"))
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0


def test_a_resource_refused_within_a_shared_request_is_named_and_nothing_is_written(
        kraft4: KraftCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster default (removing min.insync.replicas while ELR is enabled: refused by Kafka 4.x's
    `ConfigurationControlManager`) shares its validateOnly request with five topics' changes: the refusal names
    brokers/<default>, and no topic takes its new value."""
    prefix, count = f"shared-{uuid.uuid4().hex[:6]}", 5
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "topics.yaml": topics_doc(prefix, count, 86400000)})
    assert apply(root, "k1", tmp_path) == 0
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS.replace('    min.insync.replicas: "1"\n',
                                                                  '    log.cleaner.threads: "2"\n'),
                                  "topics.yaml": topics_doc(prefix, count, 172800000)})
    capsys.readouterr()
    assert apply(root, "k1", tmp_path, "--allow-destructive") == 1
    err = capsys.readouterr().err
    assert "brokers/<default> config" in err and "min.insync.replicas cannot be removed while ELR is enabled" in err
    assert not any(f"topics/{n} config" in err for n in names)  # the topics were not refused
    assert retentions(kraft4.bootstrap, names) == dict.fromkeys(names, ("86400000", "DYNAMIC_TOPIC_CONFIG"))


def acls_doc(prefix: str, entries: dict[str, list[str]]) -> str:
    """Topic patterns `{prefix}-t<i>`, each with a keeper entry (so every pattern stays declared) and the
    principals' Read entries listed for it."""
    lines = ["apiVersion: reconciler/v1\nkind: Acls\nmeta: {cluster: k1}\nspec:\n  resources:"]
    for i in range(6):
        topic = f"{prefix}-t{i}"
        who = [f"User:{prefix}-keep", *(f"User:{prefix}-{p}" for p, topics in entries.items() if topic in topics)]
        lines.append(f"    - type: Topic\n      name: {topic}\n      pattern: LITERAL\n      entries:\n"
                     + "\n".join(f"        - {{principal: \"{w}\", operation: Read}}" for w in who))
    return "\n".join(lines) + "\n"


def principal_acls(bootstrap: str, principal: str) -> list[tuple[str, str]]:
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    client = admin(bootstrap)
    try:
        found, _ = client.describe_acls(ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                  ResourcePatternFilter(ResourceType.ANY, None,
                                                                        ACLResourcePatternType.ANY)))
    finally:
        client.close()
    return sorted((a.resource_pattern.resource_name, a.operation.name) for a in found)


def grant(bootstrap: str, principal: str, topic: str, operation: str) -> None:
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    client = admin(bootstrap)
    try:
        answer = client.create_acls([ACL(principal, "*", ACLOperation[operation], ACLPermissionType.ALLOW,
                                         ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))])
        assert not answer["failed"], answer
    finally:
        client.close()


@pytest.fixture
def acl_spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Small batches, and what each ACL request carried."""
    monkeypatch.setattr(operations, "ACL_CREATE_BATCH", 5)
    monkeypatch.setattr(operations, "ACL_DELETE_BATCH", 2)
    monkeypatch.setattr(operations, "PRINCIPAL_FILTER_MIN", 3)
    sent: dict[str, list[Any]] = {"create": [], "delete": [], "principal": []}
    create, delete, matching = KraftAdmin.create_acls, KraftAdmin.delete_acls, KraftAdmin.delete_acls_matching

    def created(self: KraftAdmin, acls: Any) -> Any:
        sent["create"].append(len(acls))
        return create(self, acls)

    def deleted(self: KraftAdmin, filters: Any) -> Any:
        sent["delete"].append(sorted(f.principal for f in filters))
        return delete(self, filters)

    def broad(self: KraftAdmin, acl_filter: Any) -> Any:
        sent["principal"].append(acl_filter.principal)
        return matching(self, acl_filter)

    monkeypatch.setattr(KraftAdmin, "create_acls", created)
    monkeypatch.setattr(KraftAdmin, "delete_acls", deleted)
    monkeypatch.setattr(KraftAdmin, "delete_acls_matching", broad)
    return sent


def test_acl_entries_go_in_bounded_requests_and_a_leaving_principal_with_one_filter(
        kraft4: KraftCluster, tmp_path: Path, acl_spy: dict[str, list[Any]]) -> None:
    """Kafka refuses a CreateAcls/DeleteAcls of more than 10,000 records and scans every ACL for each DeleteAcls
    filter (`AclControlManager`): entries go ACL_CREATE_BATCH / ACL_DELETE_BATCH a request, and a principal whose
    every entry on the cluster the plan removes loses them with one filter on the principal. A principal holding an
    entry the plan does not remove (`other`: one on a pattern no manifest declares; `part`: one it keeps) loses its
    entries by exact filters, and keeps the rest. The node's own DescribeAcls is the judge."""
    prefix = f"aclb-{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-t{i}" for i in range(6)]
    grant(kraft4.bootstrap, f"User:{prefix}-other", f"{prefix}-unmanaged", "WRITE")
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "acls.yaml": acls_doc(prefix, {
        "gone": topics, "part": topics[:4], "other": topics[:3]})})
    assert apply(root, "k1", tmp_path) == 0
    assert acl_spy["create"] == [5, 5, 5, 4]  # 6 keepers + 6 + 4 + 3 entries, 5 a request
    assert principal_acls(kraft4.bootstrap, f"User:{prefix}-gone") == [(t, "READ") for t in topics]
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "acls.yaml": acls_doc(prefix, {"part": topics[:1]})})
    assert apply(root, "k1", tmp_path, "--allow-destructive") == 0
    assert acl_spy["principal"] == [f"User:{prefix}-gone"]
    assert sorted(acl_spy["delete"]) == sorted([[f"User:{prefix}-part"] * 2, [f"User:{prefix}-part"],
                                                [f"User:{prefix}-other"] * 2, [f"User:{prefix}-other"]])
    assert principal_acls(kraft4.bootstrap, f"User:{prefix}-gone") == []
    assert principal_acls(kraft4.bootstrap, f"User:{prefix}-part") == [(topics[0], "READ")]
    assert principal_acls(kraft4.bootstrap, f"User:{prefix}-other") == [(f"{prefix}-unmanaged", "WRITE")]
    assert principal_acls(kraft4.bootstrap, f"User:{prefix}-keep") == [(t, "READ") for t in topics]
    assert cli(root, "plan", "k1", "--detailed-exitcode") == 0


def test_an_entry_added_while_a_principal_filter_runs_is_created_again(
        kraft4: KraftCluster, tmp_path: Path, acl_spy: dict[str, list[Any]], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Between the DescribeAcls that shows a principal holds only the entries the plan removes and the DeleteAcls
    of its filter, someone grants it another: the filter deletes that too (Kafka matches it), so the apply creates
    it again at once and says so; the node still holds it afterwards."""
    prefix = f"aclr-{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-t{i}" for i in range(6)]
    root = kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "acls.yaml": acls_doc(prefix, {"gone": topics})})
    assert apply(root, "k1", tmp_path) == 0
    matching = KraftAdmin.delete_acls_matching

    def granted_meanwhile(self: KraftAdmin, acl_filter: Any) -> Any:
        grant(kraft4.bootstrap, f"User:{prefix}-gone", f"{prefix}-late", "DESCRIBE")
        eventually(lambda: principal_acls(kraft4.bootstrap, f"User:{prefix}-gone"),
                   lambda acls: (f"{prefix}-late", "DESCRIBE") in acls)
        return matching(self, acl_filter)

    monkeypatch.setattr(KraftAdmin, "delete_acls_matching", granted_meanwhile)
    kraft_repo(tmp_path, kraft4, {"brokers.yaml": BROKERS, "acls.yaml": acls_doc(prefix, {})})
    capsys.readouterr()
    assert apply(root, "k1", tmp_path, "--allow-destructive") == 0
    err = capsys.readouterr().err
    assert "created again" in err and f"{prefix}-late" in err
    assert eventually(lambda: principal_acls(kraft4.bootstrap, f"User:{prefix}-gone"),
                      lambda acls: acls == [(f"{prefix}-late", "DESCRIBE")]) == [(f"{prefix}-late", "DESCRIBE")]
