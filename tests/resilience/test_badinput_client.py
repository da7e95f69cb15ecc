"""Bad input on a server socket: answered with the JSON-RPC error, or closed and logged.

Every case runs against one daemon with a bystander client attached to the same
fake server instance: after each case the bystander still gets answers and
`lensmux/status` still works.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.fake_servers import fake_server_config

from resilience.fake_daemon import (
    CONNECTION_TASK_FAILED,
    daemon_tracebacks,
    fake_socket,
    log_count,
    log_length,
    make_workspace,
    wait_for_log_line,
)
from resilience.wire_client import WireClient, frame, frame_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002


@pytest.fixture(scope="module")
def fake_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    """One daemon for every case of this module."""
    with running_daemon(tmp_path_factory.mktemp("badinput"), fake_server_config()) as daemon:
        yield daemon
        assert log_count(daemon, CONNECTION_TASK_FAILED) == 0
        assert daemon_tracebacks(daemon) == 0


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root every client of this module opens."""
    return make_workspace(tmp_path_factory.mktemp("ws"))


@pytest.fixture(scope="module")
def bystander(fake_daemon: DaemonProc, workspace: Path) -> Iterator[WireClient]:
    """A well-behaved client on the same instance, connected throughout."""
    with WireClient(fake_socket(fake_daemon), name="bystander") as client:
        client.initialize(workspace)
        yield client


def assert_everyone_else_carries_on(daemon: DaemonProc, bystander: WireClient) -> None:
    """The other client gets answers, status works, and only the bystander is left connected."""
    assert bystander.result("fake/echo", {"still": "here"}) == {"still": "here"}
    wait_until(lambda: len(daemon.status()["clients"]) == 1, timeout=10, what="only the bystander to remain")


DEEP = b"[" * 5000 + b"]" * 5000

