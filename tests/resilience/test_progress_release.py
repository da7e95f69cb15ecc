"""Progress a client was shown never outlives the server that began it, nor a client's stay (issue 12, point 9)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.fake_servers import fake_server_config, fake_workspace
from support.lspclient import LspClient, LspResponseError

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with one text file."""
    return fake_workspace(tmp_path / "ws", {"a.txt": "alpha\n"})


@pytest.fixture
def crash(tmp_path: Path) -> Path:
    """While this file exists the fake server exits on any request."""
    return tmp_path / "crash-now"


@pytest.fixture
def daemon(tmp_path: Path, crash: Path) -> Iterator[DaemonProc]:
    """A daemon with the fake server, crashable on demand."""
    with running_daemon(tmp_path / "d", fake_server_config("--crash-while-exists", str(crash))) as proc:
        yield proc


def _progress(token: str, kind: str) -> Callable[[dict[str, object]], bool]:
    def match(params: dict[str, object]) -> bool:
        value = params["value"]
        return params["token"] == token and isinstance(value, dict) and value.get("kind") == kind

    return match


async def test_progress_left_open_by_a_crashed_server_is_ended(daemon: DaemonProc, root: Path, crash: Path) -> None:
    async with LspClient.over_process(daemon.client_argv("fake"), name="watcher") as watcher:
        await watcher.initialize(root)
        token = (await watcher.request("fake/progress", {"unfinished": True}))["token"]
        await watcher.wait_notification("$/progress", _progress(token, "begin"), timeout=30)
        crash.touch()
        with contextlib.suppress(LspResponseError):
            await watcher.request("fake/echo", {}, timeout=30)
        # The editor's progress indicator does not spin forever for a dead process.
        await watcher.wait_notification("$/progress", _progress(token, "end"), timeout=30)
        crash.unlink()
        wait_until(lambda: daemon.instances("fake")[0]["state"] == "running", what="restart")
        assert daemon.instances("fake")[0]["progress_tokens"] == 0


async def test_progress_routes_of_clients_that_left_are_released(daemon: DaemonProc, root: Path) -> None:
    argv = daemon.client_argv("fake")
    async with LspClient.over_process(argv, name="a") as a, LspClient.over_process(argv, name="b") as b:
        await a.initialize(root)
        await b.initialize(root)
        token = (await a.request("fake/progress", {"unfinished": True}))["token"]
        await a.wait_notification("$/progress", _progress(token, "begin"), timeout=30)
        assert daemon.instances("fake")[0]["progress_tokens"] == 1
    # Both clients left with the progress still open: nothing of theirs is kept.
    wait_until(lambda: daemon.instances("fake")[0]["progress_tokens"] == 0, what="tokens released")
