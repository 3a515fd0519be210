"""Shares of work on forked worker processes, in two phases, with results streamed back as they come.

A reconcile pass is CPU-bound Python (YAML, validation, decoding live state, planning): threads share one core.
`fan_out` forks one worker per share. Each worker first `prepare`s its share (loads and validates its clusters)
and sends a small report; the parent `merge`s every report into one verdict (the problems that concern every
cluster) and sends it to every worker; each worker then does its `work`, sending each result as it is ready.
So a verdict that needs every share (a broken fleet.yaml fails every cluster) is known before any share acts.

A stop (the parent's `stop` event: SIGTERM, SIGINT) is forwarded to every worker, where it sets the worker's own
stop event and `CANCELLED`, exactly as the in-process pass would see them. Workers ignore SIGINT (a terminal
sends it to the whole process group: the parent decides) and die on SIGTERM (the parent ends them so if it
must exit at once). A worker that dies loses its share: the caller learns which shares are missing.

Fork only: a worker inherits the loaded modules and the closures it runs (nothing is pickled but the reports
and results). Callers fork before opening any ZooKeeper session.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

from reconciler.errors import CANCELLED

Kept = TypeVar("Kept")
Emit = Callable[[Any], None]
POLL_S = 0.2  # how often the parent looks at its stop event while it waits for the workers


@dataclass
class Fanned:
    """What came back: every result (in arrival order), the merged verdict, and the shares whose worker died."""

    results: list[Any] = field(default_factory=list)
    verdict: Any = None
    lost: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Phases(Generic[Kept]):
    """prepare(share) -> (kept, report) in the worker; merge(reports) -> verdict in the parent;
    work(kept, verdict, stop, emit) in the worker, emit(result) once per result."""

    prepare: Callable[[Sequence[str]], tuple[Kept, Any]]
    merge: Callable[[list[Any]], Any]
    work: Callable[[Kept, Any, threading.Event, Emit], None]


def fan_out(shares: Sequence[Sequence[str]], phases: Phases[Any], stop: threading.Event,
            on_result: Emit | None = None) -> Fanned:
    import multiprocessing  # only here: most commands never fork

    context = multiprocessing.get_context("fork")
    conns: dict[Connection, int] = {}
    processes = []
    for index, share in enumerate(shares):
        parent_end, child_end = context.Pipe()
        process = context.Process(target=_worker, args=(child_end, share, phases), daemon=True)
        process.start()
        child_end.close()
        conns[parent_end] = index
        processes.append(process)
    try:
        return _collect(conns, phases, stop, on_result)
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():  # the parent is leaving early (a second signal): end the worker
                process.terminate()
                process.join()
        for conn in conns:
            conn.close()


def _collect(conns: dict[Connection, int], phases: Phases[Any], stop: threading.Event,
             on_result: Emit | None) -> Fanned:
    out = Fanned()
    pending = set(conns)
    reports: dict[Connection, Any] = {}
    started = stopped = False
    while pending:
        for conn in wait(list(pending), timeout=POLL_S):
            assert isinstance(conn, Connection)
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):  # the worker died: its share is lost
                pending.discard(conn)
                out.lost.append(conns[conn])
                continue
            if kind == "report":
                reports[conn] = payload
            elif kind == "result":
                out.results.append(payload)
                if on_result is not None:
                    on_result(payload)
            else:  # "done"
                pending.discard(conn)
        if not started and pending and set(reports) >= pending:  # every living worker is prepared
            out.verdict = phases.merge([reports[c] for c in sorted(reports, key=conns.__getitem__)])
            _send_all(pending, ("go", out.verdict))
            started = True
        if stop.is_set() and not stopped:
            _send_all(pending, ("stop", None))
            stopped = True
    return out


def _send_all(conns: set[Connection], message: tuple[str, Any]) -> None:
    for conn in conns:
        with contextlib.suppress(OSError):  # it died: its EOF is read next
            conn.send(message)


def _worker(conn: Connection, share: Sequence[str], phases: Phases[Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    CANCELLED.clear()
    stop = threading.Event()
    lock = threading.Lock()

    def emit(kind: str, payload: Any) -> None:
        with lock:
            try:
                conn.send((kind, payload))
            except OSError:  # the parent is gone: start nothing more
                stop.set()
                CANCELLED.set()

    kept, report = phases.prepare(share)
    emit("report", report)
    while True:
        kind, verdict = conn.recv()
        if kind == "go":
            break
        stop.set()  # a stop before the go: every cluster of the share will be skipped
        CANCELLED.set()
    threading.Thread(target=_listen, args=(conn, stop), daemon=True).start()
    phases.work(kept, verdict, stop, lambda result: emit("result", result))
    emit("done", None)


def _listen(conn: Connection, stop: threading.Event) -> None:
    """The parent's stop request (or its end) sets this worker's stop event and CANCELLED."""
    with contextlib.suppress(EOFError, OSError):
        conn.recv()
    stop.set()
    CANCELLED.set()
