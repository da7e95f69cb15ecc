"""Routing details checked against the scripted fake server (it reports what it saw)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.fake_servers import FAKE_LSP_SERVER, fake_workspace
from support.lspclient import LspClient, LspResponseError, concurrent_echoes, initialized_clients

pytestmark = [pytest.mark.anyio]


def fake_config(*flags: str, settings: str = "") -> str:
    """A config adding the fake server as `fake`."""
    args = json.dumps([str(FAKE_LSP_SERVER), *flags])
    return (
        f"[servers.fake]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
        'root_markers = [".git"]\n[servers.fake.languages]\nplaintext = [".txt"]\n' + settings
    )


@pytest.fixture
def fake_daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    """A daemon whose `fake` server is the scripted fake."""
    settings = '[servers.fake.settings.fakeSection]\nanswer = 42\n[servers.fake.timeouts]\n"textDocument/hover" = 30\n'
    with running_daemon(tmp_path / "d", fake_config("--hang-on", "textDocument/hover", settings=settings)) as d:
        yield d


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace with a text file."""
    return fake_workspace(tmp_path / "ws")


async def test_workspace_configuration_is_answered_by_the_daemon(fake_daemon: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake_daemon.client_argv("fake")) as client:
        await client.initialize(root)
        items = [{"section": "fakeSection"}, {"section": "fakeSection.answer"}, {"section": "missing"}]
        reply = await client.request(
            "fake/askClient", {"method": "workspace/configuration", "params": {"items": items}}
        )
        assert reply["result"] == [{"answer": 42}, 42, None]
        assert not any(m == "workspace/configuration" for m, _ in client.server_requests)


async def test_same_request_ids_from_two_clients_reach_the_right_client(fake_daemon: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake_daemon.client_argv("fake"), root, "a", "b")
    async with clients as (a, b):
        results = await concurrent_echoes({"a": a, "b": b}, 20)
        assert all(results[f"{t}{i}"] == {"tag": t, "i": i} for t in "ab" for i in range(20))


async def test_registrations_are_replayed_to_a_client_that_joins_later(fake_daemon: DaemonProc, root: Path) -> None:
    argv = fake_daemon.client_argv("fake")
    reg = {
        "id": "watch-1",
        "method": "workspace/didChangeWatchedFiles",
        "registerOptions": {"watchers": [{"globPattern": "**/*.txt"}]},
    }
    async with LspClient.over_process(argv, name="first") as first:
        await first.initialize(root)
        await first.request("fake/registerCapability", {"registrations": [reg]})
        wait_until(lambda: any(m == "client/registerCapability" for m, _ in first.server_requests), what="registration")
        async with LspClient.over_process(argv, name="late") as late:
            await late.initialize(root)
            await late.request("fake/echo", {})
            with anyio.fail_after(10):
                while not any(m == "client/registerCapability" for m, _ in late.server_requests):
                    await anyio.sleep(0.05)
            replayed = [p for m, p in late.server_requests if m == "client/registerCapability"]
            assert replayed[0]["registrations"][0]["id"] == "watch-1"


async def test_server_progress_reaches_the_client_whose_request_it_reports(fake_daemon: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake_daemon.client_argv("fake"), root, "a", "b")
    async with clients as (a, b):
        token = (await a.request("fake/progress", {"token": "work-1"}))["token"]
        end = await a.wait_notification("$/progress", lambda p: p["value"]["kind"] == "end", timeout=10)
        assert end["token"] == token
        created = [p["token"] for m, p in a.server_requests if m == "window/workDoneProgress/create"]
        assert created == [token]
        assert [p["value"]["kind"] for p in a.notifications_of("$/progress")] == ["begin", "report", "end"]
        # b had nothing in flight: alone with the server it would never have heard of a's work.
        await b.request("fake/echo", {"sync": 1})
        assert [m for m, _ in b.server_requests if m == "window/workDoneProgress/create"] == []
        assert b.notifications_of("$/progress") == []


async def test_apply_edit_goes_to_the_client_whose_request_caused_it(fake_daemon: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake_daemon.client_argv("fake"), root, "a", "b")
    async with clients as (a, b):
        edit = {"edit": {"changes": {}}, "label": "fix"}
        reply = await b.request("fake/askClient", {"method": "workspace/applyEdit", "params": edit})
        assert reply["result"] == {"applied": True}
        assert [m for m, _ in b.server_requests if m == "workspace/applyEdit"]
        assert not [m for m, _ in a.server_requests if m == "workspace/applyEdit"]


async def test_cancel_is_forwarded_with_the_rewritten_id(fake_daemon: DaemonProc, root: Path) -> None:
    async with LspClient.over_process(fake_daemon.client_argv("fake")) as client:
        await client.initialize(root)
        uri = await client.open(root / "a.txt", "plaintext")
        hover = await client.start_request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
        await hover.cancel()
        with pytest.raises(LspResponseError) as err:
            await hover.result(timeout=10)
        assert err.value.code == -32800

        async def server_saw_cancel() -> tuple[Any, list[Any]]:
            requests = await client.request("fake/requests")
            log = await client.request("fake/log")
            hover_ids = [rid for m, rid in requests if m == "textDocument/hover"]
            cancels = [p["id"] for m, p in log if m == "$/cancelRequest"]
            return hover_ids, cancels

        with anyio.fail_after(10):
            while True:
                hover_ids, cancels = await server_saw_cancel()
                if cancels:
                    break
                await anyio.sleep(0.05)
        assert cancels == hover_ids
        # The client's next request is unaffected.
        assert await client.request("fake/echo", {"x": 1}) == {"x": 1}


