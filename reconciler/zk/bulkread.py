"""Reading znodes by path for apply (the pre-read of every planned znode, parent checks): path -> result.

The multiRead request, its batching, the per-client memory of servers without it and the error mapping are
`multiread.py`'s. Apply's policy on top: any failure of the multiRead path but a NoAuth (an older server,
changed kazoo internals, a timeout, a dropped connection) falls back to the public pipelined reads, retried
on connection loss; exists-checks are always pipelined (multiRead has no exists op).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry, RetryFailedError

from reconciler.errors import LiveStateError
from reconciler.zk import multiread
from reconciler.zk.multiread import EXISTS, GET_DATA
from reconciler.zk.session import ZooKeeperError

log = logging.getLogger(__name__)

CHUNK = multiread.MAX_OPS  # paths per multiRead (a test shrinks it to put several in flight)
_MultiRead = multiread.MultiRead  # names tests and bench/apply.py patch or mark clients in
_NO_MULTI_READ = multiread.NO_MULTI_READ


def read_all(
    client: KazooClient, paths: Iterable[str], timeout_s: float, *, exists: bool = False
) -> dict[str, Any]:
    """path -> (data, stat) (or stat with `exists=True`), None when absent; NoAuth -> LiveStateError."""
    wanted = list(dict.fromkeys(paths))
    if not exists and len(wanted) > 8 and multiread.supported(client):  # a few gets cost no more
        try:
            return _read(client, wanted, GET_DATA, timeout_s, multi=True)
        except LiveStateError:
            raise
        except Exception as exc:  # older server or changed kazoo internals: the public path still works
            log.info("multiRead unavailable (%r); using pipelined reads", exc)
            if isinstance(exc, multiread.MultiReadUnsupported):
                multiread.NO_MULTI_READ.add(client)  # a 3.4/3.5 server also drops the connection: ask once
    try:
        result: dict[str, Any] = KazooRetry(max_tries=4, delay=0.2, backoff=2, max_delay=2.0)(
            _pipelined, client, wanted, timeout_s, exists
        )
    except RetryFailedError as exc:
        raise ZooKeeperError(f"lost the ZooKeeper connection while reading {len(wanted)} znodes") from exc
    return result


def _pipelined(client: KazooClient, wanted: list[str], timeout_s: float, exists: bool) -> dict[str, Any]:
    return _read(client, wanted, EXISTS if exists else GET_DATA, timeout_s, multi=False)


def _read(client: KazooClient, paths: list[str], op: int, timeout_s: float, *, multi: bool) -> dict[str, Any]:
    ops = [(op, path) for path in paths]
    results = multiread.read(client, ops, multi=multi, wait=lambda: timeout_s, max_ops=CHUNK)
    return dict(zip(paths, results, strict=True))
