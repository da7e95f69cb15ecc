"""One editor connection on a server socket: read, validate, hand over, send back.

The session owns the connection's bounded send queue: nothing that happens
here may stall an instance, so a client that stops reading is disconnected
when its queue is full.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import ByteStream, SocketAttribute
from msgspec import UNSET

from lensmux.daemon.mux.clients.stream_transport import StreamTransport
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope, ErrorCode, Id
from lensmux.daemon.wire.framing import FrameLimits, FramingError
from lensmux.daemon.wire.socket_transport import FramedProtocol, open_framed

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)

Handler = Callable[["ClientSession", Envelope], Awaitable[None]]
# Routes a request at once if it can (routing.route_request_now); False leaves it to the handler.
RouteNow = Callable[["ClientSession", Envelope], bool]
ResponseHook = Callable[[Envelope], Awaitable[None] | None]
# Called instead of the response hook when the client leaves without answering.
GoneHook = Callable[[str], Awaitable[None]]


class RequestFirst(Protocol):
    """Which of a client's questions go before its didOpen (mux/documents/request_first.py)."""

    async def window(self, client: ClientSession, env: Envelope) -> float | None:
        """How long the didOpen `env` may wait for the client's next message; None: not at all."""

    def goes_first(self, client: ClientSession, open_env: Envelope, nxt: Envelope) -> bool:
        """Whether `nxt`, the client's next message, is routed before `open_env`."""

    async def answered(self, client: ClientSession, nxt: Envelope) -> None:
        """Return once the server has answered `nxt`, routed first (or it is no use waiting longer)."""


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
        # What its initialize named as workspace (workspaceFolders, rootPath, rootUri): servers word
        # their start-up by it (adapters' personal_greeting).
        self.workspace: dict[str, Any] = {}
        self.initialized = False
        self.shutdown_requested = False
        self.requests = 0
        self.dropped_messages = 0
        self._stream = stream
        self._limits = limits
        self._queue_size = queue_size
        # A socket connection takes the protocol path (socket_transport.py): messages wait in
        # `_outbox` for at most one loop turn, or while the client does not read.
        self._socket = stream.extra(SocketAttribute.raw_socket, None)
        # Any other stream is read and written by tasks, over a bounded queue (stream_transport.py).
        self._streamed = StreamTransport(stream, limits, queue_size)
        self._proto: FramedProtocol | None = None
        # Set when the protocol opens (asked once: on Python 3.11 get_running_loop() is a getpid call).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._outbox: list[bytes] = []
        self._flush_scheduled = False
        # Set by `close` and at the end of `serve`: from then on sends go nowhere.
        self._silent = False
        self._scope = anyio.CancelScope()
        self._out_ids = itertools.count(1)
        self._awaiting: dict[Id, tuple[ResponseHook | None, GoneHook | None]] = {}
        self.close_reason: str | None = None
        # Set once the client is attached to an instance: its requests may then be routed
        # inside the socket's read callback (`_take_now`).
        self.route_now: RouteNow | None = None
        # Set once attached, like route_now: lets a question overtake the didOpen just before it.
        self.request_first: RequestFirst | None = None
        # The read batch being routed, and whether the reader waits for a message to look at
        # (then the read callback routes nothing: what comes must not overtake that didOpen).
        self._queued: collections.deque[bytes] = collections.deque()
        self._peeking = False
        self._ended = False

    @property
    def supports_progress(self) -> bool:
        """Whether the client declared window.workDoneProgress."""
        window = self.capabilities.get("window")
        return isinstance(window, dict) and bool(window.get("workDoneProgress"))

    def send(self, body: bytes) -> None:
        """Queue one message; disconnect the client if its queue is full."""
        if self._silent:
            return
        if self._socket is not None:
            # Held until the end of this loop turn, then everything held goes in one write.
            outbox = self._outbox
            if len(outbox) >= self._queue_size:
                self.dropped_messages += 1
                self.close(f"send queue full ({self._queue_size} messages)")
                return
            outbox.append(body)
            if not self._flush_scheduled:
                self._flush_scheduled = True
                (self._loop or asyncio.get_running_loop()).call_soon(self._flush)
            return
        if not self._streamed.put(body):
            self.dropped_messages += 1
            self.close(f"send queue full ({self._queue_size} messages)")

    def _flush(self) -> None:
        self._flush_scheduled = False
        proto = self._proto
        if proto is None or not self._outbox:
            return
        try:
            if proto.write_if_writable(self._outbox):
                self._outbox = []
            # Otherwise the client is not reading: resume_writing calls this again.
        except (OSError, RuntimeError) as exc:
            self._outbox = []
            self.close(f"write failed: {exc}")

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
        self._silent = True
        self._scope.cancel()

    async def serve(self, handler: Handler) -> None:
        """Run the connection until the peer leaves or `close` is called."""
        try:
            with self._scope:
                if self._socket is not None:
                    self._loop = asyncio.get_running_loop()
                    self._proto = await open_framed(self._socket, self._limits, self._flush)
                    self._proto.on_frame = self._take_now
                    self._flush()
                    await self._protocol_reader_task(handler)
                else:
                    await self._streamed.run(functools.partial(self._handle_read, handler), self.close)
        finally:
            # What this turn produced still goes out if the socket takes it now (a shutdown
            # answer followed by exit in one read); later sends go nowhere, as on a closed queue.
            self._flush()
            self._silent = True
            self._outbox.clear()
            if self.close_reason is None:
                self.close_reason = "connection closed"
            if self._proto is not None:
                self._proto.close()
            with anyio.CancelScope(shield=True):
                await self._streamed.aclose()
                await self._stream.aclose()

    async def _protocol_reader_task(self, handler: Handler) -> None:
        """Every message that arrived since the last wake-up, routed in order."""
        assert self._proto is not None
        read_batch = self._proto.read_batch
        queued = self._queued
        while not self._ended:
            try:
                batch = await read_batch()
            except FramingError as exc:
                self.close(f"unrecoverable framing error: {exc}")
                return
            if batch is None:
                return
            self.last_active = time.monotonic()
            queued.extend(batch)
            while queued:
                body = queued.popleft()
                if self.request_first is not None and b'"textDocument/didOpen"' in body:
                    await self._open(handler, body)
                else:
                    await self._handle_body(handler, body)
            if self._proto.has_ready():
                # More arrived while routing: yield first, so a flooding client cannot
                # starve the others (without it, waiting for the next batch yields).
                await anyio.lowlevel.checkpoint()

    async def _open(self, handler: Handler, body: bytes) -> None:
        """Route a didOpen, after the client's next message if that is a question that goes first."""
        assert self.request_first is not None
        try:
            env = ev.decode(body)
        except ev.EnvelopeError:
            await self._handle_body(handler, body)
            return
        if env.method == "textDocument/didOpen" and env.id is UNSET:
            try:
                wait = await self.request_first.window(self, env)
                nxt = await self._peek(wait) if wait is not None else None
                if nxt is not None and self.request_first.goes_first(self, env, nxt):
                    self._queued.popleft()
                    await self._handle_env(handler, nxt)
                    await self.request_first.answered(self, nxt)
            except Exception as exc:
                # Whatever went wrong, the didOpen itself is still routed.
                self._failed(env, exc, is_request=False)
        await self._handle_env(handler, env)

    async def _peek(self, wait: float) -> Envelope | None:
        """The client's next message, left queued: already read, or read within `wait` seconds."""
        assert self._proto is not None
        if not self._queued and wait > 0:
            self._peeking = True
            try:
                with anyio.move_on_after(wait):
                    batch = await self._proto.read_batch()
                    if batch is None:
                        self._ended = True
                    else:
                        self._queued.extend(batch)
            except FramingError as exc:
                self.close(f"unrecoverable framing error: {exc}")
            finally:
                self._peeking = False
        if not self._queued:
            return None
        try:
            return ev.decode(self._queued[0])
        except ev.EnvelopeError:
            return None

    def _take_now(self, body: bytes) -> bool:
        """Route a request inside the read callback when the instance takes it at once; True if it did.

        The protocol offers a frame only while the reader waits with nothing queued,
        so nothing this client sent before it is still queued or being handled.
        Notifications, responses, anything that does not decode and any request
        `route_now` declines go to the reader task as before. A request that fails
        here is answered as `_handle_body` would answer it.
        """
        route = self.route_now
        # `"id"` in the body, or it cannot be a request: a notification (a large didChange) is not decoded twice.
        if route is None or self._silent or self._peeking or b'"id"' not in body:
            return False
        try:
            env = ev.decode(body)
        except ev.EnvelopeError:
            return False
        if env.method is UNSET or env.id is UNSET:
            return False
        try:
            if not route(self, env):
                return False
        except Exception as exc:
            self._failed(env, exc, is_request=True)
        self.requests += 1
        self.last_active = time.monotonic()
        return True

    async def _handle_body(self, handler: Handler, body: bytes) -> None:
        try:
            env = ev.decode(body)
        except ev.EnvelopeError as exc:
            log.info("%s sent a bad message: %s", self.name, exc)
            self.reply_error(exc.id, exc.code, str(exc))
            return
        await self._handle_env(handler, env)

    async def _handle_env(self, handler: Handler, env: Envelope) -> None:
        # The envelope's shape, read from its fields (decode has classified it).
        is_response = env.method is UNSET
        is_request = not is_response and env.id is not UNSET
        if is_request:
            self.requests += 1
        try:
            if is_response:
                await self._on_response(env)
            else:
                await handler(self, env)
        except Exception as exc:
            self._failed(env, exc, is_request=is_request)

    def _failed(self, env: Envelope, exc: Exception, *, is_request: bool) -> None:
        """Log a message whose handling raised `exc` (call inside the except) and answer a request with an error."""
        if isinstance(exc, ev.EnvelopeError):
            # A payload the daemon had to read was unusable: the sender's fault.
            log.info("%s: %s rejected: %s", self.name, env.method or "response", exc)
            if is_request:
                self.reply_error(env.rid, exc.code, str(exc))
            return
        # One message that trips a bug costs that message, not the connection.
        log.exception("%s: handling %s failed", self.name, env.method or f"response {env.rid!r}")
        if is_request:
            self.reply_error(env.rid, ErrorCode.INTERNAL_ERROR, f"lensmux failed to handle {env.method}")

    async def _handle_read(self, handler: Handler, body: bytes) -> None:
        """One message the stream path read (stream_transport.py)."""
        self.last_active = time.monotonic()
        await self._handle_body(handler, body)

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

    def status(self) -> dict[str, Any]:
        """What `lensmux status` shows of this client."""
        return {
            "id": self.id,
            "name": self.name,
            "server": self.server_name,
            "pid": self.peer_pid,
            "connected_for_s": round(time.time() - self.connected_at, 1),
            "requests": self.requests,
            "queued": self._streamed.queued() + len(self._outbox),
        }