# (bytes sent, error code expected, id the error answer carries)
WELL_FRAMED_BAD_BODIES = [
    pytest.param(frame(b'{"jsonrpc":"2.0","id":1,"method":'), PARSE_ERROR, None, id="invalid-json"),
    pytest.param(frame(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}'), PARSE_ERROR, None, id="invalid-utf8"),
    pytest.param(b"Content-Length: 0\r\n\r\n", PARSE_ERROR, None, id="empty-body"),
    pytest.param(frame(b'{"jsonrpc":"2.0","id":2,"method":"x","params":' + DEEP + b"}"), PARSE_ERROR, None, id="deep"),
    pytest.param(frame(b"42"), INVALID_REQUEST, None, id="number"),
    pytest.param(frame(b'"initialize"'), INVALID_REQUEST, None, id="string"),
    pytest.param(frame(b"null"), INVALID_REQUEST, None, id="null"),
    pytest.param(frame_json([{"jsonrpc": "2.0", "id": 3, "method": "fake/echo"}]), INVALID_REQUEST, None, id="batch"),
    pytest.param(frame(b"[]"), INVALID_REQUEST, None, id="empty-batch"),
    pytest.param(frame_json({"jsonrpc": "2.0", "id": 4}), INVALID_REQUEST, None, id="missing-method"),
    pytest.param(frame_json({"jsonrpc": "2.0", "id": 5, "method": 42}), INVALID_REQUEST, 5, id="method-not-string"),
    pytest.param(frame_json({"jsonrpc": "1.0", "id": 6, "method": "fake/echo"}), INVALID_REQUEST, 6, id="jsonrpc-1.0"),
    pytest.param(
        frame_json({"jsonrpc": "2.0", "id": "s7", "method": "fake/echo", "params": "text"}),
        INVALID_REQUEST,
        "s7",
        id="params-not-structured",
    ),
    pytest.param(frame_json({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}), INVALID_REQUEST, None, id="id-object"),
    pytest.param(frame_json({"jsonrpc": "2.0", "id": None, "method": "x"}), INVALID_REQUEST, None, id="id-null"),
    pytest.param(
        frame_json({"jsonrpc": "2.0", "id": 8, "result": 1, "error": {"code": 1, "message": "m"}}),
        INVALID_REQUEST,
        None,
        id="result-and-error",
    ),
]


@pytest.mark.parametrize("initialized", [False, True], ids=["before-initialize", "after-initialize"])
@pytest.mark.parametrize(("data", "code", "answer_id"), WELL_FRAMED_BAD_BODIES)
def test_well_framed_bad_body_gets_its_error_and_the_connection_stays_usable(
    fake_daemon: DaemonProc,
    workspace: Path,
    bystander: WireClient,
    *,
    initialized: bool,
    data: bytes,
    code: int,
    answer_id: Any,
) -> None:
    with WireClient(fake_socket(fake_daemon), name="bad") as client:
        if initialized:
            client.initialize(workspace)
        client.send_raw(data)
        reply = client.read_message()
        assert reply is not None, "the daemon closed a connection it could have kept"
        assert reply["jsonrpc"] == "2.0"
        assert reply["id"] == answer_id
        assert reply["error"]["code"] == code
        if not initialized:
            client.initialize(workspace)
        assert client.result("fake/echo", {"after": "error"}) == {"after": "error"}
    assert_everyone_else_carries_on(fake_daemon, bystander)


def test_unknown_method_before_initialize_is_server_not_initialized(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient
) -> None:
    with WireClient(fake_socket(fake_daemon), name="early") as client:
        reply = client.request("no/suchMethod", {})
        assert reply["error"]["code"] == SERVER_NOT_INITIALIZED
        client.initialize(workspace)
        assert client.result("fake/echo", [1]) == [1]
    assert_everyone_else_carries_on(fake_daemon, bystander)


def test_unknown_method_after_initialize_is_answered_by_the_server(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient
) -> None:
    with WireClient(fake_socket(fake_daemon), name="curious") as client:
        client.initialize(workspace)
        reply = client.request("no/suchMethod", {"x": 1})
        assert reply["error"]["code"] == METHOD_NOT_FOUND
        # The server, not the daemon, said so: the fake saw the request.
        seen = [method for method, _ in client.result("fake/requests", {})]
        assert "no/suchMethod" in seen
    assert_everyone_else_carries_on(fake_daemon, bystander)


@pytest.mark.parametrize("initialized", [False, True], ids=["before-initialize", "after-initialize"])
def test_responses_to_ids_never_sent_are_logged_and_ignored(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient, initialized: bool
) -> None:
    before = log_count(fake_daemon, "answered an id the daemon never sent")
    with WireClient(fake_socket(fake_daemon), name="stray") as client:
        if initialized:
            client.initialize(workspace)
        client.send({"jsonrpc": "2.0", "id": "never-sent", "result": {"applied": True}})
        client.send({"jsonrpc": "2.0", "id": 991, "error": {"code": -32603, "message": "no"}})
        client.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "yours was bad"}})
        if not initialized:
            client.initialize(workspace)
        # Nothing was answered to the stray responses: the next message is the echo.
        assert client.result("fake/echo", {"n": 2}) == {"n": 2}
    wait_until(
        lambda: log_count(fake_daemon, "answered an id the daemon never sent") == before + 3,
        timeout=10,
        what="a log line per stray response",
    )
    assert_everyone_else_carries_on(fake_daemon, bystander)


