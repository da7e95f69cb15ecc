"""Crashes, crash loops and hangs of a server, seen by its clients (fake server: fault injection)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, process_alive, running_daemon, wait_until
from support.fake_servers import fake_server_config, fake_workspace
from support.lspclient import LspClient, LspResponseError

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with one text file."""
    return fake_workspace(tmp_path / "ws")


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """While this file exists, the fake server crashes on every request."""
    return tmp_path / "crash-now"


@pytest.fixture
def crashy(tmp_path: Path, marker: Path) -> Iterator[DaemonProc]:
    """A daemon whose fake server crashes on demand."""
    config = fake_server_config("--crash-while-exists", str(marker), "--count-file", str(tmp_path / "starts"))
    with running_daemon(tmp_path / "d", config) as daemon:
        yield daemon


def _fake(daemon: DaemonProc) -> dict[str, Any]:
    return daemon.instances("fake")[0]


async def test_crash_mid_request_fails_it_then_the_next_request_succeeds(
    crashy: DaemonProc, root: Path, marker: Path, tmp_path: Path
) -> None:
    async with LspClient.over_process(crashy.client_argv("fake")) as client:
        await client.initialize(root)
        uri = await client.open(root / "a.txt", "plaintext")
        await client.change_full(uri, "edited before the crash\n", 2)
        marker.touch()
        with pytest.raises(LspResponseError) as err:
            await client.request("fake/echo", {"n": 1})
        assert "fake" in err.value.message and "exit" in err.value.message
        marker.unlink()
        wait_until(lambda: _fake(crashy)["state"] == "running", what="restart")
        assert await client.request("fake/echo", {"n": 2}) == {"n": 2}
        # The restarted server got the open document with its current text.
        texts = await client.request("fake/documentText")
        assert texts[uri]["text"] == "edited before the crash\n"
        status = _fake(crashy)
        assert status["restarts"] == 1 and "exit code 1" in status["last_exit"]
        assert (tmp_path / "starts").read_text().count("\n") == 2


async def test_crash_loop_opens_the_breaker_and_a_probe_closes_it(crashy: DaemonProc, root: Path, marker: Path) -> None:
    async with LspClient.over_process(crashy.client_argv("fake")) as client:
        await client.initialize(root)
        marker.touch()
        messages = []
        for i in range(12):
            try:
                await client.request("fake/echo", {"i": i})
            except LspResponseError as exc:
                messages.append(exc.message)
            if "circuit open" in messages[-1]:
                break
            await anyio.sleep(0.1)
        assert "circuit open" in messages[-1], messages
        assert "fake@" in messages[-1] and "retry after" in messages[-1]
        breaker = _fake(crashy)["breaker"]
        assert breaker["state"] == "open"
        # While open, requests fail at once without reaching a server.
        with pytest.raises(LspResponseError, match="circuit open"):
            await client.request("fake/echo", {})
        marker.unlink()

        async def recovered() -> bool:
            try:
                answer = await client.request("fake/echo", {"ok": True})
            except LspResponseError:
                return False
            return bool(answer == {"ok": True})

        with anyio.fail_after(30):
            while not await recovered():
                await anyio.sleep(0.2)
        states = [t["state"] for t in _fake(crashy)["breaker"]["transitions"]]
        assert states[-3:] == ["open", "half-open", "closed"], states


async def test_hung_request_times_out_is_cancelled_and_others_still_answer(tmp_path: Path, root: Path) -> None:
    config = fake_server_config(
        "--hang-on", "textDocument/hover", extra='[servers.fake.timeouts]\n"textDocument/hover" = 0.5\n'
    )
    with running_daemon(tmp_path / "d", config) as daemon:
        async with LspClient.over_process(daemon.client_argv("fake")) as client:
            await client.initialize(root)
            uri = await client.open(root / "a.txt", "plaintext")
            hover = await client.start_request(
                "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
            )
            assert await client.request("fake/echo", {"during": True}) == {"during": True}
            with pytest.raises(LspResponseError, match="timed out"):
                await hover.result(timeout=30)
            with anyio.fail_after(10):
                while True:
                    log = await client.request("fake/log")
                    cancels = [p for m, p in log if m == "$/cancelRequest"]
                    if cancels:
                        break
                    await anyio.sleep(0.05)
            hover_ids = [rid for m, rid in await client.request("fake/requests") if m == "textDocument/hover"]
            assert [c["id"] for c in cancels] == hover_ids


@pytest.mark.slow
@pytest.mark.parametrize("server", ["clangd", "pyright"])
async def test_kill_9_of_a_real_server_under_a_live_client(
    server: str, daemon: DaemonProc, c_project: Path, py_project: Path
) -> None:
    root, rel, lang = (c_project, "src/util.c", "c") if server == "clangd" else (py_project, "demo/util.py", "python")
    async with LspClient.over_process(daemon.client_argv(server)) as client:
        await client.initialize(root)
        uri = await client.open(root / rel, lang)
        assert await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        pid = daemon.instances(server)[0]["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not process_alive(pid), what="server to die")
        wait_until(
            lambda: (
                daemon.instances(server)[0]["pid"] not in (None, pid)
                and daemon.instances(server)[0]["state"] == "running"
            ),
            timeout=60,
            what="restart",
        )
        # The restarted server answers for the same open document, which it got replayed.
        hover: Any = None
        with anyio.fail_after(60):
            while not hover:
                try:
                    hover = await client.request(
                        "textDocument/hover",
                        {
                            "textDocument": {"uri": uri},
                            "position": {"line": 2 if server == "clangd" else 0, "character": 4},
                        },
                    )
                except LspResponseError:
                    await anyio.sleep(0.2)
        assert "add" in json.dumps(hover)
        assert daemon.instances(server)[0]["restarts"] == 1


async def test_sigterm_sends_shutdown_and_exit_to_servers_and_exits_zero(tmp_path: Path, root: Path) -> None:
    pid_file = tmp_path / "fake.pid"
    with running_daemon(tmp_path / "d", fake_server_config("--pid-file", str(pid_file))) as daemon:
        async with LspClient.over_process(daemon.client_argv("fake")) as client:
            await client.initialize(root)
            server_pid = int(pid_file.read_text())
            assert daemon.stop() == 0
        assert not process_alive(server_pid)
        log = daemon.log_text()
        assert "shutting down" in log and "stopped" in log
