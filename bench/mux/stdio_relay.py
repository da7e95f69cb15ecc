"""A relay between the daemon and a language server that notes when each frame passed (measuring only).

    python bench/mux/stdio_relay.py LOG.jsonl pyright-langserver --stdio

The daemon starts it as the server's command (`[servers.pyright] command`, see
bench/mux/agent_timeline.py); it starts the real server and copies frames both
ways unchanged, appending one JSON line per frame to LOG: `t` (time.monotonic(),
the clock every process on the machine shares), `d` ("to" the server or "from"
it), `id`, `method`, `n` (body bytes) and, for the messages a timeline reads,
the document or the message. Each direction is its own thread, so a frame is
noted when it passes, not when the other side is read. It adds a copy per
frame (about 0.1 ms); a timeline taken through it is for attribution, not for
the figures of bench/mux/agent_sessions.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import IO, Any

_DOCUMENT_METHODS = frozenset(
    {"textDocument/didOpen", "textDocument/didClose", "textDocument/references", "textDocument/documentSymbol"}
)


class Notes:
    """The JSON-lines log both directions append to."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", buffering=1)  # noqa: SIM115 - open for the relay's life
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        """Append one record, stamped now."""
        record = {"t": time.monotonic(), **record}
        with self._lock:
            self._file.write(json.dumps(record) + "\n")


def read_frame(stream: IO[bytes]) -> bytes | None:
    """One message body, or None at the end of the stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if length is None:
        return None
    return stream.read(length)


def describe(body: bytes) -> dict[str, Any]:
    """What a timeline reads of one message."""
    try:
        message = json.loads(body)
    except ValueError:
        return {"n": len(body)}
    method = message.get("method")
    out: dict[str, Any] = {"id": message.get("id"), "method": method, "n": len(body)}
    params = message.get("params")
    if not isinstance(params, dict):
        return out
    if method in _DOCUMENT_METHODS:
        out["uri"] = params.get("textDocument", {}).get("uri")
    elif method == "textDocument/publishDiagnostics":
        out["uri"] = params.get("uri")
        out["diagnostics"] = len(params.get("diagnostics", []))
    elif method in ("window/logMessage", "$/progress"):
        out["detail"] = str(params.get("message") or params.get("value"))[:300]
    return out


def pump(source: IO[bytes], sink: IO[bytes], direction: str, notes: Notes) -> None:
    """Copy frames from source to sink until either ends, noting each."""
    while (body := read_frame(source)) is not None:
        notes.write({"d": direction, **describe(body)})
        try:
            sink.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            sink.flush()
        except (BrokenPipeError, ValueError):
            return
    try:
        sink.close()
    except BrokenPipeError:
        pass


def main(argv: list[str]) -> int:
    """Relay stdio to the server named by argv[1:], noting frames in argv[0]."""
    notes = Notes(argv[0])
    server = subprocess.Popen(argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    notes.write({"d": "spawn", "pid": server.pid})
    to_server = threading.Thread(target=pump, args=(sys.stdin.buffer, server.stdin, "to", notes), daemon=True)
    to_server.start()
    pump(server.stdout, sys.stdout.buffer, "from", notes)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
