"""LSP base protocol framing: `Content-Length` headers around UTF-8 JSON bodies.

Errors raised here mean the byte stream cannot be resynchronised; the caller
logs them and closes the connection. Errors in a well-framed body are the
envelope module's business.

    WireError
     ├── FramingError            (stream unusable: close it)
     │    ├── HeaderTooLarge
     │    ├── BodyTooLarge
     │    ├── MalformedHeader
     │    └── TruncatedMessage
     └── EnvelopeError           (see envelope.py: answer and carry on)
          ├── ParseError         -32700
          ├── InvalidRequest     -32600
          └── InvalidParams      -32602 (a payload the daemon itself reads)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

DEFAULT_MAX_HEADER = 8 * 1024
DEFAULT_MAX_BODY = 64 * 1024 * 1024
_HEADER_END = b"\r\n\r\n"
_READ_SIZE = 256 * 1024
_ACCEPTED_CHARSETS = frozenset({"utf-8", "utf8"})
# Unsent bytes a pipe may hold before a writer waits for it to drain.
_DIRECT_WRITE_LIMIT = 1024 * 1024


class WireError(Exception):
    """Base of everything the wire layer raises."""


class FramingError(WireError):
    """The stream is not valid LSP framing and cannot be resynchronised."""


class HeaderTooLarge(FramingError):
    """The header block exceeds the configured cap."""


class BodyTooLarge(FramingError):
    """Content-Length exceeds the configured body cap."""


class MalformedHeader(FramingError):
    """A header line is not `Name: value`, or Content-Length is missing or bad."""


class TruncatedMessage(FramingError):
    """The peer closed the stream in the middle of a message."""


@dataclass(frozen=True, slots=True)
class FrameLimits:
    """Caps on one message, a security property as much as a memory one."""

    max_header: int = DEFAULT_MAX_HEADER
    max_body: int = DEFAULT_MAX_BODY


def parse_header_block(block: bytes, limits: FrameLimits) -> int:
    """Return the body length announced by a header block (without the blank line)."""
    # What nearly every peer sends: one Content-Length line, a plain number.
    if block.startswith(b"Content-Length: "):
        digits = block[16:]
        # 18 digits always fit int() cheaply; anything over the cap takes the checked path below.
        if digits.isdigit() and len(digits) <= 18 and (announced := int(digits)) <= limits.max_body:
            return announced
    length: int | None = None
    for raw_line in block.split(b"\r\n"):
        name, sep, value = raw_line.partition(b":")
        if not sep:
            raise MalformedHeader(f"header line without ':': {raw_line[:60]!r}")
        key = name.strip().lower()
        val = value.strip()
        if key == b"content-length":
            if length is not None:
                raise MalformedHeader("Content-Length given twice")
            if not val.isdigit():
                raise MalformedHeader(f"Content-Length is not a non-negative integer: {val[:30]!r}")
            # int() refuses strings of more than 4300 digits, leading zeros included
            # (ValueError); more significant digits than the cap has is too large anyway.
            digits = val.lstrip(b"0") or b"0"
            if len(digits) > len(str(limits.max_body)):
                raise BodyTooLarge(f"Content-Length {val[:30]!r}... exceeds the cap of {limits.max_body} bytes")
            length = int(digits)
        elif key == b"content-type":
            _check_content_type(val)
        # Other headers are allowed by the specification and ignored.
    if length is None:
        raise MalformedHeader("no Content-Length header")
    if length > limits.max_body:
        raise BodyTooLarge(f"Content-Length {length} exceeds the cap of {limits.max_body} bytes")
    return length


def header_length(buf: bytearray, end: int, limits: FrameLimits) -> int:
    """The body length announced by the header block `buf[:end]` (`end` is where its blank line starts)."""
    # What nearly every peer sends, read without copying the block: one
    # Content-Length line, a plain number of at most 18 digits (always cheap for int()).
    if 16 < end <= 34 and buf.startswith(b"Content-Length: "):
        digits = buf[16:end]
        if digits.isdigit() and (announced := int(digits)) <= limits.max_body:
            return announced
    return parse_header_block(bytes(buf[:end]).strip(b"\r\n"), limits)


def _check_content_type(value: bytes) -> None:
    for param in value.split(b";")[1:]:
        key, _, charset = param.partition(b"=")
        if key.strip().lower() == b"charset":
            name = charset.strip().strip(b'"').decode("ascii", "replace").lower()
            if name not in _ACCEPTED_CHARSETS:
                raise MalformedHeader(f"unsupported charset {name!r}")


def frame(body: bytes) -> bytes:
    """Wrap one encoded JSON body in its header."""
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


class FrameReader:
    """Reads one message body at a time from a byte stream, with its own buffer."""

    # Messages served from the buffer without a receive (which is itself a
    # checkpoint) before yielding anyway: a loop routing a burst of buffered
    # messages would otherwise starve the writer tasks.
    _BURST = 16

    def __init__(self, stream: ByteReceiveStream, limits: FrameLimits | None = None) -> None:
        self._stream = stream
        self._limits = limits or FrameLimits()
        self._buf = bytearray()
        self._burst = 0
        # Under anyio's subprocess pipe wrapper, read the asyncio StreamReader itself: the
        # wrapper adds a call and a coroutine resumption per read and nothing else (its
        # `aclose` makes the reader raise ClosedResourceError, caught below like anyio's own).
        inner = getattr(stream, "_stream", None)
        self._receive = inner.read if isinstance(inner, asyncio.StreamReader) else stream.receive

    async def read(self) -> bytes | None:
        """Return the next body, or None when the peer ended the stream cleanly."""
        limits = self._limits
        buf = self._buf
        while True:
            end = buf.find(_HEADER_END, 0, limits.max_header + len(_HEADER_END))
            if end >= 0:
                length = header_length(buf, end, limits)
                start = end + 4
                if len(buf) - start >= length:
                    body = bytes(buf[start : start + length])
                    del buf[: start + length]
                    self._burst += 1
                    if self._burst >= self._BURST:
                        self._burst = 0
                        await anyio.lowlevel.checkpoint()
                    return body
            elif len(buf) > limits.max_header:
                raise HeaderTooLarge(f"no end of headers within {limits.max_header} bytes")
            try:
                chunk = await self._receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                chunk = b""
            if not chunk:
                if not buf.strip():
                    return None
                if end >= 0:
                    raise TruncatedMessage(f"stream ended inside a {length}-byte body")
                raise TruncatedMessage("stream ended inside a header block")
            self._burst = 0
            buf += chunk


def _asyncio_writer(stream: ByteSendStream) -> asyncio.StreamWriter | None:
    """The asyncio StreamWriter under anyio's subprocess pipe wrapper, if that is what `stream` is.

    anyio's `send` costs a loop turn per message (a checkpoint after the drain);
    writing to the StreamWriter while its buffer is small does not. Any other
    stream (a socket, a memory stream in tests) keeps the anyio path.
    """
    inner = getattr(stream, "_stream", None)
    return inner if isinstance(inner, asyncio.StreamWriter) else None


class FrameWriter:
    """Writes framed messages; one `send` is one message, never interleaved."""

    def __init__(self, stream: ByteSendStream) -> None:
        self._stream = stream
        # Uncontended most of the time: no need to yield when it is free.
        self._lock = anyio.Lock(fast_acquire=True)
        # Sends inside the lock (started, not finished): while any is, nothing may overtake it.
        self._locked_sends = 0
        direct = _asyncio_writer(stream)
        # The pipe's transport itself: StreamWriter.write and is_closing only forward to it.
        self._transport: asyncio.WriteTransport | None = direct.transport if direct is not None else None
        # Asked once: on Python 3.11 every get_running_loop() is a getpid system call.
        self._loop = asyncio.get_running_loop() if direct is not None else None
        # Frames sent during this loop turn, written together at its end.
        self._turn: list[bytes] = []

    async def send(self, body: bytes) -> None:
        """Frame and send one body."""
        turn = self._turn
        if turn:
            turn.append(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
            return
        transport = self._transport
        if (
            transport is not None
            and not self._locked_sends
            and not transport.is_closing()
            and transport.get_write_buffer_size() < _DIRECT_WRITE_LIMIT
        ):
            # The pipe takes it at the end of this turn, with whatever else is sent to it in
            # the turn: one write (and one wake-up of the server) for several clients' messages,
            # no loop turn of its own. No send is inside the lock, so nothing written through it
            # can be overtaken; a full pipe takes the path below.
            turn.append(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
            assert self._loop is not None
            self._loop.call_soon(self._write_turn)
            return
        await self._locked_send(frame(body))

    def writes_now(self) -> bool:
        """Whether `send_now` may take a body: it would leave in this turn's write, behind everything sent before."""
        if self._turn:
            return True
        transport = self._transport
        return (
            transport is not None
            and not self._locked_sends
            and not transport.is_closing()
            and transport.get_write_buffer_size() < _DIRECT_WRITE_LIMIT
        )

    def send_now(self, body: bytes) -> None:
        """Frame one body into this turn's write, without awaiting; only right after `writes_now` said so.

        For a caller that cannot await (a read callback); `send` takes the same
        path whenever it can, written out there to spare it a call per message.
        """
        turn = self._turn
        turn.append(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        if len(turn) == 1:
            assert self._loop is not None
            self._loop.call_soon(self._write_turn)

    async def _locked_send(self, data: bytes) -> None:
        self._locked_sends += 1
        try:
            async with self._lock:
                await self._stream.send(data)
        finally:
            self._locked_sends -= 1

    def _write_turn(self) -> None:
        frames, self._turn = self._turn, []
        transport = self._transport
        if frames and transport is not None and not transport.is_closing():
            # A closed pipe means a dead server: its supervisor answers what was pending.
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))

    async def send_many(self, bodies: list[bytes]) -> None:
        """Frame and send several bodies in one write, in order."""
        self._write_turn()
        await self._locked_send(b"".join(frame(body) for body in bodies))

    async def aclose(self) -> None:
        """Close the underlying stream."""
        self._write_turn()
        await self._stream.aclose()
