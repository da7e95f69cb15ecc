"""A blocking LSP connection over a plain Unix socket, for bytes no editor would send.

It shares no code with lensmux or with the async test client: it must
keep working when the peer misbehaves, so it never interprets more than it has to.
A background thread reads everything the daemon sends as fast as it arrives,
unless the test wants a client that stops reading.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

WAIT_S = 30.0


def frame(body: bytes) -> bytes:
    """One LSP frame around raw body bytes."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def frame_json(message: Any) -> bytes:
    """One LSP frame around a JSON value."""
    return frame(json.dumps(message, separators=(",", ":")).encode())


class WireClosed(Exception):
    """The daemon closed the connection."""


class WireClient:
    """One client connection.

    With `reading=False` nothing reads the socket in the background: the client
    reads only while a test waits for a message, and otherwise leaves the
    daemon's messages piling up, as a hung editor would.
    """

    def __init__(self, path: Path, *, reading: bool = True, name: str = "wire") -> None:
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self._buffer = bytearray()
        self._chunks: deque[bytes] = deque()
        self._eof = False
        self._reader_done = False
        self._cond = threading.Condition()
        self._next_id = 0
        self.notifications: list[dict[str, Any]] = []
        self._thread: threading.Thread | None = None
        if reading:
            self._thread = threading.Thread(target=self._reader_thread, name=f"{name}-reader", daemon=True)
            self._thread.start()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending -----------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are."""
        self.sock.sendall(data)

    def send(self, message: Any) -> None:
        """Frame and send one JSON value."""
        self.send_raw(frame_json(message))

    def request(self, method: str, params: Any = None, *, timeout: float = WAIT_S) -> dict[str, Any]:
        """Send a request and return the whole response message (result or error)."""
        self._next_id += 1
        rid = f"{self.name}-{self._next_id}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response_to(rid, timeout=timeout)

    def result(self, method: str, params: Any = None, *, timeout: float = WAIT_S) -> Any:
        """A request's result; AssertionError if it was answered with an error."""
        reply = self.request(method, params, timeout=timeout)
        assert "error" not in reply, f"{method} failed: {reply['error']}"
        return reply["result"]

    def initialize(self, root: Path) -> dict[str, Any]:
        """initialize + initialized for `root`, as an editor does first."""
        params = {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {},
            "clientInfo": {"name": self.name},
        }
        result: dict[str, Any] = self.result("initialize", params, timeout=60)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    def shutdown_write(self) -> None:
        """Half-close: the daemon sees end of stream, we can still read."""
        self.sock.shutdown(socket.SHUT_WR)

    # -- receiving ---------------------------------------------------------

    def response_to(self, rid: Any, *, timeout: float = WAIT_S) -> dict[str, Any]:
        """The next response with id `rid`; other messages are kept or dropped on the way."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.read_message(timeout=max(deadline - time.monotonic(), 0.01))
            if message is None:
                raise WireClosed(f"{self.name}: connection closed before the answer to {rid!r}")
            if "method" not in message and message.get("id") == rid:
                return message
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def read_message(self, *, timeout: float = WAIT_S) -> dict[str, Any] | None:
        """The next message, or None once the daemon closed the connection."""
        deadline = time.monotonic() + timeout
        while True:
            self._collect()
            body = self._take_frame()
            if body is not None:
                message: dict[str, Any] = json.loads(body)
                return message
            if self._eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.name}: nothing from the daemon within {timeout:g}s")
            if self._thread is None:
                self._receive_once(left)
            else:
                with self._cond:
                    if not self._chunks and not self._reader_done:
                        self._cond.wait(left)

    def wait_closed(self, *, timeout: float = WAIT_S) -> list[dict[str, Any]]:
        """Every message until the daemon closes the connection."""
        out = []
        while (message := self.read_message(timeout=timeout)) is not None:
            out.append(message)
        return out

    def _collect(self) -> None:
        # The reader thread only appends to a deque, never waiting on a lock the
        # parsing side holds, so a test that parses a flood cannot stall it.
        done = self._reader_done
        while self._chunks:
            self._buffer += self._chunks.popleft()
        self._eof = self._eof or (done and not self._chunks)

    def _take_frame(self) -> bytes | None:
        head_end = self._buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return None
        head = bytes(self._buffer[:head_end]).decode("ascii")
        fields = (line.partition(":") for line in head.split("\r\n"))
        length = next(int(value) for name, _, value in fields if name.lower() == "content-length")
        start = head_end + 4
        if len(self._buffer) < start + length:
            return None
        body = bytes(self._buffer[start : start + length])
        del self._buffer[: start + length]
        return body

    def _receive_once(self, timeout: float) -> None:
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 20)
        except TimeoutError:
            return
        except OSError:
            chunk = b""
        finally:
            self.sock.settimeout(None)
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    def _reader_thread(self) -> None:
        try:
            while chunk := self.sock.recv(1 << 20):
                self._chunks.append(chunk)
                with self._cond:
                    self._cond.notify_all()
        except OSError:
            pass  # a reset is the daemon closing on us, which tests see as the end of stream
        with self._cond:
            self._reader_done = True
            self._cond.notify_all()

    def close(self) -> None:
        """Close the socket and stop the reader."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self._thread is not None:
            self._thread.join(10)


def connection_refused_silently(sock: socket.socket, timeout: float = WAIT_S) -> bool:
    """True if the peer closes (or resets) the socket without sending a byte."""
    sock.settimeout(timeout)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
