"""The owner record of a ZooKeeper target: which cluster directory manages this ensemble + chroot, in the znode
`<reconcilerPath>/owner` (JSON: cluster, claimedBy, time, planId), beside the apply lock and the audit
entries. Claiming is ZooKeeper's own compare-and-set: `create` fails when the node exists, so of two claims
exactly one is recorded. Never in a Kafka namespace (`lock.refuse_kafka_namespace`)."""

from __future__ import annotations

import json
from contextlib import suppress

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from reconciler.backend import Owner

OWNER_NODE = "owner"


def owner_path(reconciler_path: str) -> str:
    return f"/{reconciler_path.strip('/')}/{OWNER_NODE}"


def read_owner(client: KazooClient, reconciler_path: str) -> Owner | None:
    return _read(client, reconciler_path)[0]


def _read(client: KazooClient, reconciler_path: str) -> tuple[Owner | None, int | None]:
    """The recorded owner and the version of its znode (None, None: no record)."""
    try:
        data, stat = client.retry(client.get, owner_path(reconciler_path))
    except NoNodeError:
        return None, None
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}

    def text(key: str) -> str:
        value = body.get(key)
        return value if isinstance(value, str) else ""

    return Owner(text("cluster"), text("claimedBy"), text("time"), text("planId") or None), stat.version


def claim_owner(client: KazooClient, reconciler_path: str, owner: Owner, secure_acls: bool,
                replacing: str | None = None) -> Owner:
    """Record `owner` unless an owner is recorded, or in place of the recorded owner when it names `replacing`
    (a set guarded by the version read: of two, one wins); the one recorded either way."""
    from reconciler.zk import txn  # the writer's modules: loaded by a claim only
    from reconciler.zk.lock import refuse_kafka_namespace

    path = owner_path(reconciler_path)
    refuse_kafka_namespace(client, path)
    acls = txn.Acls(secure_acls)
    body = {"cluster": owner.cluster, "claimedBy": owner.claimed_by, "time": owner.time, "planId": owner.plan_id}
    data = json.dumps(body, sort_keys=True).encode("utf-8")
    if replacing is not None:
        txn.ensure_paths(client, txn.ancestors(path), acls)
        recorded, version = _read(client, reconciler_path)
        if recorded is not None and version is not None and recorded.cluster == replacing:
            with suppress(BadVersionError, NoNodeError):  # changed meanwhile: what is recorded decides
                client.retry(client.set, path, data, version=version)
            return read_owner(client, reconciler_path) or owner
    try:  # the apply's lock made reconcilerPath: its parents are ensured only when missing
        try:
            client.retry(client.create, path, data, acls(path))
        except NoNodeError:
            txn.ensure_paths(client, txn.ancestors(path), acls)
            client.retry(client.create, path, data, acls(path))
    except NodeExistsError:  # another claim was first (or this one, retried after a lost reply): what is recorded
        recorded = read_owner(client, reconciler_path)
        return recorded if recorded is not None else owner
    return owner  # created by this claim: the record
