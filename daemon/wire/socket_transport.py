"""Framed messages over an asyncio transport: the per-message path of a client socket and of a server's output.

anyio's socket streams cost, per wake-up, a loop turn for the checkpoint, a
failed `recv`, and an `epoll_ctl` pair to register and unregister the socket;
each send costs another loop turn. A protocol is called by the event loop with
whatever arrived, splits it into frames at once, and wakes its one reader task
with all of them; writes are collected during a loop turn and sent with one
`send` per turn. The caller keeps structured concurrency: the reader is an
ordinary task of its task group, and nothing here starts a task.

A server's output pipe is read the same way (`open_framed_pipe`), and its
owner may take a frame inside the callback (`on_frame`) while its reader waits
with nothing queued: a server's response then reaches its client without
waking a task, and nothing can overtake an earlier message.

Flow control both ways: reading pauses while more than `_READ_HIGH` bytes of
complete frames wait for the reader; writing is refused (`write_if_writable`
returns False) while the transport holds more than `_WRITE_HIGH` unsent bytes,
so the caller can hold messages back in its own bounded queue.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections import deque
from collections.abc import Callable

from lensmux.daemon.wire.framing import (
    FrameLimits,
    HeaderTooLarge,
    TruncatedMessage,
    frame,
    header_length,
    parse_header_block,
)

_HEADER_END = b"\r\n\r\n"
_READ_HIGH = 1024 * 1024
_WRITE_HIGH = 1024 * 1024
_WRITE_LOW = 256 * 1024


class FramedProtocol(asyncio.Protocol):
    """Splits incoming bytes into bodies and hands them to one reader, several per wake-up."""

    def __init__(self, limits: FrameLimits, on_writable: Callable[[], None], *, writes: bool = True) -> None:
        self._limits = limits
        # False for a read pipe: its transport has no write side (uvloop's raises on asking).
        self._writes = writes
        self._buf = bytearray()
        self._ready: deque[bytes] = deque()
        self._ready_bytes = 0
        # A framing error, or whatever `on_frame` raised: the reader raises it, reading has ended.
        self._error: Exception | None = None
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._paused_reading = False
        self._paused_writing = False
        self._on_writable = on_writable
        self.transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Offered each frame while the reader waits with nothing queued; True if it took it.
        self.on_frame: Callable[[bytes], bool] | None = None

    # -- asyncio.Protocol callbacks ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport; its write buffer limits are this module's."""
        self.transport = transport  # type: ignore[assignment]
        # Asked once: on Python 3.11 every get_running_loop() is a getpid system call.
        self._loop = asyncio.get_running_loop()
        if self._writes:
            self.transport.set_write_buffer_limits(high=_WRITE_HIGH, low=_WRITE_LOW)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        """Append and split; a framing error ends reading (the stream cannot be resynchronised)."""
        if self._error is not None:
            return
        self._buf += data
        try:
            self._split()
        except Exception as exc:  # framing, or the owner's on_frame: the reader raises it
            self._error = exc
            self._buf.clear()
        if self._ready_bytes > _READ_HIGH and not self._paused_reading and self.transport is not None:
            self._paused_reading = True
            self.transport.pause_reading()
        # Only for something to read: a partial frame, or frames `on_frame` took, wake nobody.
        waiter = self._waiter
        if waiter is not None and (self._ready or self._error is not None) and not waiter.done():
            waiter.set_result(None)

    def eof_received(self) -> bool:
        """The peer finished writing: the reader gets what is complete, then the end."""
        self._eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is gone either way."""
        self._eof = True
        self._paused_writing = False
        self._wake()

    def pause_writing(self) -> None:
        """The transport holds more than the high-water mark of unsent bytes."""
        self._paused_writing = True

    def resume_writing(self) -> None:
        """Below the low-water mark again: the owner may flush what it held back."""
        self._paused_writing = False
        self._on_writable()

    # -- for the owner -------------------------------------------------------------

    def _split(self) -> None:
        buf, limits = self._buf, self._limits
        while True:
            end = buf.find(_HEADER_END, 0, limits.max_header + len(_HEADER_END))
            if end < 0:
                if len(buf) > limits.max_header:
                    raise HeaderTooLarge(f"no end of headers within {limits.max_header} bytes")
                return
            # header_length's fast path, written out: every frame passes here.
            if 16 < end <= 34 and buf.startswith(b"Content-Length: ") and (digits := buf[16:end]).isdigit():
                length = int(digits)
                if length > limits.max_body:
                    length = parse_header_block(bytes(buf[:end]), limits)  # raises BodyTooLarge
            else:
                length = header_length(buf, end, limits)
            start = end + 4
            if len(buf) - start < length:
                return
            body = bytes(buf[start : start + length])
            del buf[: start + length]
            take = self.on_frame
            if take is not None and not self._ready:
                waiter = self._waiter
                # The reader is parked: everything before this frame has been handled.
                if waiter is not None and not waiter.done() and take(body):
                    continue
            self._ready.append(body)
            self._ready_bytes += length

    def _truncated(self) -> TruncatedMessage:
        end = self._buf.find(_HEADER_END)
        if end < 0:
            return TruncatedMessage("stream ended inside a header block")
        length = parse_header_block(bytes(self._buf[:end]).strip(b"\r\n"), self._limits)
        return TruncatedMessage(f"stream ended inside a {length}-byte body")

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read_batch(self) -> list[bytes] | None:
        """Every complete body received so far (waiting for one); None at a clean end of stream."""
        while not self._ready:
            if self._error is not None:
                raise self._error
            if self._eof:
                if self._buf.strip():
                    raise self._truncated()
                return None
            self._waiter = (self._loop or asyncio.get_running_loop()).create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        batch = list(self._ready)
        self._ready.clear()
        self._ready_bytes = 0
        if self._paused_reading and self.transport is not None:
            self._paused_reading = False
            self.transport.resume_reading()
        return batch

    def has_ready(self) -> bool:
        """Whether read_batch would return at once."""
        return bool(self._ready) or self._error is not None or self._eof

    def write_if_writable(self, bodies: list[bytes]) -> bool:
        """Frame several bodies and write them at once, unless the transport is over its mark or closing.

        Returns whether they were written; if not, nothing was.
        """
        transport = self.transport
        if self._paused_writing or transport is None or transport.is_closing():
            return False
        if len(bodies) == 1:
            body = bodies[0]
            transport.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        else:
            transport.write(b"".join([frame(body) for body in bodies]))
        return True

    def close(self) -> None:
        """Close now: what the peer has not taken yet is dropped, as a closed anyio stream would.

        A polite close would keep the socket open until the peer read everything,
        forever for a client that stopped reading.
        """
        transport = self.transport
        if transport is None:
            return
        if self._writes and transport.get_write_buffer_size():
            transport.abort()
        else:
            transport.close()


async def open_framed(sock: socket.socket, limits: FrameLimits, on_writable: Callable[[], None]) -> FramedProtocol:
    """Put a connected socket (a duplicate of it: the caller keeps its own) under a FramedProtocol."""
    loop = asyncio.get_running_loop()
    own = sock.dup()
    try:
        _, protocol = await loop.connect_accepted_socket(lambda: FramedProtocol(limits, on_writable), sock=own)
    except BaseException:
        own.close()
        raise
    return protocol


async def open_framed_pipe(fd: int, limits: FrameLimits) -> FramedProtocol:
    """Put the read end of a pipe under a FramedProtocol; it owns `fd` from here on."""
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        _, protocol = await loop.connect_read_pipe(lambda: FramedProtocol(limits, _no_write_side, writes=False), pipe)
    except BaseException:
        pipe.close()
        raise
    return protocol


def _no_write_side() -> None:
    """A read pipe never pauses writing."""
