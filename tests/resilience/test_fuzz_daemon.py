"""Fuzzing a live daemon over real sockets: random byte blobs, one connection each.

Each blob mixes garbage, wrong headers and well-framed messages (some of them
valid) and is sent to a server socket or the control socket. The daemon must
stay up, close every such connection once the blob has ended, answer status,
and never lose a connection task to an exception.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.daemon_proc import DaemonProc, running_daemon
from support.fake_servers import fake_server_config

from resilience.fake_daemon import (
    CONNECTION_TASK_FAILED,
    control_socket,
    daemon_tracebacks,
    fake_socket,
    log_count,
    make_workspace,
)
from resilience.wire_client import WireClient, frame, frame_json

WORKSPACE_NAME = "ws"


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProc, Path, WireClient]]:
    """A daemon, its workspace, and a well-behaved client attached before the fuzzing."""
    base = tmp_path_factory.mktemp("fuzzd")
    workspace = make_workspace(base / WORKSPACE_NAME)
    with (
        running_daemon(base / "d", fake_server_config()) as daemon,
        WireClient(fake_socket(daemon), name="steady") as steady,
    ):
        steady.initialize(workspace)
        yield daemon, workspace, steady


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
# Methods the daemon acts on itself, plus the fake's harmless ones; never anything
# that would stop the daemon or ask a client something.
client_methods = st.sampled_from(
    [
        "textDocument/didOpen",
        "textDocument/didChange",
        "textDocument/didClose",
        "textDocument/didSave",
        "$/cancelRequest",
        "$/setTrace",
        "initialized",
        "shutdown",
        "exit",
        "textDocument/hover",
        "fake/echo",
        "workspace/didChangeWatchedFiles",
        "lensmux/ping",
        "lensmux/status",
    ]
) | st.text(max_size=12)


def initialize_frame(root: Path, rid: int = 0, capabilities: Any = None) -> bytes:
    """A valid initialize for the workspace (random roots would start servers anywhere)."""
    params = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}
    return frame_json({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params})


@st.composite
def messages(draw: st.DrawFn, root: Path) -> bytes:
    """One framed message: valid, nearly valid, or a JSON value that is no message at all."""
    kind = draw(st.sampled_from(["initialize", "request", "notification", "response", "value"]))
    if kind == "initialize":
        return initialize_frame(root, draw(st.integers(0, 9)), draw(json_values))
    if kind == "value":
        return frame_json(draw(json_values))
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind != "notification":
        message["id"] = draw(st.integers(-5, 5) | st.text(max_size=4))
    if kind == "response":
        message[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    else:
        message["method"] = draw(client_methods)
        if draw(st.booleans()):
            message["params"] = draw(json_values | document_params(root))
    return frame(json.dumps(message).encode())


def document_params(root: Path) -> st.SearchStrategy[dict[str, Any]]:
    """Params shaped like document sync, with random values where the daemon reads them."""
    ident = st.fixed_dictionaries(
        {"uri": st.just((root / "a.txt").as_uri()) | st.text(max_size=8)},
        optional={"text": json_values, "version": json_values, "languageId": json_values},
    )
    change = st.fixed_dictionaries(
        {"text": st.text(max_size=8) | json_values},
        optional={
            "range": json_values | st.just({"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 99}})
        },
    )
    return st.fixed_dictionaries(
        {"textDocument": ident},
        optional={
            "contentChanges": st.lists(change, max_size=2) | json_values,
            "id": json_values,
            "position": json_values,
        },
    )


garbage = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"Content-Length: 5\r\n\r\n",
            b"Content-Length: -1\r\n\r\n",
            b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n",
            b"Content-Type: application/vscode-jsonrpc\r\n\r\n",
            b"Content-Length: 99999999999999\r\n\r\n",
            b"\r\n\r\n",
            b"Content-Length: 0\r\n\r\n",
            b"Content-Length: " + b"7" * 5000 + b"\r\n\r\n",
        ]
    ),
)


def blobs(root: Path) -> st.SearchStrategy[bytes]:
    """Up to a few pieces of messages and garbage, half of the time after a valid initialize."""
    pieces = st.lists(messages(root) | garbage, min_size=1, max_size=5).map(b"".join)
    return st.tuples(st.sampled_from([b"", initialize_frame(root)]), pieces).map(b"".join)


def send_blob_and_wait_for_close(path: Path, blob: bytes) -> None:
    """Send the blob, end our side, and read until the daemon closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        try:
            sock.sendall(blob)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(1 << 16):
                pass
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon closed first: unframeable input


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data(), control=st.booleans())
def test_random_blobs_never_take_a_connection_task_or_the_daemon_down(
    fuzzed: tuple[DaemonProc, Path, WireClient], data: st.DataObject, control: bool
) -> None:
    daemon, workspace, _ = fuzzed
    blob = data.draw(blobs(workspace), label="blob")
    send_blob_and_wait_for_close(control_socket(daemon) if control else fake_socket(daemon), blob)
    assert daemon.proc.poll() is None, "the daemon died"
    assert daemon.call("lensmux/ping")["pid"] == daemon.pid
    assert log_count(daemon, CONNECTION_TASK_FAILED) == 0
    assert daemon_tracebacks(daemon) == 0


def test_after_the_fuzzing_everything_still_works(fuzzed: tuple[DaemonProc, Path, WireClient]) -> None:
    daemon, _, steady = fuzzed
    assert steady.result("fake/echo", {"after": "fuzz"}) == {"after": "fuzz"}
    status = daemon.status()
    assert [c["name"] for c in status["clients"]] == [f"steady-{status['clients'][0]['id']}"]
    assert [i["restarts"] for i in status["instances"]] == [0]
    assert log_count(daemon, CONNECTION_TASK_FAILED) == 0
