"""A client misusing lifecycle messages never stops or shuts down the shared server.

`exit` sent as a request (with an id), `initialized` as a request, `shutdown` and `initialize`
as notifications: the server's lifecycle is the daemon's, so none of them reaches it. The fake
server (pygls, fault injection) exits on an `exit` whatever its id, as found by the fuzz test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.fake_servers import fake_server_config

from resilience.fake_daemon import fake_socket, log_count, make_workspace
from resilience.wire_client import WireClient

INVALID_REQUEST = -32600


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[tuple[DaemonProc, WireClient, WireClient]]:
    workspace = make_workspace(tmp_path / "ws")
    with (
        running_daemon(tmp_path / "d", fake_server_config()) as daemon,
        WireClient(fake_socket(daemon), name="steady") as steady,
        WireClient(fake_socket(daemon), name="misuser") as misuser,
    ):
        steady.initialize(workspace)
        misuser.initialize(workspace)
        yield daemon, steady, misuser


@pytest.mark.parametrize("method", ["exit", "initialized"])
def test_a_notification_sent_as_a_request_is_refused_and_the_server_keeps_running(
    shared: tuple[DaemonProc, WireClient, WireClient], method: str
) -> None:
    daemon, steady, misuser = shared
    answer = misuser.request(method, None)
    assert answer.get("error", {}).get("code") == INVALID_REQUEST, answer
    assert steady.result("fake/echo", {"still": "here"}) == {"still": "here"}
    assert [i["restarts"] for i in daemon.status()["instances"]] == [0]


@pytest.mark.parametrize("method", ["shutdown", "initialize"])
def test_a_request_sent_as_a_notification_is_logged_and_dropped(
    shared: tuple[DaemonProc, WireClient, WireClient], method: str
) -> None:
    daemon, steady, misuser = shared
    misuser.send({"jsonrpc": "2.0", "method": method, "params": None})
    assert misuser.result("fake/echo", {"after": method}) == {"after": method}
    # Messages of one client are handled in order: the echo's answer means the notification was.
    assert log_count(daemon, f"sent {method} as a notification; ignored") == 1
    assert steady.result("fake/echo", {"still": "here"}) == {"still": "here"}
    assert [i["restarts"] for i in daemon.status()["instances"]] == [0]
