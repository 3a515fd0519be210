"""The ACL resource-name rule (rules/acls.znode_name_problem) against a real ZooKeeper: a name is refused exactly
when ZooKeeper refuses the znode Kafka's ZkAclStore would create for it (`<aclPath>/<Type>/<name>`), or when that
znode would not be a direct child of `<Type>` (a `/`: the authorizer lists the children and reads another name)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadArgumentsError, NoNodeError

from reconciler.rules.acls import znode_name_problem

NAMES = ["orders", "é-group", "a.b", "...", ".", "..", "a/b", "g\U0001F600", "a\x01", "a\x7f", "\ufff0", "\ue000x",
         "with space", "*"]


@pytest.mark.parametrize("name", NAMES)
def test_refused_exactly_when_zookeeper_cannot_hold_it(zk_client: KazooClient, name: str) -> None:
    zk_client.ensure_path("/kafka-acl/Group")
    try:
        created = zk_client.create(f"/kafka-acl/Group/{name}")
        held = zk_client.get_children("/kafka-acl/Group") == [name] and created == f"/kafka-acl/Group/{name}"
    except (ValueError, BadArgumentsError, NoNodeError):  # kazoo's own check of '.'/'..', the server's refusals
        held = False
    assert (znode_name_problem(name) is None) == held
