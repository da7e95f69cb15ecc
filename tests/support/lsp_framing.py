"""LSP base-protocol framing for the test client: Content-Length headers around UTF-8 JSON.

This is deliberately an independent implementation of the wire format: it shares no
code with lensmux, so tests that talk through it check the daemon's framing rather
than agreeing with it by construction.

Exception tree (all test-support errors derive from LspClientError):

    LspClientError
    └── LspProtocolError        the peer broke the protocol
        └── LspFramingError     the peer sent bytes that are not a valid LSP message
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

# Caps keep a misbehaving peer from making the test process buffer without bound.
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 256 * 1024 * 1024

_HEADER_END = b"\r\n\r\n"


class LspClientError(Exception):
    """Base of every error raised by the test-support LSP client."""


class LspProtocolError(LspClientError):
    """The peer broke the JSON-RPC or LSP protocol."""


class LspFramingError(LspProtocolError):
    """The peer sent bytes that do not form a valid LSP message."""


def encode_message(message: Any) -> bytes:
    """Frame one JSON-RPC message; Content-Length counts encoded bytes, not characters."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def parse_content_length(header_block: bytes) -> int:
    """Return the Content-Length of a header block (without the blank line), names case-insensitive."""
    length: int | None = None
    for raw_line in header_block.split(b"\r\n"):
        name, colon, value = raw_line.partition(b":")
        if not colon:
            raise LspFramingError(f"malformed header line {raw_line!r}")
        if name.strip().lower() != b"content-length":
            continue
        if length is not None:
            raise LspFramingError("repeated Content-Length header")
        text = value.strip()
        if not text.isdigit():
            raise LspFramingError(f"bad Content-Length value {text!r}")
        length = int(text)
    if length is None:
        raise LspFramingError(f"missing Content-Length in headers {header_block!r}")
    if length > MAX_BODY_BYTES:
        raise LspFramingError(f"Content-Length {length} exceeds {MAX_BODY_BYTES}")
    return length


def decode_body(body: bytes) -> dict[str, Any]:
    """Decode one message body; it must be a UTF-8 JSON object."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LspFramingError(f"body is not UTF-8 JSON: {body[:200]!r}") from exc
    if not isinstance(message, dict):
        raise LspFramingError(f"body is not a JSON object: {body[:200]!r}")
    return message


async def read_message(stream: BufferedByteReceiveStream) -> dict[str, Any] | None:
    """Read one message; None when the peer closed cleanly between messages."""
    try:
        header_block = await stream.receive_until(_HEADER_END, MAX_HEADER_BYTES)
    except anyio.IncompleteRead:
        if stream.buffer:
            raise LspFramingError(f"stream ended inside a header block: {stream.buffer[:200]!r}") from None
        return None
    except anyio.DelimiterNotFound as exc:
        raise LspFramingError(f"no end of headers within {MAX_HEADER_BYTES} bytes") from exc
    length = parse_content_length(header_block)
    try:
        body = await stream.receive_exactly(length)
    except anyio.IncompleteRead as exc:
        raise LspFramingError(f"stream ended inside a {length}-byte body") from exc
    return decode_body(body)
