"""The loopback HTTP API: `POST /api/v1/hybrid-search` (and `GET /api/v1/status`).

HTTP/1.1 parsing is h11's; requests are answered by the same control methods
the Unix socket serves, so the three interfaces cannot drift apart.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import h11
from anyio.abc import SocketStream, TaskStatus

from lensmux.daemon.control import ControlError, ControlServer
from lensmux.daemon.wire.envelope import ErrorCode

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
MAX_BODY = 1024 * 1024
_ROUTES = {
    ("POST", "/api/v1/hybrid-search"): "lensmux/hybridSearch",
    ("GET", "/api/v1/status"): "lensmux/status",
}
_STATUS_OF_CODE: dict[int, int] = {
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.SERVER_NOT_INITIALIZED: 503,
}


class HttpApiError(Exception):
    """The HTTP listener could not be started."""


def _response(status: int, payload: Any) -> tuple[h11.Response, bytes]:
    body = json.dumps(payload).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    return h11.Response(status_code=status, headers=headers), body


def _error(status: int, message: str, data: Any = None) -> tuple[h11.Response, bytes]:
    error: dict[str, Any] = {"status": status, "message": message}
    if data is not None:
        error["data"] = data
    return _response(status, {"error": error})


class HttpApi:
    """Serves the API on loopback only."""

    def __init__(self, control: ControlServer, port: int) -> None:
        self._control = control
        self.port = port

    async def run_task(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1:port until cancelled."""
        try:
            listener = await anyio.create_tcp_listener(local_host=LOOPBACK, local_port=self.port, reuse_port=False)
        except OSError as exc:
            log.error("HTTP API: cannot listen on %s:%d: %s", LOOPBACK, self.port, exc)
            task_status.started()
            return
        log.info("HTTP API on http://%s:%d/api/v1/hybrid-search", LOOPBACK, self.port)
        task_status.started()
        async with listener:
            await listener.serve(self._connection)

    async def _connection(self, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=16 * 1024)
        try:
            async with stream:
                while await self._one_request(conn, stream):
                    conn.start_next_cycle()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            return
        except h11.ProtocolError as exc:
            log.info("HTTP API: bad request: %s", exc)
        except Exception:
            # One broken request costs that connection, never the daemon.
            log.exception("HTTP API: request failed")

    async def _next_event(self, conn: h11.Connection, stream: SocketStream) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive(65536)
                except anyio.EndOfStream:
                    data = b""
                conn.receive_data(data)
                continue
            return event

    async def _one_request(self, conn: h11.Connection, stream: SocketStream) -> bool:
        event = await self._next_event(conn, stream)
        if not isinstance(event, h11.Request):
            return False
        body = b""
        too_big = False
        while True:
            part = await self._next_event(conn, stream)
            if isinstance(part, h11.Data):
                body += part.data
                too_big = too_big or len(body) > MAX_BODY
                if too_big:
                    body = b""
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                return False
        method, target = event.method.decode(), event.target.decode().split("?", 1)[0]
        if too_big:
            response, payload = _error(413, f"request body over {MAX_BODY} bytes")
        else:
            response, payload = await self._dispatch(method, target, body)
        await stream.send(conn.send(response))
        await stream.send(conn.send(h11.Data(data=payload)))
        await stream.send(conn.send(h11.EndOfMessage()))
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE

    async def _dispatch(self, method: str, target: str, body: bytes) -> tuple[h11.Response, bytes]:
        name = _ROUTES.get((method, target))
        if name is None:
            if any(path == target for _, path in _ROUTES):
                return _error(405, f"{method} is not allowed on {target}")
            return _error(404, f"no such endpoint: {target}")
        params: Any = None
        if method == "POST":
            try:
                params = json.loads(body or b"null")
            except (ValueError, UnicodeDecodeError) as exc:
                return _error(400, f"malformed JSON: {exc}")
        try:
            return _response(200, await self._control.call(name, params))
        except ControlError as exc:
            status = exc.data.get("http_status") if isinstance(exc.data, dict) else None
            return _error(status or _STATUS_OF_CODE.get(exc.code, 500), str(exc), exc.data)
