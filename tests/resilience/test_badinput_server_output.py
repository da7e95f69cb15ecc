"""A server that writes garbage is treated as crashed: its requests fail, it is restarted."""

from __future__ import annotations

import re

import pytest
from support.daemon_proc import running_daemon
from support.fake_servers import fake_server_config

from resilience.fake_daemon import CONNECTION_TASK_FAILED, fake_socket, log_count, make_workspace
from resilience.wire_client import WireClient

REQUEST_FAILED = -32803


def test_garbage_from_the_server_fails_the_pending_request_and_the_server_is_restarted(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A short directory name: socket paths must stay within AF_UNIX's 108 bytes.
    base = tmp_path_factory.mktemp("garbage")
    workspace = make_workspace(base / "ws")
    with (
        running_daemon(base / "d", fake_server_config("--garbage-after", "1")) as daemon,
        WireClient(fake_socket(daemon), name="asker") as asker,
        WireClient(fake_socket(daemon), name="other") as other,
    ):
        asker.initialize(workspace)
        other.initialize(workspace)
        first_pid = daemon.instances("fake")[0]["pid"]
        assert asker.result("fake/echo", {"n": 1}) == {"n": 1}

        reply = asker.request("fake/echo", {"n": 2})
        assert reply["error"]["code"] == REQUEST_FAILED
        assert re.search(r"\bfake\b(?!/)", reply["error"]["message"]), "the error does not name the server"

        # The next request waits for the restarted server and is answered by it.
        assert asker.result("fake/echo", {"n": 3}) == {"n": 3}
        (instance,) = daemon.instances("fake")
        assert instance["restarts"] == 1
        assert instance["pid"] != first_pid
        assert "bad output" in instance["last_exit"]
        # Both clients are still connected to the restarted server.
        assert len(daemon.status()["clients"]) == 2
        assert len(instance["clients"]) == 2
        assert log_count(daemon, "bad output from server") == 1
        assert log_count(daemon, CONNECTION_TASK_FAILED) == 0
