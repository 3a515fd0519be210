"""A logging TCP proxy: the attacker's host in the security tests.

It listens on a free loopback port, forwards every connection to a real ZooKeeper, and records every byte
in both directions and every connection, so a test can assert that a planted secret was never sent (or that
nothing connected at all).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class LoggingProxy:
    def __init__(self, target: tuple[str, int], max_connections: int | None = None) -> None:
        self.target = target
        self.max_connections = max_connections  # later connections are closed at once (a host that went away)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.connections = 0
        self.sent = bytearray()  # client -> server
        self.received = bytearray()  # server -> client
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.max_connections is not None and self.connections >= self.max_connections:
                client.close()
                continue
            with self._lock:
                self.connections += 1
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            self._sockets += [client, upstream]
            for src, dst, log in ((client, upstream, self.sent), (upstream, client, self.received)):
                thread = threading.Thread(target=self._pump, args=(src, dst, log), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pump(self, src: socket.socket, dst: socket.socket, log: bytearray) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                with self._lock:
                    log.extend(data)
                dst.sendall(data)
        with suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def stop(self) -> None:
        self._stop.set()
        with suppress(OSError):
            self.listener.close()
        for sock in self._sockets:
            with suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(timeout=2)

    def saw(self, secret: str) -> bool:
        """Did the secret cross the proxy in either direction (as UTF-8)?"""
        needle = secret.encode("utf-8")
        with self._lock:
            return needle in self.sent or needle in self.received


@contextmanager
def logging_proxy(target: tuple[str, int], max_connections: int | None = None) -> Iterator[LoggingProxy]:
    proxy = LoggingProxy(target, max_connections)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
