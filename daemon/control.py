"""The control socket: JSON-RPC for the CLI and tools (status, shutdown, index, search)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import ByteStream

from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import ErrorCode
from lensmux.daemon.wire.framing import FrameLimits, FrameReader, FrameWriter, FramingError

log = logging.getLogger(__name__)

Method = Callable[[Any], Awaitable[Any]]

# Answers in flight per connection; past this the connection's reader waits,
# so a caller that sends without reading stalls only itself, in bounded memory.
MAX_IN_FLIGHT = 64


class ControlError(Exception):
    """An error a control method reports to its caller."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class ControlServer:
    """Dispatches control requests to registered methods."""

    def __init__(self, limits: FrameLimits) -> None:
        self._methods: dict[str, Method] = {}
        self._limits = limits

    def register(self, name: str, method: Method) -> None:
        """Make `name` callable over the control socket."""
        self._methods[name] = method

    async def call(self, name: str, params: Any) -> Any:
        """Call a method in-process (the HTTP API uses this too)."""
        method = self._methods.get(name)
        if method is None:
            raise ControlError(ErrorCode.METHOD_NOT_FOUND, f"unknown method {name!r}")
        return await method(params)

    async def serve(self, stream: ByteStream) -> None:
        """Serve one connection; requests are answered concurrently, at most MAX_IN_FLIGHT at once."""
        reader = FrameReader(stream, self._limits)
        writer = FrameWriter(stream)
        slots = anyio.Semaphore(MAX_IN_FLIGHT)
        try:
            async with anyio.create_task_group() as tg:
                while True:
                    try:
                        body = await reader.read()
                    except FramingError as exc:
                        log.warning("control: closing connection: %s", exc)
                        break
                    if body is None:
                        break
                    try:
                        env = ev.decode(body)
                    except ev.EnvelopeError as exc:
                        log.info("control: bad message: %s", exc)
                        await writer.send(ev.error_response(exc.id, exc.code, str(exc)))
                        continue
                    if env.is_request:
                        await slots.acquire()
                        tg.start_soon(self._answer, writer, env, slots)
                    elif env.is_response:
                        log.info("control: ignoring a response to id %r the daemon never sent", env.rid)
                    else:
                        log.debug("control: ignoring notification %s", env.method)
        except* (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as group:
            # except*: the task group wraps what its body raises too (an answer to a bad message
            # sent to a peer already gone); a plain except never matched, and the daemon logged
            # an ordinary disconnect as a failed connection task, with its traceback.
            log.info("control: connection lost: %r", group.exceptions[0])
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def _answer(self, writer: FrameWriter, env: ev.Envelope, slots: anyio.Semaphore) -> None:
        assert isinstance(env.method, str) and env.id is not ev.UNSET
        try:
            try:
                result = await self.call(env.method, ev.decode_value(env.params))
                body = ev.response(env.id, ev.encode_value(result))
            except ControlError as exc:
                body = ev.error_response(env.id, exc.code, str(exc), exc.data)
            except ev.EnvelopeError as exc:
                body = ev.error_response(env.id, exc.code, str(exc))
            except Exception as exc:
                log.exception("control: %s failed", env.method)
                body = ev.error_response(env.id, ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            try:
                await writer.send(body)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                log.info("control: could not answer %s: %r", env.method, exc)
        finally:
            slots.release()
