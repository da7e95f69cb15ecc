"""Minimal raw-framing LSP server for throughput benchmarks: echoes request params.

No pygls, no threads: it reads a message, answers it, and reads the next, so the
cost measured is lensmux's, not this server's. `initialize` gets a small capability
set, `shutdown` null, any other request its own params as result; notifications are
ignored and `exit` ends the process.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

ECHO_CAPABILITIES = {
    "textDocumentSync": 2,
    "hoverProvider": True,
    "definitionProvider": True,
    "referencesProvider": True,
    "documentSymbolProvider": True,
    "workspaceSymbolProvider": True,
}


class EchoFramingError(Exception):
    """The client sent bytes that are not LSP framing."""


def echo_read(stdin: BinaryIO) -> dict[str, Any] | None:
    """Next message from stdin; None at end of input."""
    length: int | None = None
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.rstrip(b"\r\n")
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise EchoFramingError("message without Content-Length")
    body = stdin.read(length)
    if len(body) < length:
        return None
    message = json.loads(body)
    if not isinstance(message, dict):
        raise EchoFramingError("body is not a JSON object")
    return message


def echo_write(stdout: BinaryIO, message: dict[str, Any]) -> None:
    """Frame and send one message."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body))
    stdout.write(body)
    stdout.flush()


def echo_result(method: str, params: Any) -> Any:
    """The result this server gives to a request."""
    if method == "initialize":
        return {"capabilities": ECHO_CAPABILITIES, "serverInfo": {"name": "echo-lsp"}}
    if method == "shutdown":
        return None
    return params


def echo_serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve until `exit` or end of input; returns the exit status."""
    shut_down = False
    while (message := echo_read(stdin)) is not None:
        method = message.get("method")
        if method == "exit":
            return 0 if shut_down else 1
        if not isinstance(method, str) or "id" not in message:
            continue  # notifications and stray responses need no answer
        shut_down = shut_down or method == "shutdown"
        result = echo_result(method, message.get("params"))
        echo_write(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(echo_serve(sys.stdin.buffer, sys.stdout.buffer))
