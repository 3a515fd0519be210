"""The real command line with a pause point, for fault tests: `python -m tests.integration.faultproc ARGS…`.

FAULT_PAUSE="TYPE:N" (or "TYPE:N:after") makes the process SIGSTOP itself right before (after) it queues
its Nth ZooKeeper request of TYPE: `multi` (a write transaction), `multiread`, `get`, `children`. At the
Nth multi, every request queued earlier is first answered (one read on the session, which the server answers
after them): apply keeps up to four multis in flight, and "before (after) batch N" means that batches 1..N-1
are done. The test waits for the stopped state, does its damage (kills or restarts
ZooKeeper, expires the session), then sends SIGCONT. With FAULT_SESSION_FILE the paused process first
writes its session id and password there (JSON), so the test can expire exactly that session. The hook sits
at kazoo's request queue, so it knows nothing of the reconciler's internals.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Exists as ExistsRequest

REQUEST_TYPES = {"multi": 14, "multiread": 22, "get": 4, "children": 8}


def install(spec: str, session_file: str | None) -> None:
    kind, count, *when = spec.split(":")
    wanted, nth, after = REQUEST_TYPES[kind], int(count), when == ["after"]
    seen = 0
    original = KazooClient._call

    def pause(client: KazooClient) -> None:
        if session_file:
            session_id, password = client.client_id or (0, b"")
            with open(session_file, "w", encoding="utf-8") as fh:
                json.dump({"session_id": session_id, "password": password.hex()}, fh)
        os.kill(os.getpid(), signal.SIGSTOP)

    def drain(client: KazooClient) -> None:
        reply = client.handler.async_result()
        original(client, ExistsRequest("/", None), reply)  # FIFO: answered after everything queued before it
        reply.get(timeout=60)

    def _call(self: KazooClient, request: Any, async_object: Any) -> Any:
        nonlocal seen
        if getattr(request, "type", None) != wanted:
            return original(self, request, async_object)
        seen += 1
        if seen == nth and kind == "multi":
            drain(self)
        if seen == nth and not after:
            pause(self)
        result = original(self, request, async_object)
        if seen == nth and after:
            pause(self)
        return result

    KazooClient._call = _call


def main() -> None:
    spec = os.environ.get("FAULT_PAUSE")
    if spec:
        install(spec, os.environ.get("FAULT_SESSION_FILE"))
    from reconciler.cli.main import run

    raise SystemExit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
