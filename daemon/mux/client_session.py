"""One editor connection on a server socket: read, validate, hand over, send back.

The session owns the connection's bounded send queue: nothing that happens
here may stall an instance, so a client that stops reading is disconnected
when its queue is full.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import ByteStream

from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id
from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FrameWriter, FramingError

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)
# One write carries at most this much of a client's queue (one larger message goes alone).
_BATCH_BYTES = 1024 * 1024

Handler = Callable[["ClientSession", Envelope], Awaitable[None]]
ResponseHook = Callable[[Envelope], Awaitable[None] | None]
# Called instead of the response hook when the client leaves without answering.
GoneHook = Callable[[str], Awaitable[None]]


class ClientSession:
    """A connected client: its queue, its identity, its own outgoing requests."""

    def __init__(
        self,
        stream: ByteStream,
        server_name: str,
        *,
        limits: FrameLimits,
        queue_size: int,
        peer_pid: int | None = None,
    ) -> None:
        self.id = next(_session_ids)
        self.server_name = server_name
        self.peer_pid = peer_pid
        self.name = f"client-{self.id}"
        self.connected_at = time.time()
        self.last_active = time.monotonic()
        self.capabilities: dict[str, Any] = {}
        # What the client sent as initializationOptions (it enables server extensions for itself).
        self.initialization_options: dict[str, Any] = {}
        self.initialized = False
        self.shutdown_requested = False
        self.requests = 0
        self.dropped_messages = 0
        self._stream = stream
        self._reader = FrameReader(stream, limits)
        self._writer = FrameWriter(stream)
        self._send, self._queue = anyio.create_memory_object_stream[bytes](queue_size)
        self._scope = anyio.CancelScope()
        self._out_ids = itertools.count(1)
        self._awaiting: dict[Id, tuple[ResponseHook | None, GoneHook | None]] = {}
        self.close_reason: str | None = None

    @property
    def supports_progress(self) -> bool:
        """Whether the client declared window.workDoneProgress."""
        window = self.capabilities.get("window")
        return isinstance(window, dict) and bool(window.get("workDoneProgress"))

    def send(self, body: bytes) -> None:
        """Queue one message; disconnect the client if its queue is full."""
        if self._scope.cancel_called:
            return
        try:
            self._send.send_nowait(body)
        except anyio.WouldBlock:
            self.dropped_messages += 1
            self.close(f"send queue full ({self._send.statistics().max_buffer_size} messages)")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def request(
        self, method: str, params: Any, on_response: ResponseHook | None = None, on_gone: GoneHook | None = None
    ) -> None:
        """Send a daemon-originated request; `on_response` sees the client's answer,
        `on_gone` the reason if the client leaves without one."""
        rid = f"lensmux-{next(self._out_ids)}"
        self._awaiting[rid] = (on_response, on_gone)
        self.send(ev.request(rid, method, ev.encode_value(params)))

    async def abandon_requests(self) -> None:
        """The client has left: whoever waits on its answers hears why instead."""
        reason = f"{self.name} disconnected ({self.close_reason or 'connection closed'})"
        awaiting, self._awaiting = self._awaiting, {}
        for _, on_gone in awaiting.values():
            if on_gone is not None:
                try:
                    await on_gone(reason)
                except Exception:
                    # One failed stand-in answer must not keep the others from being sent.
                    log.exception("%s: answering for a departed client failed", self.name)

    def reply(self, id_: Id | None, result: Any) -> None:
        """Answer one of the client's requests with a Python value."""
        self.send(ev.response(id_, ev.encode_value(result)))

    def reply_error(self, id_: Id | None, code: int, message: str) -> None:
        """Answer one of the client's requests with an error."""
        self.send(ev.error_response(id_, code, message))

    def close(self, reason: str) -> None:
        """End the connection (from any task); the handler's detach runs afterwards."""
        if self.close_reason is None:
            self.close_reason = reason
            if reason != "client exit":
                log.warning("%s on %s disconnected: %s", self.name, self.server_name, reason)
        self._scope.cancel()

    async def serve(self, handler: Handler) -> None:
        """Run the connection until the peer leaves or `close` is called."""
        with self._scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._writer_task)
                try:
                    await self._reader_task(handler)
                finally:
                    tg.cancel_scope.cancel()
        if self.close_reason is None:
            self.close_reason = "connection closed"
        with anyio.CancelScope(shield=True):
            await self._send.aclose()
            await self._stream.aclose()

    async def _reader_task(self, handler: Handler) -> None:
        while True:
            try:
                body = await self._reader.read()
            except FramingError as exc:
                self.close(f"unrecoverable framing error: {exc}")
                return
            if body is None:
                return
            self.last_active = time.monotonic()
            try:
                env = ev.decode(body)
            except ev.EnvelopeError as exc:
                log.info("%s sent a bad message: %s", self.name, exc)
                self.reply_error(exc.id, exc.code, str(exc))
                continue
            await self._dispatch(handler, env)

    async def _dispatch(self, handler: Handler, env: Envelope) -> None:
        if env.is_request:
            self.requests += 1
        try:
            if env.is_response:
                await self._on_response(env)
            else:
                await handler(self, env)
        except ev.EnvelopeError as exc:
            # A payload the daemon had to read was unusable: the sender's fault.
            log.info("%s: %s rejected: %s", self.name, env.method or "response", exc)
            if env.is_request:
                self.reply_error(env.rid, exc.code, str(exc))
        except Exception:
            # One message that trips a bug costs that message, not the connection.
            log.exception("%s: handling %s failed", self.name, env.method or f"response {env.rid!r}")
            if env.is_request:
                self.reply_error(env.rid, ErrorCode.INTERNAL_ERROR, f"lensmux failed to handle {env.method}")

    async def _on_response(self, env: Envelope) -> None:
        rid = env.rid
        if rid is None or rid not in self._awaiting:
            log.info("%s answered an id the daemon never sent: %r", self.name, rid)
            return
        hook, _ = self._awaiting.pop(rid)
        if hook is not None:
            result = hook(env)
            if result is not None:
                await result

    async def _writer_task(self) -> None:
        try:
            async for body in self._queue:
                await self._writer.send_many(self._take_batch(body))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.close(f"write failed: {exc}")

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

    def status(self) -> dict[str, Any]:
        """What `lensmux status` shows of this client."""
        return {
            "id": self.id,
            "name": self.name,
            "server": self.server_name,
            "pid": self.peer_pid,
            "connected_for_s": round(time.time() - self.connected_at, 1),
            "requests": self.requests,
            "queued": self._send.statistics().current_buffer_used,
        }
