"""Server requests reach the client that caused them; edits carry each client's versions.

The scripted fake server makes the edits (`fake.applyEdit`, rename) and names
its documents' versions, which are the daemon's numbering.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.fake_servers import FAKE_LSP_SERVER, fake_workspace
from support.lspclient import LspClient, path_uri

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def fake_daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    """A daemon whose `fake` server never answers hover (a request left in flight)."""
    args = json.dumps([str(FAKE_LSP_SERVER), "--hang-on", "textDocument/hover"])
    config = (
        f"[servers.fake]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
        'root_markers = [".git"]\n[servers.fake.languages]\nplaintext = [".txt"]\n'
        '[servers.fake.timeouts]\n"textDocument/hover" = 60\n"workspace/executeCommand" = 60\n'
    )
    with running_daemon(tmp_path / "d", config) as d:
        yield d


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with one text file."""
    return fake_workspace(tmp_path / "ws")


def _edit(uri: str, version: int | None) -> dict[str, Any]:
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}
    return {
        "documentChanges": [
            {"textDocument": {"uri": uri, "version": version}, "edits": [{"range": span, "newText": "ALPHA"}]}
        ]
    }


def _execute(spec: dict[str, Any]) -> dict[str, Any]:
    return {"command": "fake.applyEdit", "arguments": [spec]}


def _apply_edits(client: LspClient) -> list[Any]:
    return [p for m, p in client.server_requests if m == "workspace/applyEdit"]


async def test_apply_edit_goes_to_the_executing_client_not_the_newest(fake_daemon: DaemonProc, root: Path) -> None:
    argv = fake_daemon.client_argv("fake")
    async with LspClient.over_process(argv, name="a") as a, LspClient.over_process(argv, name="b") as b:
        await a.initialize(root)
        await b.initialize(root)
        uri = await b.open(root / "a.txt", "plaintext")
        # a's command waits until b's (never answered) hover is in flight: b's
        # is then the newest request at the server, a's the cause.
        command = await a.start_request(
            "workspace/executeCommand", _execute({"edit": {"changes": {}}, "waitFor": "textDocument/hover"})
        )
        await b.start_request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
        assert await command.result(timeout=30) == {"result": {"applied": True}}
        assert len(_apply_edits(a)) == 1
        assert _apply_edits(b) == []


async def test_stale_apply_edit_is_refused_and_current_one_is_renumbered(fake_daemon: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake_daemon.client_argv("fake"), name="a") as a:
        await a.initialize(root)
        uri = await a.open(root / "a.txt", "plaintext", version=7)
        current = await a.request("workspace/executeCommand", _execute({"edit": _edit(uri, 1)}))
        assert current == {"result": {"applied": True}}
        assert _apply_edits(a)[0]["edit"]["documentChanges"][0]["textDocument"]["version"] == 7
        await a.change_full(uri, "alpha 2\nbeta\n", 8)
        # The server computed this edit on version 1; the document is at 2 now.
        stale = await a.request("workspace/executeCommand", _execute({"edit": _edit(uri, 1)}))
        assert stale["result"]["applied"] is False
        assert "version" in stale["result"]["failureReason"]
        assert len(_apply_edits(a)) == 1


async def test_a_client_leaving_with_apply_edit_pending_is_answered_for(fake_daemon: DaemonProc, root: Path) -> None:
    argv = fake_daemon.client_argv("fake")
    async with LspClient.over_process(argv, name="observer") as observer:
        await observer.initialize(root)
        async with LspClient.over_process(argv, name="leaving") as leaving:
            await leaving.initialize(root)
            leaving.on_server_request("workspace/applyEdit", lambda params: anyio.sleep_forever())
            await leaving.start_request("workspace/executeCommand", _execute({"edit": {"changes": {}}}))
            with anyio.fail_after(30):
                while not _apply_edits(leaving):
                    await anyio.sleep(0.05)
        # The server hears an answer although the client never gave one.
        with anyio.fail_after(30):
            while not (answers := await observer.request("fake/answers")):
                await anyio.sleep(0.05)
        assert answers[0]["result"]["applied"] is False
        assert answers[0]["result"]["failureReason"]
        assert _apply_edits(observer) == []


async def test_rename_answer_carries_each_clients_own_version(fake_daemon: DaemonProc, root: Path) -> None:
    argv = fake_daemon.client_argv("fake")
    async with (
        LspClient.over_process(argv, name="a") as a,
        LspClient.over_process(argv, name="b") as b,
        LspClient.over_process(argv, name="c") as c,
    ):
        for client in (a, b, c):
            await client.initialize(root)
        uri = await a.open(root / "a.txt", "plaintext", version=10)
        await b.open(root / "a.txt", "plaintext", version=3)
        await a.change_full(uri, "gamma\nbeta\n", 11)
        await a.request("fake/echo", {})  # a's change is in before the renames
        params = {
            "textDocument": {"uri": path_uri(root / "a.txt")},
            "position": {"line": 0, "character": 0},
            "newName": "x",
        }
        versions = []
        for client in (a, b, c):
            result = await client.request("textDocument/rename", params)
            versions.append(result["documentChanges"][0]["textDocument"]["version"])
        # b has not edited since it opened at 3; c never opened the file.
        assert versions == [11, 3, None]
