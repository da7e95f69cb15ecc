"""Registrations reach only the clients that declared dynamic registration (real pyright and clangd).

A client without it is sent none and still gets what they would have given it (file events
reach the server from the daemon); a lone client keeps its file watching when the server
registers it again; completions carry snippets only for clients that declared them; and the
registrations are rebuilt when the server restarts.
"""

from __future__ import annotations

import copy
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from support.client_caps import (
    PUSH_ONLY_CAPS,
    PYRIGHT,
    bad_file,
    completion_texts,
    is_for,
    live_registrations,
    round_trip,
    withdrawn,
)
from support.daemon_proc import DaemonProc, process_alive, wait_until
from support.lspclient import LspClient, default_client_capabilities

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_client_without_dynamic_registration_is_sent_no_registrations(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root, path = bad_file(PYRIGHT, request)
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="witness") as witness,
        LspClient.over_process(argv, name="eglot") as plain,
    ):
        await witness.initialize(root)
        await plain.initialize(root, capabilities=copy.deepcopy(PUSH_ONLY_CAPS))
        uri = await plain.open(path, "python")
        with anyio.fail_after(60):
            while not any(m == "client/registerCapability" for m, _ in witness.server_requests):
                await anyio.sleep(0.05)
        await round_trip(plain, uri)
        assert [m for m, _ in plain.server_requests if m.startswith("client/")] == []
        watched = [r for r in live_registrations(witness).values() if r["method"] == "workspace/didChangeWatchedFiles"]
        assert watched, live_registrations(witness)


def _watched_ids(client: LspClient) -> set[str]:
    """Ids of the file-watching registrations `client` holds now."""
    live = live_registrations(client).values()
    return {r["id"] for r in live if r["method"] == "workspace/didChangeWatchedFiles"}


@asynccontextmanager
async def _lone_watching_client(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[LspClient, str]]:
    """The only client of a pyright, with a file open, once pyright has registered its file watchers."""
    root, path = bad_file(PYRIGHT, request)
    async with LspClient.over_process(daemon.client_argv("pyright"), name="lone") as lone:
        await lone.initialize(root)
        uri = await lone.open(path, "python")
        with anyio.fail_after(60):
            while not _watched_ids(lone):
                await anyio.sleep(0.05)
        yield lone, uri


async def test_lone_client_keeps_file_watching_when_the_server_reregisters(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    async with _lone_watching_client(daemon, request) as (lone, uri):
        # pyright registers its file watchers again under new ids when settings
        # change, then unregisters the old ones: twice, so that whatever it did
        # while starting up is over by the second time.
        for _ in range(2):
            await round_trip(lone, uri)
            before = _watched_ids(lone)
            assert before, lone.server_requests
            mark = len(lone.server_requests)
            await lone.notify("workspace/didChangeConfiguration", {"settings": {}})

            with anyio.fail_after(60):
                while not withdrawn(lone, before, since=mark):
                    await anyio.sleep(0.05)
            await round_trip(lone, uri)
            assert _watched_ids(lone), lone.server_requests
            assert _watched_ids(lone) != before


async def test_server_gets_file_events_from_the_daemon_when_no_client_watches(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue("py_project")
    user = root / "demo" / "user.py"
    user.write_text("from demo.extra import helper\n\nhelper()\n")
    async with LspClient.over_process(daemon.client_argv("pyright"), name="eglot") as plain:
        await plain.initialize(root, capabilities=copy.deepcopy(PUSH_ONLY_CAPS))
        uri = await plain.open(user, "python")
        unresolved = await plain.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60
        )
        assert any("extra" in d["message"] for d in unresolved["diagnostics"]), unresolved
        mark = len(plain.notifications)
        # The module appears on disk (a checkout, a generator): pyright hears of it only as a file event.
        (root / "demo" / "extra.py").write_text("def helper() -> int:\n    return 1\n")
        await plain.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=True), since=mark, timeout=60
        )


async def test_completions_have_snippets_only_for_clients_that_declared_them(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue("c_project")
    path = root / "src" / "use.c"
    path.write_text('#include "util.h"\nint use(void) { return ad; }\n')
    snippet_caps = default_client_capabilities()
    snippet_caps["textDocument"]["completion"] = {"completionItem": {"snippetSupport": True}}
    argv = daemon.client_argv("clangd")
    async with (
        LspClient.over_process(argv, name="snippets") as fancy,
        LspClient.over_process(argv, name="plain") as plain,
    ):
        await fancy.initialize(root, capabilities=snippet_caps)
        await plain.initialize(root, capabilities=copy.deepcopy(PUSH_ONLY_CAPS))
        uri = await fancy.open(path, "c")
        await plain.open(path, "c")
        position = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 25}}
        # clangd completes from its preamble, built once after the open.
        with anyio.fail_after(60):
            while not (fancy_items := completion_texts(await fancy.request("textDocument/completion", position))):
                await anyio.sleep(0.1)
        plain_items = completion_texts(await plain.request("textDocument/completion", position))
        assert any(fmt == 2 and "${" in text for fmt, text in fancy_items), fancy_items
        assert "add" in [text for _, text in plain_items], plain_items
        assert all(fmt != 2 and "${" not in text and "$0" not in text for fmt, text in plain_items), plain_items


async def test_registrations_are_rebuilt_when_the_server_restarts(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    async with _lone_watching_client(daemon, request) as (lone, uri):
        await round_trip(lone, uri)
        old = _watched_ids(lone)
        pid = daemon.instances("pyright")[0]["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not process_alive(pid), what="server to die")
        # The old process's registrations are withdrawn; the new one's are the client's.
        with anyio.fail_after(60):
            while not (_watched_ids(lone) and not _watched_ids(lone) & old):
                await anyio.sleep(0.05)
