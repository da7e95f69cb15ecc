"""A stand-in language server that writes the `initialize` params it receives to $RECORD_OUT.

Used to capture what a real editor sends (tests/editors/test_editor_profiles.py); it answers
`initialize` with empty capabilities and `shutdown`, and ends on `exit` or end of input.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _read() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def _send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def main() -> None:
    """Serve until `exit`."""
    while (message := _read()) is not None:
        method = message.get("method")
        if method == "initialize":
            with open(os.environ["RECORD_OUT"], "w", encoding="utf-8") as out:
                json.dump(message.get("params"), out)
            _send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
        elif method == "shutdown":
            _send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return


if __name__ == "__main__":
    main()
