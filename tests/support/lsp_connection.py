"""JSON-RPC connection core of the LSP test client: requests, answers, notification log.

Exception tree:

    LspClientError                      (support.lsp_framing)
    ├── LspProtocolError                the peer broke the protocol
    │   └── LspFramingError             the peer's bytes are not LSP messages
    ├── LspResponseError                the peer answered with a JSON-RPC error
    ├── LspConnectionClosed             the connection ended before the answer
    └── LspTimeout (also TimeoutError)  nothing arrived within the timeout
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from support.lsp_defaults import INTERNAL_ERROR, LspResponseError, ServerRequestHandler, method_not_found
from support.lsp_framing import LspClientError, LspFramingError, LspProtocolError, encode_message, read_message

logger = logging.getLogger(__name__)

RequestId = int | str

STREAM_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class LspConnectionClosed(LspClientError):
    """The connection ended before the awaited answer, or could not be written to."""


class LspTimeout(LspClientError, TimeoutError):
    """No answer or matching message arrived within the timeout."""


class PendingRequest:
    """A request sent to the peer whose answer may still be on its way."""

    def __init__(self, client: LspConnection, request_id: RequestId, method: str) -> None:
        self.id = request_id
        self.method = method
        self._client = client
        self._answered = anyio.Event()
        self._result: Any = None
        self._error: LspClientError | None = None

    @property
    def done(self) -> bool:
        """True once an answer (or a failure) has arrived."""
        return self._answered.is_set()

    def _resolve(self, result: Any) -> None:
        self._result = result
        self._answered.set()

    def _fail(self, error: LspClientError) -> None:
        self._error = error
        self._answered.set()

    async def result(self, *, timeout: float = 60) -> Any:
        """The answer's result; raises LspResponseError, LspConnectionClosed or LspTimeout."""
        with anyio.move_on_after(timeout):
            await self._answered.wait()
        if not self._answered.is_set():
            raise LspTimeout(f"{self._client.name}: no answer to {self.method} (id {self.id!r}) within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result

    async def cancel(self) -> None:
        """Send `$/cancelRequest` for this request."""
        await self._client.notify("$/cancelRequest", {"id": self.id})


class LspConnection:
    """One JSON-RPC connection over byte streams; LspClient adds transports and LSP verbs."""

    def __init__(self, send_stream: ByteSendStream, receive_stream: ByteReceiveStream, *, name: str) -> None:
        self.name = name
        self.closed = anyio.Event()
        self.close_reason: str | None = None
        self.notifications: list[tuple[str, Any]] = []
        self.server_requests: list[tuple[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.protocol_errors: list[str] = []
        self._send_stream = send_stream
        self._receive = BufferedByteReceiveStream(receive_stream)
        self._write_lock = anyio.Lock()
        self._next_id = 0
        self._pending: dict[RequestId, PendingRequest] = {}
        self._handlers: dict[str, ServerRequestHandler] = {}
        self._arrival = anyio.Event()
        self._raw_cursor = 0
        self._task_group: TaskGroup | None = None

    # -- running --------------------------------------------------------------------

    @asynccontextmanager
    async def _serving(
        self, stop: Callable[[], Coroutine[Any, Any, None]], *extra_tasks: Callable[[], Coroutine[Any, Any, None]]
    ) -> AsyncIterator[None]:
        lone: BaseException | None = None
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                task_group.start_soon(self._reader_task)
                for task in extra_tasks:
                    task_group.start_soon(task)
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await stop()
                    task_group.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) != 1 or isinstance(group.exceptions[0], BaseExceptionGroup):
                raise
            lone = group.exceptions[0]
        if lone is not None:
            # Our own tasks never raise, so a lone exception is the test body's: hand it back
            # unwrapped (raised outside the handler, so its cause and context stay its own)
            # and `pytest.raises(LspResponseError)` works around the block.
            raise lone

    # -- sending ----------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Write arbitrary bytes to the peer (for bad-input tests)."""
        async with self._write_lock:
            try:
                await self._send_stream.send(data)
            except STREAM_GONE as exc:
                raise LspConnectionClosed(f"{self.name}: cannot send: {exc!r}") from exc

    async def send_message(self, message: Mapping[str, Any]) -> None:
        """Frame and send one JSON-RPC message as given."""
        await self.send_raw(encode_message(message))

    async def start_request(
        self, method: str, params: Any = None, *, request_id: RequestId | None = None
    ) -> PendingRequest:
        """Send a request without waiting; `request_id` overrides the counter (e.g. string ids)."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        if request_id in self._pending:
            raise ValueError(f"request id {request_id!r} is still pending")
        pending = PendingRequest(self, request_id, method)
        self._pending[request_id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send_message(message)
        except LspConnectionClosed:
            del self._pending[request_id]
            raise
        if self.closed.is_set() and not pending.done:
            # The reader already failed everything pending; this one arrived too late for that.
            del self._pending[request_id]
            pending._fail(self._closed_error(pending))
        return pending

    async def request(self, method: str, params: Any = None, *, timeout: float = 60) -> Any:
        """Send a request and return its result; raises LspResponseError on an error answer."""
        pending = await self.start_request(method, params)
        return await pending.result(timeout=timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_message(message)

    def on_server_request(self, method: str, handler: ServerRequestHandler) -> None:
        """Answer server->client `method` with handler(params) (may be async; may raise LspResponseError)."""
        self._handlers[method] = handler

    async def disconnect(self) -> None:
        """Close the sending side now: stdin of a process, or the whole socket."""
        await self._close_send_stream()

    # -- receiving --------------------------------------------------------------------

    def notifications_of(self, method: str) -> list[Any]:
        """Params of every notification of `method` received so far, in order."""
        return [params for name, params in self.notifications if name == method]

    async def wait_notification(
        self,
        method: str,
        predicate: Callable[[Any], bool] | None = None,
        *,
        timeout: float = 60,
        since: int = 0,
    ) -> Any:
        """Params of the first matching notification at or after index `since` of the log."""
        index = since
        with anyio.move_on_after(timeout):
            while True:
                arrival = self._arrival
                while index < len(self.notifications):
                    name, params = self.notifications[index]
                    index += 1
                    if name == method and (predicate is None or predicate(params)):
                        return params
                if self.closed.is_set():
                    raise LspConnectionClosed(f"{self.name}: {self.close_reason}; no matching {method} arrived")
                await arrival.wait()
        raise LspTimeout(f"{self.name}: no matching {method} within {timeout} s")

    async def read_raw_message(self, timeout: float = 60) -> dict[str, Any]:
        """The next incoming message of any kind not yet returned by this method."""
        with anyio.move_on_after(timeout):
            while True:
                arrival = self._arrival
                if self._raw_cursor < len(self.messages):
                    self._raw_cursor += 1
                    return self.messages[self._raw_cursor - 1]
                if self.closed.is_set():
                    raise LspConnectionClosed(f"{self.name}: {self.close_reason}")
                await arrival.wait()
        raise LspTimeout(f"{self.name}: no message within {timeout} s")

    async def _reader_task(self) -> None:
        reason = "peer closed the stream"
        try:
            while (message := await read_message(self._receive)) is not None:
                self._dispatch(message)
        except LspFramingError as exc:
            reason = f"protocol violation: {exc}"
            self._note_protocol_error(str(exc))
        except (anyio.BrokenResourceError, ConnectionResetError):
            reason = "peer closed the stream (connection reset)"
        except anyio.ClosedResourceError:
            reason = "client closed the stream"
        except OSError as exc:
            reason = f"stream failed: {exc!r}"
        except anyio.get_cancelled_exc_class():
            reason = "client stopped reading"
            raise
        finally:
            self._mark_closed(reason)

    def _dispatch(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if message.get("jsonrpc") != "2.0":
            self._note_protocol_error(f"message without jsonrpc 2.0: {message!r}")
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self.server_requests.append((method, message.get("params")))
            assert self._task_group is not None
            # Answered in its own task so a slow handler never stalls reading.
            self._task_group.start_soon(self._answer_server_request, message["id"], method, message.get("params"))
        elif isinstance(method, str):
            self.notifications.append((method, message.get("params")))
        elif "id" in message and ("result" in message or "error" in message):
            self._resolve_response(message)
        else:
            self._note_protocol_error(f"unclassifiable message: {message!r}")
        self._signal_arrival()

    def _resolve_response(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        pending = self._pending.pop(request_id, None) if isinstance(request_id, int | str) else None
        if pending is None:
            self._note_protocol_error(f"response to unknown request id {request_id!r}")
            return
        error = message.get("error")
        if error is None:
            pending._resolve(message.get("result"))
        elif isinstance(error, dict) and isinstance(error.get("code"), int):
            pending._fail(LspResponseError(error["code"], str(error.get("message", "")), error.get("data")))
        else:
            self._note_protocol_error(f"malformed error member: {message!r}")
            pending._fail(LspProtocolError(f"{self.name}: malformed error answer {error!r}"))

    async def _answer_server_request(self, request_id: Any, method: str, params: Any) -> None:
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        handler = self._handlers.get(method)
        if handler is None:
            response["error"] = method_not_found(method).to_wire()
        else:
            response.update(await self._run_handler(handler, method, params))
        try:
            await self.send_message(response)
        except LspConnectionClosed as exc:
            logger.info("%s: could not answer %s: %s", self.name, method, exc)

    async def _run_handler(self, handler: ServerRequestHandler, method: str, params: Any) -> dict[str, Any]:
        """The `result` or `error` member answering one server request."""
        try:
            result = handler(params)
            if inspect.isawaitable(result):
                result = await result
        except LspResponseError as exc:
            return {"error": exc.to_wire()}
        except Exception as exc:
            logger.exception("%s: handler for server request %s failed", self.name, method)
            return {"error": {"code": INTERNAL_ERROR, "message": f"test handler: {exc!r}"}}
        return {"result": result}

    def _note_protocol_error(self, description: str) -> None:
        logger.error("%s: %s", self.name, description)
        self.protocol_errors.append(description)

    def _signal_arrival(self) -> None:
        self._arrival.set()
        self._arrival = anyio.Event()

    def _closed_error(self, pending: PendingRequest) -> LspConnectionClosed:
        return LspConnectionClosed(
            f"{self.name}: {self.close_reason} before {pending.method} (id {pending.id!r}) was answered"
        )

    def _mark_closed(self, reason: str) -> None:
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.closed.set()
        pending, self._pending = self._pending, {}
        for request in pending.values():
            request._fail(self._closed_error(request))
        self._signal_arrival()

    async def _close_send_stream(self) -> None:
        try:
            await self._send_stream.aclose()
        except STREAM_GONE as exc:
            logger.debug("%s: closing the send stream: %r", self.name, exc)
