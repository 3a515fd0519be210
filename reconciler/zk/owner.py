"""The owner record of a ZooKeeper target: which cluster directory manages this ensemble + chroot, in the znode
`<reconcilerPath>/owner` (JSON: cluster, claimedBy, time, planId), beside the apply lock and the audit
entries. Claiming is ZooKeeper's own compare-and-set: `create` fails when the node exists, so of two claims
exactly one is recorded. Never in a Kafka namespace (`lock.refuse_kafka_namespace`)."""

from __future__ import annotations

import json
from contextlib import suppress

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from reconciler.backend import Owner

OWNER_NODE = "owner"


def owner_path(reconciler_path: str) -> str:
    return f"/{reconciler_path.strip('/')}/{OWNER_NODE}"


def read_owner(client: KazooClient, reconciler_path: str) -> Owner | None:
    try:
        data, _ = client.retry(client.get, owner_path(reconciler_path))
    except NoNodeError:
        return None
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}

    def text(key: str) -> str:
        value = body.get(key)
        return value if isinstance(value, str) else ""

    return Owner(text("cluster"), text("claimedBy"), text("time"), text("planId") or None)


def claim_owner(client: KazooClient, reconciler_path: str, owner: Owner, secure_acls: bool) -> Owner:
    """Record `owner` unless an owner is recorded; the one recorded either way."""
    from reconciler.zk import txn  # the writer's modules: loaded by a claim only
    from reconciler.zk.lock import refuse_kafka_namespace

    path = owner_path(reconciler_path)
    refuse_kafka_namespace(client, path)
    acls = txn.Acls(secure_acls)
    txn.ensure_paths(client, txn.ancestors(path), acls)
    body = {"cluster": owner.cluster, "claimedBy": owner.claimed_by, "time": owner.time, "planId": owner.plan_id}
    with suppress(NodeExistsError):  # another claim was first: it is the owner
        client.retry(client.create, path, json.dumps(body, sort_keys=True).encode("utf-8"), acls(path))
    recorded = read_owner(client, reconciler_path)
    return recorded if recorded is not None else owner
