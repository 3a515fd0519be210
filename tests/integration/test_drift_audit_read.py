"""`drift.read_audit`: the newest audit entries, oldest first, read in one multiRead (pipelined gets on an
older server), entries that are not JSON objects skipped."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from reconciler.zk import bulkread
from reconciler.zk.drift import MAX_ENTRIES_READ, read_audit


def _seed(client: KazooClient, count: int) -> list[str]:
    client.ensure_path("/reconciler/audit")
    paths = []
    for i in range(count):
        data = b"not json" if i == count - 2 else b"[1]" if i == count - 3 else json.dumps(
            {"result": "applied", "revision": f"r{i}"}).encode()
        paths.append(client.create("/reconciler/audit/entry-", data, sequence=True))
    return paths


@pytest.mark.parametrize("multi", [True, False])
def test_the_newest_entries_oldest_first_and_only_json_objects(
    zk_client: KazooClient, monkeypatch: pytest.MonkeyPatch, multi: bool
) -> None:
    paths = _seed(zk_client, MAX_ENTRIES_READ + 10)
    if not multi:
        bulkread._NO_MULTI_READ.add(zk_client)
    calls: list[int] = []
    real = bulkread.multiread.read
    monkeypatch.setattr(bulkread.multiread, "read", lambda client, ops, **kw: calls.append(len(ops)) or real(
        client, ops, **kw))
    entries = read_audit(zk_client, "/reconciler")
    newest = paths[-MAX_ENTRIES_READ:]
    assert [e.path for e in entries] == [p for i, p in enumerate(newest) if i not in (47, 48)]
    assert [e.revision for e in entries][-1] == f"r{MAX_ENTRIES_READ + 9}"
    assert all(e.created_ms > 0 for e in entries)
    assert calls == [MAX_ENTRIES_READ]  # one request (multi) or one pipelined round (older server)
    assert read_audit(zk_client, "/elsewhere") == []
