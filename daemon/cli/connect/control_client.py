"""A blocking control-socket client for the CLI."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from lensmux.daemon.paths import control_socket


class ControlClientError(Exception):
    """The daemon could not be reached or answered badly."""


class DaemonNotRunning(ControlClientError):
    """Nothing listens on the control socket."""


class RemoteError(ControlClientError):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def _read_message(sock: socket.socket, buf: bytearray) -> dict[str, Any]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ControlClientError("daemon closed the connection")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    body = bytearray(rest)
    while len(body) < length:
        chunk = sock.recv(max(65536, length - len(body)))
        if not chunk:
            raise ControlClientError("daemon closed the connection mid-message")
        body += chunk
    buf[:] = body[length:]
    message: dict[str, Any] = json.loads(bytes(body[:length]))
    return message


class ControlClient:
    """One connection to the control socket."""

    def __init__(self, runtime_dir: Path, timeout: float | None = 30.0) -> None:
        self.path = control_socket(runtime_dir)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            self._sock.close()
            raise DaemonNotRunning(f"no lensmux daemon at {self.path}") from exc
        self._buf = bytearray()
        self._next = 0

    def call(self, method: str, params: Any = None) -> Any:
        """Send a request and return its result, raising RemoteError on an error answer."""
        self._next += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}).encode()
        self._sock.sendall(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        while True:
            msg = _read_message(self._sock, self._buf)
            if msg.get("id") == self._next:
                break
        if "error" in msg:
            err = msg["error"]
            raise RemoteError(err.get("code", 0), err.get("message", ""), err.get("data"))
        return msg.get("result")

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
