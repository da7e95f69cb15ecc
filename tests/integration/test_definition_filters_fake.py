"""A definition asked of the server as two requests (a client without `textDocument.declaration`): faults injected.

The scripted fake server speaks through pyright's adapter, so such a client's definition is
asked as pyright's declaration and definition (test_definition_filters.py has the answers of
real pyright). Here the fake leaves both unanswered to show that the client's cancel reaches
the server for each, and answers declaration with an error (it has no such method) to show
that the client gets that error as the server sent it, and that definition, then left
unanswered, is cancelled at the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import running_daemon
from support.fake_servers import FAKE_LSP_SERVER, fake_workspace
from support.lspclient import LspClient, LspResponseError, default_client_capabilities

pytestmark = [pytest.mark.anyio]

SPLIT = ("textDocument/declaration", "textDocument/definition")


def _pyright_fake_config(*flags: str, extra: str = "") -> str:
    """The fake server as `fake`, with pyright's adapter."""
    args = json.dumps([str(FAKE_LSP_SERVER), *flags])
    return (
        f'[servers.fake]\nadapter = "pyright"\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n'
        'root_markers = [".git"]\n[servers.fake.languages]\nplaintext = [".txt"]\n' + extra
    )


def _without_declaration() -> dict[str, Any]:
    caps = default_client_capabilities()
    del caps["textDocument"]["declaration"]
    return caps


def _at_start(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}


async def test_cancelling_the_definition_cancels_both_requests_at_the_server(tmp_path: Path) -> None:
    root = fake_workspace(tmp_path / "ws")
    config = _pyright_fake_config("--hang-on", SPLIT[0], "--hang-on", SPLIT[1])
    with running_daemon(tmp_path / "d", config) as daemon:
        async with LspClient.over_process(daemon.client_argv("fake")) as client:
            await client.initialize(root, capabilities=_without_declaration())
            uri = await client.open(root / "a.txt", "plaintext")
            definition = await client.start_request("textDocument/definition", _at_start(uri))
            with anyio.fail_after(30):
                while len(asked := [rid for m, rid in await client.request("fake/requests") if m in SPLIT]) < 2:
                    await anyio.sleep(0.05)
            await definition.cancel()
            with pytest.raises(LspResponseError) as cancelled:
                await definition.result(timeout=30)
            assert cancelled.value.code == -32800
            with anyio.fail_after(30):
                while (
                    len(cancels := [p["id"] for m, p in await client.request("fake/log") if m == "$/cancelRequest"]) < 2
                ):
                    await anyio.sleep(0.05)
            assert sorted(cancels) == sorted(asked)
            # The client's next request is unaffected.
            assert await client.request("fake/echo", {"x": 1}) == {"x": 1}


async def test_an_error_of_either_request_reaches_the_client_as_the_server_sent_it(tmp_path: Path) -> None:
    root = fake_workspace(tmp_path / "ws")
    with running_daemon(tmp_path / "d", _pyright_fake_config()) as daemon:
        argv = daemon.client_argv("fake")
        async with LspClient.over_process(argv, name="with") as with_decl:
            await with_decl.initialize(root)
            uri = await with_decl.open(root / "a.txt", "plaintext")
            # A client that declared declaration has its request forwarded: the server's own error.
            with pytest.raises(LspResponseError) as direct:
                await with_decl.request("textDocument/declaration", _at_start(uri), timeout=30)
            async with LspClient.over_process(argv, name="without") as without_decl:
                await without_decl.initialize(root, capabilities=_without_declaration())
                await without_decl.open(root / "a.txt", "plaintext")
                for method in SPLIT:
                    with pytest.raises(LspResponseError) as split:
                        await without_decl.request(method, _at_start(uri), timeout=30)
                    assert (split.value.code, split.value.message, split.value.data) == (
                        direct.value.code,
                        direct.value.message,
                        direct.value.data,
                    )


async def test_an_error_of_one_request_cancels_the_other_at_the_server(tmp_path: Path) -> None:
    root = fake_workspace(tmp_path / "ws")
    # Definition never answered and never timed out while the test runs: only the error can
    # lead to its cancel.
    config = _pyright_fake_config(
        "--hang-on", SPLIT[1], extra=f'[servers.fake.timeouts]\n"{SPLIT[1]}" = 3600\n"{SPLIT[0]}" = 3600\n'
    )
    with running_daemon(tmp_path / "d", config) as daemon:
        async with LspClient.over_process(daemon.client_argv("fake")) as client:
            await client.initialize(root, capabilities=_without_declaration())
            uri = await client.open(root / "a.txt", "plaintext")
            with pytest.raises(LspResponseError) as failed:
                await client.request("textDocument/definition", _at_start(uri), timeout=30)
            assert failed.value.code == -32601  # the fake's answer to declaration, as it sent it
            asked = [rid for m, rid in await client.request("fake/requests") if m == SPLIT[1]]
            with anyio.fail_after(30):
                while not (cancels := [p["id"] for m, p in await client.request("fake/log") if m == "$/cancelRequest"]):
                    await anyio.sleep(0.05)
            assert cancels == asked
