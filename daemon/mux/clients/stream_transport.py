"""A client connection over a stream without a socket underneath: a reader task, a writer task, a bounded queue.

Every connection the daemon accepts on its Unix sockets takes the protocol path
(wire/socket_transport.py, driven by client_session.py), which reads and writes
inside the event loop's callbacks. A stream that has no socket to hand over to
the loop is served the anyio way instead: one task reads frames and hands each
to the session in order, another sends what the session queued. The queue is
bounded, as the protocol path's outbox is: a client that stops reading is
disconnected rather than stalling whoever sends to it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import ByteStream

from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FrameWriter, FramingError

# One write carries at most this much of a client's queue (one larger message goes alone).
_BATCH_BYTES = 1024 * 1024


class StreamTransport:
    """One stream's reader and writer, and the bounded queue between the session and the writer."""

    def __init__(self, stream: ByteStream, limits: FrameLimits, queue_size: int) -> None:
        self._reader = FrameReader(stream, limits)
        self._writer = FrameWriter(stream)
        self._send, self._queue = anyio.create_memory_object_stream[bytes](queue_size)

    def put(self, body: bytes) -> bool:
        """Queue one message for the writer; False if the queue is full (once closed, it drops the message)."""
        try:
            self._send.send_nowait(body)
        except anyio.WouldBlock:
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        return True

    def queued(self) -> int:
        """Messages waiting for the writer."""
        return self._send.statistics().current_buffer_used

    async def run(self, on_body: Callable[[bytes], Awaitable[None]], close: Callable[[str], None]) -> None:
        """Hand every message read to `on_body`, in order, while the writer sends the queue; until the peer leaves.

        A framing error or a failed write ends the connection through `close`, with the reason.
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._writer_task, close)
            try:
                await self._reader_task(on_body, close)
            finally:
                tg.cancel_scope.cancel()

    async def aclose(self) -> None:
        """Close the queue: later messages go nowhere."""
        await self._send.aclose()

    async def _reader_task(self, on_body: Callable[[bytes], Awaitable[None]], close: Callable[[str], None]) -> None:
        while True:
            try:
                body = await self._reader.read()
            except FramingError as exc:
                close(f"unrecoverable framing error: {exc}")
                return
            if body is None:
                return
            await on_body(body)

    async def _writer_task(self, close: Callable[[str], None]) -> None:
        try:
            async for body in self._queue:
                await self._writer.send_many(self._take_batch(body))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            close(f"write failed: {exc}")

    def _take_batch(self, first: bytes) -> list[bytes]:
        """`first` and whatever else is queued, up to _BATCH_BYTES.

        Routing a burst enqueues a message per event-loop turn, while one write
        takes several turns: a writer sending one message per wake-up would let
        the queue of a client that reads perfectly well overflow, so it takes
        everything queued at once.
        """
        batch, size = [first], len(first)
        while size < _BATCH_BYTES:
            try:
                body = self._queue.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            batch.append(body)
            size += len(body)
        return batch
