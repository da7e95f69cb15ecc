"""Bad input on the control socket: the JSON-RPC error or a closed, logged connection; the daemon lives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until

from resilience.fake_daemon import (
    CONNECTION_TASK_FAILED,
    control_socket,
    daemon_tracebacks,
    log_count,
    log_length,
    wait_for_log_line,
)
from resilience.wire_client import WireClient, frame, frame_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


@pytest.fixture(scope="module")
def plain_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """One daemon with the default configuration for every case of this module."""
    with running_daemon(tmp_path_factory.mktemp("control")) as daemon:
        yield daemon
        assert log_count(daemon, CONNECTION_TASK_FAILED) == 0
        assert daemon_tracebacks(daemon) == 0


@pytest.mark.parametrize(
    ("data", "code", "answer_id"),
    [
        pytest.param(frame(b'{"jsonrpc":"2.0","id":1,"method":"lensmux/ping"'), PARSE_ERROR, None, id="invalid-json"),
        pytest.param(frame(b'{"jsonrpc":"2.0","id":1,"method":"\xc3\x28"}'), PARSE_ERROR, None, id="invalid-utf8"),
        pytest.param(frame(b"true"), INVALID_REQUEST, None, id="not-an-object"),
        pytest.param(
            frame_json([{"jsonrpc": "2.0", "id": 1, "method": "lensmux/ping"}]), INVALID_REQUEST, None, id="batch"
        ),
        pytest.param(frame_json({"jsonrpc": "2.0", "id": 2}), INVALID_REQUEST, None, id="missing-method"),
        pytest.param(
            frame_json({"jsonrpc": "2.0", "id": 3, "method": ["x"]}), INVALID_REQUEST, 3, id="method-not-string"
        ),
        pytest.param(
            frame_json({"jsonrpc": "2.0", "id": 4, "method": "no/such"}), METHOD_NOT_FOUND, 4, id="unknown-method"
        ),
        pytest.param(
            frame_json({"jsonrpc": "2.0", "id": 5, "method": "lensmux/ping", "params": 12}),
            INVALID_REQUEST,
            5,
            id="params-not-structured",
        ),
    ],
)
def test_bad_control_message_gets_its_error_and_the_connection_stays_usable(
    plain_daemon: DaemonProc, data: bytes, code: int, answer_id: Any
) -> None:
    with WireClient(control_socket(plain_daemon), name="ctl") as client:
        client.send_raw(data)
        reply = client.read_message()
        assert reply is not None
        assert (reply["id"], reply["error"]["code"]) == (answer_id, code)
        assert client.result("lensmux/ping")["pid"] == plain_daemon.pid


def test_stray_responses_and_notifications_on_the_control_socket_are_ignored(plain_daemon: DaemonProc) -> None:
    before = log_count(plain_daemon, "never sent")
    with WireClient(control_socket(plain_daemon), name="ctl") as client:
        client.send({"jsonrpc": "2.0", "id": 77, "result": None})
        client.send({"jsonrpc": "2.0", "method": "lensmux/shutdown"})
        # Neither was answered, and the notification shut nothing down.
        assert client.result("lensmux/ping")["pid"] == plain_daemon.pid
    wait_until(lambda: log_count(plain_daemon, "never sent") == before + 1, timeout=10, what="the stray response log")
    assert plain_daemon.proc.poll() is None


@pytest.mark.parametrize(
    ("data", "logged"),
    [
        pytest.param(b"garbage\r\n\r\n", "header line without ':'", id="garbage-header"),
        pytest.param(b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n{", "given twice", id="repeated-length"),
        pytest.param(b"Content-Length: -1\r\n\r\n", "not a non-negative integer", id="negative-length"),
        pytest.param(b"Content-Type: text/plain\r\n\r\n", "no Content-Length", id="missing-length"),
        pytest.param(b"Content-Length: 123456789012345\r\n\r\n", "exceeds the cap", id="oversized-length"),
        pytest.param(b"Content-Length: " + b"1" * 6000 + b"\r\n\r\n", "exceeds the cap", id="6000-digit-length"),
        pytest.param(b"Content-Length: 50\r\n\r\n{", "stream ended inside", id="truncated-body"),
    ],
)
def test_unframeable_control_input_closes_the_connection_with_a_log_line(
    plain_daemon: DaemonProc, data: bytes, logged: str
) -> None:
    mark = log_length(plain_daemon)
    with WireClient(control_socket(plain_daemon), name="ctl") as client:
        client.send_raw(data)
        client.shutdown_write()
        assert client.wait_closed() == []

    wait_for_log_line(plain_daemon, mark, "control: closing connection", logged)
    assert plain_daemon.status()["pid"] == plain_daemon.pid
