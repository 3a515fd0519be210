"""Which ACLs the cluster's own znodes carry: open, or Kafka's secure ACLs (`zookeeper.set.acl=true`).

Brokers with `zookeeper.set.acl=true` create every znode with `ZkData.defaultAcls(isSecure=true, path)`:
CREATOR_ALL for their SASL/digest identity plus world READ (creator-only on /config/users, /config/brokers
and /delegation_token/tokens), and `ZkSecurityMigrator` converts an existing cluster to the same. An open
cluster has world:anyone ALL. The mode is read from Kafka's persistent paths (`ZkData.PersistentZkPaths`):
a secure cluster gives the world no write permission on them.
"""

from __future__ import annotations

from typing import Literal

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from reconciler.errors import RefusedError
from reconciler.zk.layout import BROKER_IDS_PATH, CONFIG_CHANGES_PATH, CONFIG_ROOT, PERM_READ, TOPICS_PATH
from reconciler.zk.session import where

AclMode = Literal["secure", "open", "unknown"]
PROBED = (CONFIG_CHANGES_PATH, CONFIG_ROOT, BROKER_IDS_PATH, TOPICS_PATH)


def live_acl_mode(client: KazooClient) -> AclMode:
    """"secure" when a Kafka path exists and the world may not change it, "open" when the world may,
    "unknown" when none of them exists yet (a cluster that never started)."""
    for path in PROBED:
        try:
            acls, _ = client.retry(client.get_acls, path)
        except NoNodeError:
            continue
        world = [a for a in acls if a.id.scheme == "world" and a.id.id == "anyone"]
        writable = any(a.perms & ~PERM_READ for a in world)
        return "open" if writable else "secure"
    return "unknown"


def refuse_downgrade(client: KazooClient, cluster: str, set_acl: bool) -> AclMode:
    """Refuse to create open znodes in a cluster secured with Kafka's ACLs (returns the mode found)."""
    mode = live_acl_mode(client)
    if mode == "secure" and not set_acl:
        raise RefusedError(
            f"cluster {cluster}: {where(client, CONFIG_ROOT)} carries Kafka's secure ACLs (brokers with "
            "zookeeper.set.acl=true), but the Cluster manifest does not set zookeeper.setAcl: true, so apply "
            "would create znodes anyone can write; refusing. Set setAcl: true and authenticate as the "
            "brokers' ZooKeeper identity (zookeeper.auth)"
        )
    return mode


def downgrade_warning(mode: AclMode, set_acl: bool) -> str | None:
    if mode == "secure" and not set_acl:
        return ("the cluster's znodes carry Kafka's secure ACLs (zookeeper.set.acl=true) but the manifest "
                "does not set zookeeper.setAcl: true: apply will refuse (it would create world-writable znodes)")
    return None
