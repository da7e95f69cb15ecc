"""Progress a client was shown never outlives the server that began it, nor a client's stay (issue 12, point 9)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from support.daemon_proc import running_daemon, wait_until
from support.fake_servers import fake_server_config
from support.lspclient import LspClient, LspResponseError

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with one text file."""
    path = tmp_path / "ws"
    (path / ".git").mkdir(parents=True)
    (path / "a.txt").write_text("alpha\n")
    return path


async def test_progress_left_open_by_a_crashed_server_is_ended_and_released(tmp_path: Path, root: Path) -> None:
    crash = tmp_path / "crash-now"
    with running_daemon(tmp_path / "d", fake_server_config("--crash-while-exists", str(crash))) as daemon:
        argv = daemon.client_argv("fake")
        async with LspClient.over_process(argv, name="watcher") as watcher, LspClient.over_process(argv) as leaver:
            await watcher.initialize(root)
            await leaver.initialize(root)
            token = (await watcher.request("fake/progress", {"unfinished": True}))["token"]

            def began(params: dict[str, object]) -> bool:
                value = params["value"]
                return params["token"] == token and isinstance(value, dict) and value.get("kind") == "begin"

            await watcher.wait_notification("$/progress", began, timeout=30)
            await leaver.wait_notification("$/progress", began, timeout=30)
        # Both clients left with the progress still open: nothing of theirs is kept.
        wait_until(lambda: daemon.instances("fake")[0]["progress_tokens"] == 0, what="tokens released")
        async with LspClient.over_process(argv, name="watcher") as watcher:
            await watcher.initialize(root)
            token = (await watcher.request("fake/progress", {"unfinished": True}))["token"]
            await watcher.wait_notification("$/progress", began, timeout=30)
            crash.touch()
            with contextlib.suppress(LspResponseError):
                await watcher.request("fake/echo", {}, timeout=30)

            def ended(params: dict[str, object]) -> bool:
                value = params["value"]
                return params["token"] == token and isinstance(value, dict) and value.get("kind") == "end"

            # The editor's progress indicator does not spin forever for a dead process.
            await watcher.wait_notification("$/progress", ended, timeout=30)
            crash.unlink()
            wait_until(lambda: daemon.instances("fake")[0]["state"] == "running", what="restart")
            assert daemon.instances("fake")[0]["progress_tokens"] == 0
