"""`import` of a KRaft cluster through its Admin API (issue 40 item 4; issue 39 item 11), on a real Kafka 4.1
node (`kraft4`) seeded with Kafka's own client: every entity type (cluster default and per-broker configs, a
password config, topics with configs, user / client / user-client / ip quotas, ACLs) is declared, SCRAM users
are named (all of them) but never written, and the plan on the imported manifests is empty — checked by the
import itself and by a separate `plan --detailed-exitcode`. The node is shared with other tests: whatever
else they left on it is imported too, and must plan empty as well."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    ResourcePattern,
    ResourceType,
    UserScramCredentialUpsertion,
)
from kafka.protocol.admin import AlterClientQuotasRequest

from tests.integration.brokerrepo import cli
from tests.integration.test_kraft_backend import admin
from tests.kraftbrokers import KraftCluster


def _quotas(client: Any, entries: list[tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]]) -> None:
    async def send() -> Any:
        return await client._manager.send(AlterClientQuotasRequest(entries=entries, validate_only=False))

    response = client._manager.run(send)
    assert all(e.error_code == 0 for e in response.entries), response


def _cluster_default(client: Any, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs of `ConfigResource(BROKER, "")`, as `kafka-configs.sh --entity-default` sends it
    (kafka-python's helper wants a broker id)."""
    from kafka.protocol.admin import IncrementalAlterConfigsRequest

    async def send() -> Any:
        return await client._manager.send(IncrementalAlterConfigsRequest(
            resources=[(4, "", [(k, 0, v) for k, v in configs.items()])], validate_only=False))

    response = client._manager.run(send)
    assert all(r.error_code == 0 for r in response.responses), response


def seed(kraft: KraftCluster, tag: str) -> list[str]:
    """Kafka's own client sets one of each kind; returns the SCRAM users made."""
    client = admin(kraft.bootstrap)
    users = [f"{tag}-u{i}" for i in range(7)]
    try:
        client.create_topics([NewTopic(f"{tag}-orders", 3, 1, topic_configs={"retention.ms": "691200000",
                                                                            "cleanup.policy": "compact"}),
                              NewTopic(f"{tag}-plain", 1, 1)])
        _cluster_default(client, {"log.cleaner.threads": "2", "min.insync.replicas": "1"})
        client.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", configs={
                                  "log.cleaner.backoff.ms": "20000",
                                  "listener.name.internal.ssl.key.password": "a password"})],
                             incremental=True, raise_on_unknown=False)
        _quotas(client, [([("user", f"{tag}-u0")], [("producer_byte_rate", 1048576.0, False)]),
                         ([("client-id", f"{tag}-app")], [("consumer_byte_rate", 2097152.0, False)]),
                         ([("user", f"{tag}-u1"), ("client-id", f"{tag}-app")], [("request_percentage", 50.0, False)]),
                         ([("ip", "10.11.12.13")], [("connection_creation_rate", 10.0, False)])])
        client.create_acls([ACL(f"User:{tag}-u0", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                ResourcePattern(ResourceType.TOPIC, f"{tag}-", ACLResourcePatternType.PREFIXED)),
                            ACL(f"User:{tag}-u1", "*", ACLOperation.DESCRIBE, ACLPermissionType.DENY,
                                ResourcePattern(ResourceType.GROUP, f"{tag}-group",
                                                ACLResourcePatternType.LITERAL))])
        answer = client.alter_user_scram_credentials([UserScramCredentialUpsertion(u, "SCRAM-SHA-256", "pw",
                                                                                   iterations=4096) for u in users])
        assert not any(answer.values()), answer
    finally:
        client.close()
    return users


def test_import_of_a_kraft_cluster_plans_empty(kraft4: KraftCluster, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    tag = f"imp{uuid.uuid4().hex[:6]}"
    users = seed(kraft4, tag)
    out = tmp_path / "repo"
    capsys.readouterr()
    assert cli(out, "import", "kimp", "--bootstrap-servers", kraft4.bootstrap, "--kafka-version", "4.1") == 0, \
        capsys.readouterr().err
    err = capsys.readouterr().err
    assert "checked: a plan on the imported manifests shows no changes" in err, err
    scram_note = next(line for line in err.splitlines() if "SCRAM credentials of" in line)
    assert all(f"{u} (SCRAM-SHA-256)" in scram_note for u in users) and " more" not in scram_note, scram_note
    assert "listener.name.internal.ssl.key.password" in err and "never returns" in err
    directory = out / "clusters" / "kimp"
    cluster = (directory / "cluster.yaml").read_text()
    assert f'kraft:\n    bootstrapServers: {kraft4.bootstrap}' in cluster and "zookeeper" not in cluster
    documents = "\n".join(p.read_text() for p in sorted(directory.glob("*.yaml")))
    for expected in (f"{tag}-orders:", "retention.ms: 691200000", "log.cleaner.backoff.ms: 20000",
                     f"{tag}-app:", "10.11.12.13:", f"User:{tag}-u0", "pattern: PREFIXED", "connection_creation_rate"):
        assert expected in documents, expected
    assert "a password" not in documents and "scramUsers" not in documents
    # a separate plan, as an operator runs it after committing the import
    capsys.readouterr()
    assert cli(out, "plan", "kimp", "--detailed-exitcode") == 0
    text = capsys.readouterr().out
    assert "No changes." in text
