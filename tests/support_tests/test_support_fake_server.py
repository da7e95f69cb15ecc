"""The test client driving the scripted fake server directly over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.fake_servers import fake_server_argv
from support.lspclient import (
    LspClient,
    LspConnectionClosed,
    LspResponseError,
    LspTimeout,
    path_uri,
)

pytestmark = pytest.mark.anyio


def span(start_line: int, start_char: int, end_line: int, end_char: int) -> dict[str, Any]:
    return {
        "start": {"line": start_line, "character": start_char},
        "end": {"line": end_line, "character": end_char},
    }


async def hover_text(client: LspClient, uri: str, line: int) -> str:
    result = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}},
    )
    value = result["contents"]["value"]
    assert isinstance(value, str)
    return value


async def ask(client: LspClient, method: str, params: Any = None) -> dict[str, Any]:
    answer = await client.request("fake/askClient", {"method": method, "params": params})
    assert isinstance(answer, dict)
    return answer


async def test_initialize_returns_the_fake_capabilities(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        result = await client.initialize(tmp_path)
        capabilities = result["capabilities"]
        assert capabilities["textDocumentSync"]["change"] == 2
        for provider in ("hover", "definition", "references", "documentSymbol", "callHierarchy"):
            assert capabilities[f"{provider}Provider"]
        assert capabilities["workspaceSymbolProvider"]
        log = await client.request("fake/log")
        assert log == [["initialized", {}]]
        assert await client.request("fake/requests") == [
            ["initialize", 1],
            ["fake/log", 2],
            ["fake/requests", 3],
        ]


async def test_server_sees_the_text_after_incremental_and_full_changes(tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_text("hello\nwörld\nbye\n", encoding="utf-8")
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        uri = await client.open(source, "plaintext")
        assert "version=1" in await hover_text(client, uri, 1)
        await client.change_incremental(uri, 2, span(1, 1, 1, 2), "o")
        await client.change_incremental(uri, 3, span(2, 0, 2, 3), "see you")
        hover = await hover_text(client, uri, 1)
        assert "version=3" in hover
        assert "\nworld\n" in hover
        documents = await client.request("fake/documentText")
        assert documents == {uri: {"text": "hello\nworld\nsee you\n", "version": 3}}
        await client.change_full(uri, "replaced\n", 4)
        assert "\nreplaced\n" in await hover_text(client, uri, 0)
        await client.close(uri)
        assert await client.request("fake/documentText") == {}
        methods = [method for method, _ in await client.request("fake/log")]
        assert methods.count("textDocument/didChange") == 3
        assert methods[-1] == "textDocument/didClose"


async def test_echo_round_trips_nested_non_ascii_params(tmp_path: Path) -> None:
    params = {"text": "ünïcödé ✓ 🐍", "nested": [1, {"deep": None}, True], "n": 2.5}
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        assert await client.request("fake/echo", params) == params
        assert await client.request("fake/echo") is None


async def test_default_answers_to_server_requests(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        configuration = await ask(client, "workspace/configuration", {"items": [{}, {}, {}]})
        assert configuration == {"result": [None, None, None]}
        edit = await ask(client, "workspace/applyEdit", {"edit": {"changes": {}}})
        assert edit == {"result": {"applied": True}}
        for method in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
            "window/showMessageRequest",
        ):
            assert await ask(client, method, {}) == {"result": None}, method
        folders = await ask(client, "workspace/workspaceFolders")
        assert folders == {"result": [{"uri": path_uri(tmp_path), "name": tmp_path.name}]}
        unknown = await ask(client, "editor/unknown", {})
        assert unknown["error"]["code"] == -32601


async def test_on_server_request_replaces_the_default(tmp_path: Path) -> None:
    async def configuration(params: Any) -> list[Any]:
        return [{"section": item.get("section")} for item in params["items"]]

    def refuse(params: Any) -> None:
        raise LspResponseError(-32000, "refused by test", {"why": "test"})

    async with LspClient.over_process(fake_server_argv()) as client:
        client.on_server_request("workspace/configuration", configuration)
        client.on_server_request("workspace/applyEdit", refuse)
        await client.initialize(tmp_path)
        answer = await ask(client, "workspace/configuration", {"items": [{"section": "py"}]})
        assert answer == {"result": [{"section": "py"}]}
        refused = await ask(client, "workspace/applyEdit", {"edit": {}})
        assert refused["error"] == {"code": -32000, "message": "refused by test", "data": {"why": "test"}}


async def test_crash_after_ends_the_connection_and_fails_the_request(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv("--crash-after", "2")) as client:
        await client.initialize(tmp_path)
        assert await client.request("fake/echo", [1]) == [1]
        with pytest.raises(LspConnectionClosed):
            await client.request("fake/echo", [2], timeout=30)
        assert client.closed.is_set()
        assert client.process is not None
        assert await client.process.wait() == 1
    assert any("crashing on request 2" in line for line in client.stderr_lines)


async def test_crash_on_initialize_fails_initialize(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv("--crash-on-initialize")) as client:
        with pytest.raises(LspConnectionClosed):
            await client.initialize(tmp_path, timeout=30)
    assert client.returncode == 1
    assert any("crashing on initialize" in line for line in client.stderr_lines)


async def test_flood_after_initialized_arrives_complete_and_in_order(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv("--flood", "2000")) as client:
        await client.initialize(tmp_path)
        await client.wait_notification("window/logMessage", lambda params: params["message"] == "flood 1999")
        messages = [p["message"] for p in client.notifications_of("window/logMessage")]
        assert messages == [f"flood {n}" for n in range(2000)]


async def test_notifications_sent_before_an_answer_are_logged_before_it(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        assert await client.request("fake/notifyMe", {"count": 50}) == {"sent": 50}
        messages = [p["message"] for p in client.notifications_of("window/logMessage")]
        assert messages == [f"notify {n}" for n in range(50)]


async def test_hang_on_leaves_one_method_unanswered_and_records_the_cancel(tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_text("x\n", encoding="utf-8")
    argv = fake_server_argv("--hang-on", "textDocument/hover")
    async with LspClient.over_process(argv) as client:
        await client.initialize(tmp_path)
        uri = await client.open(source, "plaintext")
        hover = await client.start_request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
        )
        assert await client.request("fake/echo", "still serving") == "still serving"
        await hover.cancel()
        log = await client.request("fake/log")
        assert ["$/cancelRequest", {"id": hover.id}] in log
        with pytest.raises(LspTimeout):
            await hover.result(timeout=0.5)
        assert not hover.done


async def test_slow_answer_still_arrives_after_a_wait_timed_out(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv("--slow", "800")) as client:
        await client.initialize(tmp_path)
        pending = await client.start_request("fake/echo", {"late": True})
        with pytest.raises(LspTimeout):
            await pending.result(timeout=0.1)
        assert await pending.result(timeout=30) == {"late": True}


async def test_garbage_after_is_reported_as_a_protocol_violation(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv("--garbage-after", "1")) as client:
        await client.initialize(tmp_path)
        assert await client.request("fake/echo", 1) == 1
        with pytest.raises(LspConnectionClosed, match="protocol violation"):
            await client.request("fake/echo", 2, timeout=30)
        assert client.protocol_errors


async def test_exit_on_didopen_closes_the_connection(tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_text("x\n", encoding="utf-8")
    async with LspClient.over_process(fake_server_argv("--exit-on-didopen")) as client:
        await client.initialize(tmp_path)
        await client.open(source, "plaintext")
        with anyio.fail_after(30):
            await client.closed.wait()
    assert client.returncode == 1


async def test_pid_file_and_count_file_record_each_start(tmp_path: Path) -> None:
    pid_file, count_file = tmp_path / "fake.pid", tmp_path / "starts"
    argv = fake_server_argv("--pid-file", str(pid_file), "--count-file", str(count_file))
    pids = []
    for _ in range(2):
        async with LspClient.over_process(argv) as client:
            await client.initialize(tmp_path)
            assert int(pid_file.read_text(encoding="utf-8")) == client.pid
            pids.append(client.pid)
    assert count_file.read_text(encoding="utf-8").split() == [str(pid) for pid in pids]


async def test_progress_reports_on_the_token_it_created(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        token = (await client.request("fake/progress", {"token": "t-1"}))["token"]
        assert token == "t-1"
        assert ("window/workDoneProgress/create", {"token": token}) in client.server_requests
        kinds = [p["value"]["kind"] for p in client.notifications_of("$/progress") if p["token"] == token]
        assert kinds == ["begin", "report", "end"]


async def test_register_capability_reaches_the_client(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        assert await client.request("fake/registerCapability") == {"result": None}
        method, params = client.server_requests[-1]
        assert method == "client/registerCapability"
        assert params["registrations"][0]["method"] == "workspace/didChangeWatchedFiles"


async def test_raw_bytes_reach_the_server_verbatim(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        await client.send_raw(b"Content-Length: 5\r\n\r\n{bad}")
        shown = await client.wait_notification("window/showMessage")
        assert shown["type"] == 1
        assert await client.request("fake/echo", "alive") == "alive"


async def test_shutdown_and_exit_ends_the_server_cleanly(tmp_path: Path) -> None:
    async with LspClient.over_process(fake_server_argv()) as client:
        await client.initialize(tmp_path)
        await client.shutdown_and_exit()
        with anyio.fail_after(30):
            await client.closed.wait()
    assert client.returncode == 0


async def test_process_gets_env_and_cwd_and_its_stderr_is_kept(tmp_path: Path) -> None:
    script = "import os, sys; sys.stderr.write(os.environ['SUPPORT_T'] + ' ' + os.getcwd())"
    argv = [sys.executable, "-c", script]
    async with LspClient.over_process(argv, env={"SUPPORT_T": "marker"}, cwd=tmp_path) as client:
        with anyio.fail_after(30):
            await client.closed.wait()
    assert client.stderr_lines == [f"marker {tmp_path}"]


async def test_a_process_ignoring_stdin_is_killed_on_exit() -> None:
    argv = [sys.executable, "-c", "import time; time.sleep(120)"]
    async with LspClient.over_process(argv, exit_grace=0.5) as client:
        pass
    assert client.returncode is not None
    assert client.returncode < 0
