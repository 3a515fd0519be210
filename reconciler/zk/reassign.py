"""Where a ZooKeeper-mode cluster keeps the record of the reassignment the reconciler runs
(reconciler/reassign/record.py says what it means): the znode `<reconcilerPath>/reassignment`, beside the apply
lock and the audit entries, created with the ACLs Kafka would give it (`ZkData.defaultAcls`: open, or
creator-all plus world-read with `setAcl`), never inside Kafka's own namespace. Written whole (JSON), deleted once
the reassignment's throttles are removed."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from reconciler.errors import RefusedError
from reconciler.rules.cluster import kafka_namespace_problem
from reconciler.zk.layout import default_acls
from reconciler.zk.session import kazoo_acls

NODE = "reassignment"


def record_path(reconciler_path: str) -> str:
    return f"{reconciler_path.rstrip('/')}/{NODE}"


def read_record(client: KazooClient, reconciler_path: str) -> Mapping[str, Any] | None:
    """The record, None when there is none (or it is not JSON: a hand edit is never trusted)."""
    try:
        data, _ = client.get(record_path(reconciler_path))
    except NoNodeError:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def keep_record(client: KazooClient, reconciler_path: str, record: Mapping[str, Any] | None, secure: bool) -> None:
    """Write the record (None: delete it)."""
    path = record_path(reconciler_path)
    problem = kafka_namespace_problem(path, client.chroot or "")
    if problem is not None:
        raise RefusedError(f"refusing to write {client.chroot or ''}{path}: {problem}")
    if record is None:
        with contextlib.suppress(NoNodeError):
            client.delete(path)
        return
    data = json.dumps(record, separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        client.set(path, data)
    except NoNodeError:
        try:
            client.create(path, data, acl=kazoo_acls(default_acls(secure, path)), makepath=True)
        except NodeExistsError:  # created meanwhile by another pass: the newest write wins, as for set
            client.set(path, data)
