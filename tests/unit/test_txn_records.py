"""`txn.send` sends the very multi request kazoo's `TransactionRequest` builds (without its per-op checks and
record objects): the same bytes, read back by kazoo's own `Transaction.deserialize`."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kazoo.client import TransactionRequest
from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler
from kazoo.protocol.serialization import Transaction, int_struct, multiheader_struct, stat_struct
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from reconciler.zk.txn import Multi, Op, send

ACL = [make_digest_acl("kafka", "secret", all=True)]
OPS = [
    Op("create", "/config/topics/orders", b'{"version":1}', acl=ACL),
    Op("create", "/config/changes/config_change_", b"{}", acl=ACL, sequential=True),
    Op("set", "/config/clients/app-1", b"{}", version=4),
    Op("delete", "/config/users/alice", version=2),
    Op("check", "/controller", 7),
    Op("set", "/config/topics/.hidden", b"{}", version=1),  # normalised by kazoo: sent as kazoo sends it
    Op("create", "/config/topics//x", b"", acl=ACL),
    Op("create", "/config/topics/caf\u00e9", b'{"v":"\xc3\xa9"}', acl=OPEN_ACL_UNSAFE),  # non-ASCII; world ACL
    Op("create", "/config/changes/config_change_", b'{"n":2}', acl=ACL, sequential=True),  # the cached ACL again
    Op("delete", "/config/topics/orders", version=-1),
]


class Recorder:
    def __init__(self, chroot: str) -> None:
        self.chroot, self.default_acl, self.handler = chroot, None, SequentialThreadingHandler()
        self.sent: list[Any] = []
        self.logger = logging.getLogger(__name__)

    def _call(self, request: Any, result: AsyncResult) -> None:
        self.sent.append(request)
        count = request.count if isinstance(request, Multi) else len(request.operations)
        result.set([True] * count)

    def transaction(self) -> TransactionRequest:
        return TransactionRequest(self)


@pytest.mark.parametrize("chroot", ["", "/kafka/big", "/kafka/big/"])
def test_send_builds_what_kazoo_builds(chroot: str) -> None:
    ours = Recorder(chroot)
    assert send(ours, OPS) == [True] * len(OPS)  # type: ignore[arg-type]
    theirs = Recorder(chroot)
    tx = theirs.transaction()
    for op in OPS:
        if op.kind == "create":
            tx.create(op.path, op.data, acl=list(op.acl), sequence=op.sequential)
        elif op.kind == "set":
            tx.set_data(op.path, op.data, version=op.version)
        elif op.kind == "delete":
            tx.delete(op.path, version=op.version)
        else:
            tx.check(op.path, op.version)
    tx.commit_async()
    (mine,), (kazoo,) = ours.sent, theirs.sent
    assert mine.type == kazoo.type == 14
    assert mine.serialize() == kazoo.serialize()


def test_a_path_kazoo_refuses_is_refused() -> None:
    with pytest.raises(ValueError, match="relative paths not allowed"):
        TransactionRequest(Recorder("/k")).set_data("/config/clients/..", b"{}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="relative paths not allowed"):
        send(Recorder("/k"), [Op("set", "/config/clients/..", b"{}", version=1)])  # type: ignore[arg-type]


def _reply(*results: tuple[int, bytes]) -> bytes:
    """A multi response as ZooKeeper sends it: each result's header and body, then the closing header."""
    header = multiheader_struct.pack
    return b"".join(header(kind, False, -1) + body for kind, body in results) + header(-1, True, -1)


STAT = stat_struct.pack(*range(11))


@pytest.mark.parametrize("results", [
    [(1, int_struct.pack(6) + b"/x/y/z"), (5, STAT), (2, b""), (13, b""), (1, int_struct.pack(4) + b"/\xc3\xa9z")],
    [(-1, int_struct.pack(0)), (-1, int_struct.pack(-103)), (-1, int_struct.pack(-2))],  # a failed multi
    [(-1, int_struct.pack(code)) for code in (-101, -110, -111, -102)],
    [],
])
def test_the_reply_is_read_as_kazoo_reads_it(results: list[tuple[int, bytes]]) -> None:
    buf = b"\0" * 5 + _reply(*results)
    theirs, ours = Transaction.deserialize(buf, 5), Multi.deserialize(buf, 5)
    assert len(ours) == len(theirs) == len(results)
    for mine, kazoo in zip(ours, theirs, strict=True):
        assert type(mine) is type(kazoo) if isinstance(kazoo, Exception) else mine is True
