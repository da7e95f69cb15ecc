"""A fault-injection fake: a Unix-socket proxy in front of a real PostgreSQL that stops forwarding on demand.

libpq reaches a server at `<host directory>/.s.PGSQL.<port>`, so a DSN whose host is the
proxy's directory talks to the real server through it. stall() makes it a server that hangs
without going away: connections stay open and accepted, every byte either side sends is read
and held, none is delivered, as with a network partition or a SIGSTOPped server. resume()
delivers what was held and forwards again. Used only to show that nothing of an editor's waits
on the team store; the team store itself is always the real server behind it.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SOCKET_NAME = ".s.PGSQL.5432"


class StallingProxy:
    """Forwards between libpq clients and one server socket; holds every byte while stalled."""

    def __init__(self, upstream: Path, directory: Path) -> None:
        self.upstream = upstream
        self.directory = directory
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(directory / SOCKET_NAME))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._peer: dict[socket.socket, socket.socket] = {}
        self._from_client: set[socket.socket] = set()
        self._held: dict[socket.socket, bytearray] = {}  # per destination, while stalled
        self._lock = threading.Lock()
        self._stalled = False
        self._stop = threading.Event()
        # Bytes the clients (the daemon) sent while stalled, and of which connections still open.
        self.held_from_clients = 0
        self._holding: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._loop, name="stalling-proxy", daemon=True)

    def dsn(self, real_dsn: str) -> str:
        """real_dsn with its host replaced by the proxy's directory."""
        parts = [p for p in real_dsn.split() if not p.startswith("host=")]
        return " ".join([f"host={self.directory}", *parts])

    def stall(self) -> None:
        """From now on hold every byte, in both directions, and deliver none."""
        with self._lock:
            self._stalled = True
            self.held_from_clients = 0

    def resume(self) -> None:
        """Deliver what was held and forward again."""
        with self._lock:
            self._stalled = False
            held, self._held = self._held, {}
            self._holding.clear()
        for destination, data in held.items():
            try:
                destination.sendall(data)
            except OSError:
                pass  # that side has gone meanwhile

    def holding_open(self) -> int:
        """Connections whose client sent bytes while stalled and is still connected (its call still waits)."""
        with self._lock:
            return len(self._holding)

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.connect(str(self.upstream))
        self._peer[client], self._peer[server] = server, client
        self._from_client.add(client)
        for sock in (client, server):
            self._selector.register(sock, selectors.EVENT_READ)

    def _drop(self, sock: socket.socket) -> None:
        for end in (sock, self._peer.pop(sock, None)):
            if end is None:
                continue
            self._peer.pop(end, None)
            self._from_client.discard(end)
            with self._lock:
                self._holding.discard(end)
                self._held.pop(end, None)
            try:
                self._selector.unregister(end)
            except (KeyError, ValueError):
                pass
            end.close()

    def _forward(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop(sock)
            return
        peer = self._peer[sock]
        with self._lock:
            if self._stalled:
                self._held.setdefault(peer, bytearray()).extend(data)
                if sock in self._from_client:
                    self.held_from_clients += len(data)
                    self._holding.add(sock)
                return
        try:
            peer.sendall(data)
        except OSError:
            self._drop(sock)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept()
                elif sock in self._peer:
                    self._forward(sock)

    @contextmanager
    def running(self) -> Iterator[StallingProxy]:
        """Forward until the block ends; then close every connection."""
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(5)
            for sock in list(self._peer):
                self._drop(sock)
            self._listener.close()
            self._selector.close()