async def test_server_sees_one_document_with_increasing_versions(fake_daemon: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake_daemon.client_argv("fake"), root, "a", "b")
    async with clients as (a, b):
        uri = await a.open(root / "a.txt", "plaintext")
        await b.open(root / "a.txt", "plaintext")
        edit = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}
        await a.change_incremental(uri, 2, edit, "ALPHA")
        await b.change_incremental(
            uri, 2, {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}}, "BETA"
        )
        await b.request("fake/echo", {})  # b's edit is in before a's next one
        await a.change_incremental(
            uri, 3, {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}, "gamma"
        )
        # Asked on a's connection, so it is ordered after a's last change.
        texts = await a.request("fake/documentText")
        assert texts[uri]["text"] == "ALPHA\nBETA\ngamma"
        log = await a.request("fake/log")
        versions = [
            p["textDocument"]["version"] for m, p in log if m in ("textDocument/didOpen", "textDocument/didChange")
        ]
        assert versions == sorted(versions) and len(set(versions)) == len(versions) == 4
        opens = [m for m, _ in log if m == "textDocument/didOpen"]
        assert len(opens) == 1


async def test_a_second_editor_opening_the_disk_text_keeps_unsaved_edits(fake_daemon: DaemonProc, root: Path) -> None:
    clients = initialized_clients(fake_daemon.client_argv("fake"), root, "editing", "browsing")
    async with clients as (a, b):
        uri = await a.open(root / "a.txt", "plaintext")
        await a.change_full(uri, "unsaved work\n", 2)
        await a.request("fake/echo", {})  # a's edit is in before b opens
        await b.open(root / "a.txt", "plaintext")  # the disk text
        assert (await b.request("fake/documentText"))[uri]["text"] == "unsaved work\n"
        # A newcomer with edits of its own does win.
        async with LspClient.over_process(fake_daemon.client_argv("fake"), name="reloading") as c:
            await c.initialize(root)
            await c.open(root / "a.txt", "plaintext", text="third view\n")
            assert (await c.request("fake/documentText"))[uri]["text"] == "third view\n"


async def test_a_request_whose_cancel_is_withheld_is_joined_not_run_again(tmp_path: Path, root: Path) -> None:
    """An identical request joins one the server must finish anyway, rather than queueing the same work twice."""
    # The fake speaks through pyright's adapter, whose references are never cancelled at the server.
    config = fake_config("--slow", "300").replace("args = ", 'adapter = "pyright"\nargs = ', 1)
    with running_daemon(tmp_path / "d", config) as daemon:
        async with initialized_clients(daemon.client_argv("fake"), root, "mover", "asker") as (mover, asker):
            uri = await mover.open(root / "a.txt", "plaintext")
            await asker.open(root / "a.txt", "plaintext")
            params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
            params["context"] = {"includeDeclaration": True}
            moved_on = await mover.start_request("textDocument/references", params)
            await moved_on.cancel()
            with pytest.raises(LspResponseError) as cancelled:
                await moved_on.result(timeout=30)
            assert cancelled.value.code == -32800
            # Its own progress token, as editors send them: the same question all the same.
            answer = await asker.request("textDocument/references", {**params, "workDoneToken": "t1"}, timeout=30)
            assert isinstance(answer, list)
            seen = await asker.request("fake/requests", {})
            assert [m for m, _ in seen if m == "textDocument/references"] == ["textDocument/references"]


def _framed(*messages: dict[str, Any]) -> bytes:
    bodies = [json.dumps(m).encode() for m in messages]
    return b"".join(b"Content-Length: %d\r\n\r\n%b" % (len(body), body) for body in bodies)


def test_client_bridge_answers_into_a_file(fake_daemon: DaemonProc, root: Path, tmp_path: Path) -> None:
    """With stdout redirected to a file (nothing an event loop can watch), the bridge still carries the session."""
    answers = tmp_path / "out.lsp"
    with answers.open("wb") as stdout:
        bridge = subprocess.Popen(fake_daemon.client_argv("fake"), stdin=subprocess.PIPE, stdout=stdout)
        assert bridge.stdin is not None
        bridge.stdin.write(
            _framed(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
            )
        )  # fmt: skip
        bridge.stdin.flush()
        wait_until(lambda: b'"id":2' in answers.read_bytes().replace(b" ", b""), timeout=30, what="shutdown answer")
        bridge.stdin.write(_framed({"jsonrpc": "2.0", "method": "exit"}))
        bridge.stdin.close()
        assert bridge.wait(30) == 0
    assert b'"capabilities"' in answers.read_bytes()