# (bytes sent, what the log line names)
UNFRAMEABLE = [
    pytest.param(b"hello there\r\n\r\n{}", "header line without ':'", id="garbage-header"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: lensmux\r\n\r\n", "header line without ':'", id="http"),
    pytest.param(b"\x00\xff\xfe\x01\r\n\r\n", "header line without ':'", id="binary"),
    pytest.param(b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}", "no Content-Length", id="missing-length"),
    pytest.param(b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "given twice", id="repeated-length"),
    pytest.param(b"Content-Length: -2\r\n\r\n{}", "not a non-negative integer", id="negative-length"),
    pytest.param(b"Content-Length: two\r\n\r\n{}", "not a non-negative integer", id="word-length"),
    pytest.param(b"Content-Length: 999999999999\r\n\r\n", "exceeds the cap", id="oversized-length"),
    pytest.param(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", "exceeds the cap", id="5000-digit-length"),
    pytest.param(b"X" * 20000, "no end of headers", id="endless-header"),
    pytest.param(
        b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=latin-1\r\n\r\n{}",
        "unsupported charset",
        id="bad-charset",
    ),
    pytest.param(b"Content-Length: 100\r\n\r\n{}", "stream ended inside a 100-byte body", id="truncated-body"),
]


@pytest.mark.parametrize(("data", "logged"), UNFRAMEABLE)
def test_unframeable_input_closes_the_connection_with_a_log_line(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient, data: bytes, logged: str
) -> None:
    mark = log_length(fake_daemon)
    with WireClient(fake_socket(fake_daemon), name="garbage") as client:
        client.initialize(workspace)
        client.send_raw(data)
        # End our side too: input that only stops making sense at the end of stream
        # (a truncated body) must be reported then, and nothing else changes.
        client.shutdown_write()
        received = client.wait_closed()
    assert not [m for m in received if "method" not in m], f"unframeable input was answered: {received}"

    wait_for_log_line(fake_daemon, mark, "disconnected: unrecoverable framing error", logged)
    assert_everyone_else_carries_on(fake_daemon, bystander)


def test_params_the_daemon_cannot_read_cost_that_message_only(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient
) -> None:
    # Valid JSON, but a number no decoder can hold: the daemon reads initialize's params itself.
    unreadable = b'{"processId":null,"rootUri":"%s","capabilities":{"x":1e999}}' % workspace.as_uri().encode()
    with WireClient(fake_socket(fake_daemon), name="odd") as client:
        client.send_raw(frame(b'{"jsonrpc":"2.0","id":"odd-init","method":"initialize","params":' + unreadable + b"}"))
        reply = client.read_message()
        assert reply is not None
        assert (reply["id"], reply["error"]["code"]) == ("odd-init", INVALID_PARAMS)
        client.initialize(workspace)
        # A document notification the daemon must read: dropped with a log line, nothing answered.
        did_open = b'{"textDocument":{"uri":"file:///x.txt","version":1e999,"text":""}}'
        client.send_raw(frame(b'{"jsonrpc":"2.0","method":"textDocument/didOpen","params":' + did_open + b"}"))
        assert client.result("fake/echo", {"n": 3}) == {"n": 3}
    assert_everyone_else_carries_on(fake_daemon, bystander)


@pytest.mark.parametrize("capabilities", [1.5, "all", [1], {"window": 3, "textDocument": "x"}], ids=str)
def test_initialize_with_capabilities_of_the_wrong_shape(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient, capabilities: object
) -> None:
    with WireClient(fake_socket(fake_daemon), name="odd-caps") as client:
        params = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": capabilities}
        reply = client.request("initialize", params)
        if isinstance(capabilities, dict):
            # Odd members are ignored like unknown ones: the client is served.
            assert "capabilities" in reply["result"]
            assert client.result("fake/echo", {"n": 4}) == {"n": 4}
        else:
            assert reply["error"]["code"] == INVALID_PARAMS
            assert "capabilities" in reply["error"]["message"]
    assert daemon_tracebacks(fake_daemon) == 0
    assert_everyone_else_carries_on(fake_daemon, bystander)


@pytest.mark.parametrize("field", [b'"capabilities":{},"clientInfo":"editor"'])
def test_initialize_with_a_client_info_that_is_not_an_object_is_served(
    fake_daemon: DaemonProc, workspace: Path, bystander: WireClient, field: bytes
) -> None:
    params = b'{"processId":null,"rootUri":"%s",%s}' % (workspace.as_uri().encode(), field)
    with WireClient(fake_socket(fake_daemon), name="odd") as client:
        client.send_raw(frame(b'{"jsonrpc":"2.0","id":"odd-init","method":"initialize","params":' + params + b"}"))
        reply = client.read_message()
        assert reply is not None and reply["id"] == "odd-init"
        assert "capabilities" in reply["result"]
    assert "Traceback" not in fake_daemon.log_text()
    assert_everyone_else_carries_on(fake_daemon, bystander)
