"""The raw echo server, over stdio and through a Unix socket."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream, SocketStream
from support.fake_servers import echo_server_argv
from support.lspclient import LspClient

pytestmark = pytest.mark.anyio


async def test_echo_server_answers_initialize_echoes_and_exits(tmp_path: Path) -> None:
    async with LspClient.over_process(echo_server_argv(), name="echo") as client:
        result = await client.initialize(tmp_path)
        assert result["serverInfo"] == {"name": "echo-lsp"}
        assert result["capabilities"]["textDocumentSync"] == 2
        await client.notify("textDocument/didOpen", {"ignored": True})
        params = {"position": {"line": 3, "character": 1}, "text": "ß✓"}
        assert await client.request("textDocument/hover", params) == params
        await client.shutdown_and_exit()
        with anyio.fail_after(30):
            await client.closed.wait()
    assert client.returncode == 0


async def pump(source: ByteReceiveStream, sink: ByteSendStream) -> None:
    """Copy bytes until the source ends, then close the sink."""
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the other side went away first; the bridge is ending anyway
    finally:
        await sink.aclose()


async def bridge_to_echo_server(connection: SocketStream) -> None:
    """Serve one socket connection with its own echo server process, like a tiny multiplexer."""
    async with connection, await anyio.open_process(echo_server_argv(), stderr=None) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(pump, connection, process.stdin)
            await pump(process.stdout, connection)


async def test_client_over_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "echo.sock"
    async with await anyio.create_unix_listener(path) as listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, bridge_to_echo_server)
        async with LspClient.over_unix(path, name="unix") as client:
            result = await client.initialize(tmp_path)
            assert result["serverInfo"] == {"name": "echo-lsp"}
            pendings = [await client.start_request("x/echo", {"n": n}) for n in range(100)]
            assert [await p.result(timeout=30) for p in pendings] == [{"n": n} for n in range(100)]
            await client.shutdown_and_exit()
            with anyio.fail_after(30):
                await client.closed.wait()
        tg.cancel_scope.cancel()
