"""Reading many znodes at once: ZooKeeper's multiRead (3.6+) in bounded batches, else pipelined gets.

Why multiRead: kazoo pays ~0.1 ms of Python per request (a wake-up byte, a select and a callback each), so
10,000 pipelined `get`s take about a second; one multiRead of 1,000 znodes costs about as much as one `get`.
Why the private `KazooClient._call`: kazoo has no multiRead API. `MultiRead` is a request object in kazoo's
own protocol (type, serialize, deserialize), queued through `_call` exactly as kazoo's TransactionRequest
sends a multi. An older server (3.4/3.5) answers UNIMPLEMENTED and drops the connection (not the session;
kazoo reconnects): `read` raises `MultiReadUnsupported`, the caller records the client in `NO_MULTI_READ`
so that server is asked only once, and reads again with `multi=False`: one public `get_async` /
`get_children_async` / `exists_async` per znode, all issued before any answer is awaited.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, KazooException, NoAuthError, NoNodeError, UnimplementedError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import int_struct, multiheader_struct, read_buffer, read_string, write_string
from kazoo.protocol.serialization import stat_struct as _stat_struct
from kazoo.protocol.states import ZnodeStat

from reconciler.errors import LiveStateError
from reconciler.zk.session import ZooKeeperError, where

GET_DATA, GET_CHILDREN, EXISTS = 4, 8, 3  # ZooDefs.OpCode; multiRead carries only getData and getChildren
MAX_OPS, MAX_BYTES = 1000, 256 * 1024  # per multiRead: well below the server's 1 MB jute.maxbuffer
Op = tuple[int, str]  # (opcode, path inside the client's chroot)


class MultiRead:
    """ZooKeeper's multiRead request (OpCode 22) in kazoo's request protocol: independent getData /
    getChildren sub-operations, each answered with its result or its own error code."""

    type = 22

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = ops  # server-side paths (chroot included): `_call` sends them as they are

    def serialize(self) -> bytearray:
        buf = bytearray()
        for op, path in self.ops:
            buf += multiheader_struct.pack(op, False, -1) + write_string(path) + b"\0"  # no watch
        buf += multiheader_struct.pack(-1, True, -1)
        return buf

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        while True:
            op, done, _ = multiheader_struct.unpack_from(buf, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op == GET_DATA:
                data, offset = read_buffer(buf, offset)  # None for a znode without data, as `get` returns
                results.append((data, ZnodeStat._make(_stat_struct.unpack_from(buf, offset))))
                offset += _stat_struct.size
            elif op == GET_CHILDREN:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            elif op == -1:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"unexpected multiRead result type {op}")

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG
        return f"MultiRead({len(self.ops)} ops)"


class MultiReadUnsupported(Exception):
    """The server answered multiRead with UNIMPLEMENTED (ZooKeeper < 3.6)."""


class _ClientMemory(weakref.WeakKeyDictionary[KazooClient, bool]):
    """client -> False once its server refused multiRead; weak, so it ends with the client. `add` and `in`
    make it usable as a set too (bench/apply.py marks a client with `add`)."""

    def add(self, client: KazooClient) -> None:
        self[client] = False


NO_MULTI_READ = _ClientMemory()


def supported(client: KazooClient) -> bool:
    """Worth trying multiRead on this client: its server has not refused it yet."""
    return client not in NO_MULTI_READ


def read(
    client: KazooClient,
    ops: Sequence[Op],
    *,
    multi: bool,
    wait: Callable[[], float],
    max_ops: int = MAX_OPS,
    on_batch: Callable[[int], None] | None = None,
) -> list[Any]:
    """One result per op, in order: (data, stat) for GET_DATA, [child names] for GET_CHILDREN, a stat for
    EXISTS; None for an absent znode. Every request is issued before the first answer is awaited, each
    answer for at most `wait()` seconds. `on_batch(n)`: n more answers are in (for progress).

    Raises LiveStateError naming the znode for NoAuth, MultiReadUnsupported (with `multi`, on an old
    server), KazooTimeoutError naming the znode, ZooKeeperError for a malformed multiRead response, and
    any other kazoo error as kazoo raises it.
    """
    if not multi:
        answers = _read_each(client, ops, wait)
        if on_batch is not None:
            on_batch(len(answers))
        return answers
    results: list[Any] = []
    for batch, future in _issue_multi(client, ops, max_ops):
        try:
            replies = future.get(timeout=wait())
        except UnimplementedError:
            raise MultiReadUnsupported() from None
        except KazooTimeoutError:
            raise _timed_out(client, batch[0][1]) from None
        if len(replies) != len(batch):
            raise ZooKeeperError(f"malformed multiRead response ({len(replies)} results for {len(batch)})")
        for (_, path), reply in zip(batch, replies, strict=True):
            if isinstance(reply, KazooException):  # multiRead answers each op with its result or its error
                _raise_unless_absent(client, path, reply)
                reply = None
            results.append(reply)
        if on_batch is not None:
            on_batch(len(batch))
    return results


def _read_each(client: KazooClient, ops: Sequence[Op], wait: Callable[[], float]) -> list[Any]:
    """The fallback: one public kazoo request per znode, all in flight before the first answer is awaited."""
    call = {GET_DATA: client.get_async, GET_CHILDREN: client.get_children_async, EXISTS: client.exists_async}
    pending = [(path, call[code](path)) for code, path in ops]
    results: list[Any] = []
    for path, future in pending:
        try:
            results.append(future.get(timeout=wait()))
        except (NoNodeError, NoAuthError) as exc:
            _raise_unless_absent(client, path, exc)
            results.append(None)
        except KazooTimeoutError:
            raise _timed_out(client, path) from None
    return results


def _raise_unless_absent(client: KazooClient, path: str, error: KazooException) -> None:
    if isinstance(error, NoNodeError):
        return  # e.g. deleted between its parent's listing and this read: absent
    if isinstance(error, NoAuthError):
        raise LiveStateError(
            f"znode {where(client, path)}: not readable (NoAuth): authenticate as the brokers' "
            "ZooKeeper identity"
        )
    raise error


def _timed_out(client: KazooClient, path: str) -> Exception:
    """kazoo's own timeout type (apply reports it by type; read_live_state words it), naming the znode."""
    error: Exception = KazooTimeoutError(f"timed out reading {where(client, path)} from ZooKeeper")
    return error


def _issue_multi(client: KazooClient, ops: Sequence[Op], max_ops: int) -> list[tuple[Sequence[Op], Any]]:
    """multiRead requests of at most `max_ops` ops and about MAX_BYTES each, all sent before returning."""
    chroot: str = client.chroot or ""
    pending: list[tuple[Sequence[Op], Any]] = []
    start = size = 0
    for i, (_, path) in enumerate(ops):
        if i > start and (i - start >= max_ops or size >= MAX_BYTES):
            pending.append(_send(client, chroot, ops[start:i]))
            start, size = i, 0
        size += len(path) + len(chroot) + 17  # header, path length and watch flag
    if start < len(ops):
        pending.append(_send(client, chroot, ops[start:]))
    return pending


def _send(client: KazooClient, chroot: str, batch: Sequence[Op]) -> tuple[Sequence[Op], Any]:
    future = client.handler.async_result()
    client._call(MultiRead([(code, chroot + path) for code, path in batch]), future)  # see the module doc
    return batch, future
