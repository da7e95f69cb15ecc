"""Each client is served in the mode it declared, whoever came first (real pyright and clangd).

Diagnostics reach push clients as publishDiagnostics and pull clients through
textDocument/diagnostic; a client that opens a document someone else holds sees
its diagnostics at once, and a client that closes one sees them cleared. Registrations:
test_caps_registrations.py.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import anyio
import pytest
from support.client_caps import (
    CLANGD,
    PUSH_ONLY_CAPS,
    PYRIGHT,
    Case,
    bad_file,
    completion_texts,
    is_for,
    pull_caps,
    round_trip,
)
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon
from support.lspclient import LspClient, default_client_capabilities, initialized_clients

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(params=[CLANGD, PYRIGHT], ids=lambda c: c.server)
def case(request: pytest.FixtureRequest) -> Case:
    """Run against clangd and against pyright."""
    param: Case = request.param
    return param


async def test_a_vscode_like_client_pulls_through_pyrights_own_registration(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    # pyright alone registers textDocument/diagnostic for a client that declared its dynamic
    # registration (VS Code), answers its pulls, and pushes it nothing but the empty set on close.
    root, path = bad_file(PYRIGHT, request)
    async with LspClient.over_process(daemon.client_argv("pyright"), name="vscode") as puller:
        result = await puller.initialize(root, capabilities=pull_caps())
        assert "diagnosticProvider" not in result["capabilities"]
        with anyio.fail_after(30):
            while not _registered(puller, "textDocument/diagnostic"):
                await anyio.sleep(0.05)
        uri = await puller.open(path, "python")
        report = await puller.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout=60)
        assert report["kind"] == "full"
        assert any("not a number" in d["message"] or "int" in d["message"] for d in report["items"])
        again = {"textDocument": {"uri": uri}, "previousResultId": report["resultId"]}
        assert (await puller.request("textDocument/diagnostic", again, timeout=60))["kind"] == "unchanged"
        since = len(puller.notifications)
        await puller.close(uri)
        await puller.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=True), since=since)
        pushed = [p for m, p in puller.notifications if m == "textDocument/publishDiagnostics" and p["diagnostics"]]
        assert pushed == []


async def test_a_client_that_pulls_without_dynamic_registration_is_pushed_to_like_pyright_alone_would(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    # Neovim 0.10 declares pull diagnostics without dynamic registration: pyright alone pushes to it.
    root, path = bad_file(PYRIGHT, request)
    caps = pull_caps()
    caps["textDocument"]["diagnostic"]["dynamicRegistration"] = False
    async with LspClient.over_process(daemon.client_argv("pyright"), name="neovim") as client:
        result = await client.initialize(root, capabilities=caps)
        assert "diagnosticProvider" not in result["capabilities"]
        uri = await client.open(path, "python")
        published = await client.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60
        )
        assert any("not a number" in d["message"] or "int" in d["message"] for d in published["diagnostics"])
        assert not _registered(client, "textDocument/diagnostic")


def _registered(client: LspClient, method: str) -> bool:
    return any(
        reg.get("method") == method
        for m, params in client.server_requests
        if m == "client/registerCapability"
        for reg in params.get("registrations", [])
    )


async def test_push_client_gets_diagnostics_although_a_pull_client_came_first(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with running_daemon(tmp_path / "pull", "[servers.pyright]\npull_diagnostics = true\n") as daemon:
        await _pull_then_push(daemon, request)


async def _pull_then_push(daemon: DaemonProc, request: pytest.FixtureRequest) -> None:
    root, path = bad_file(PYRIGHT, request)
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="vscode") as puller,
        LspClient.over_process(argv, name="eglot") as pusher,
    ):
        pull_result = await puller.initialize(root, capabilities=pull_caps())
        push_result = await pusher.initialize(root, capabilities=copy.deepcopy(PUSH_ONLY_CAPS))
        assert "diagnosticProvider" in pull_result["capabilities"]
        assert "diagnosticProvider" not in push_result["capabilities"]

        uri = await pusher.open(path, "python")
        published = await pusher.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60
        )
        assert published["version"] == 1
        assert any("not a number" in d["message"] or "int" in d["message"] for d in published["diagnostics"])

        await puller.open(path, "python")
        report = await puller.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        assert report["kind"] == "full"
        assert [d["message"] for d in report["items"]] == [d["message"] for d in published["diagnostics"]]
        again = await puller.request(
            "textDocument/diagnostic", {"textDocument": {"uri": uri}, "previousResultId": report["resultId"]}
        )
        assert again["kind"] == "unchanged"
        # The pull client is not pushed to: it would show every error twice.
        assert not puller.notifications_of("textDocument/publishDiagnostics")


async def test_second_client_opening_a_held_document_gets_its_diagnostics_at_once(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root, path = bad_file(case, request)
    argv = daemon.client_argv(case.server)
    async with initialized_clients(argv, root, "first", "second") as (first, second):
        uri = await first.open(path, case.language, version=4)
        seen = await first.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60)
        assert seen["version"] == 4

        await second.open(path, case.language, version=17)
        replayed = await second.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=30
        )
        # In the newcomer's own numbering.
        assert replayed["version"] == 17
        assert replayed["diagnostics"] == seen["diagnostics"]


async def test_closing_a_document_clears_its_diagnostics_for_the_closing_client(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root, path = bad_file(case, request)
    argv = daemon.client_argv(case.server)
    async with LspClient.over_process(argv, name="lone") as lone:
        await lone.initialize(root)
        uri = await lone.open(path, case.language)
        await lone.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60)
        mark = len(lone.notifications)
        await lone.close(uri)
        await lone.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=True), since=mark, timeout=30)


async def test_closing_a_shared_document_clears_it_only_for_the_closer(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root, path = bad_file(case, request)
    argv = daemon.client_argv(case.server)
    async with initialized_clients(argv, root, "closer", "keeper") as (closer, keeper):
        uri = await closer.open(path, case.language)
        await keeper.open(path, case.language)
        await closer.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60)
        await keeper.wait_notification("textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60)
        mark = len(closer.notifications)
        await closer.close(uri)
        await closer.wait_notification(
            "textDocument/publishDiagnostics", is_for(uri, empty=True), since=mark, timeout=30
        )
        await round_trip(keeper, uri)
        assert not [p for p in keeper.notifications_of("textDocument/publishDiagnostics") if not p["diagnostics"]]


async def test_an_editor_after_the_indexer_gets_a_fully_initialized_server(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue("c_project")
    path = root / "src" / "use.c"
    path.write_text('#include "util.h"\nint use(void) { return ad; }\n')
    indexed = subprocess.run(
        [LENSMUX, "index", str(root), "--wait", "--runtime-dir", str(daemon.runtime_dir)],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert indexed.returncode == 0, indexed.stderr
    started_by_indexer = daemon.instances("clangd")
    assert len(started_by_indexer) == 1
    snippet_caps = default_client_capabilities()
    snippet_caps["textDocument"]["completion"] = {"completionItem": {"snippetSupport": True}}
    async with LspClient.over_process(daemon.client_argv("clangd"), name="editor") as editor:
        await editor.initialize(root, capabilities=snippet_caps)
        assert [i["pid"] for i in daemon.instances("clangd")] == [started_by_indexer[0]["pid"]]
        uri = await editor.open(path, "c")
        position = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 25}}
        with anyio.fail_after(60):
            while not (items := completion_texts(await editor.request("textDocument/completion", position))):
                await anyio.sleep(0.1)
        # The editor declared snippets; the indexer did not, and came first.
        assert any(fmt == 2 and "${" in text for fmt, text in items), items


async def test_diagnostics_reach_an_editor_while_another_types_without_pause(
    daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    # pyright analyses only once 250 ms have passed since any client's last change: a pyright of
    # its own would have published this editor's error long before the other editor pauses.
    root, path = bad_file(PYRIGHT, request)
    typing = root / "demo/typing_here.py"
    typing.write_text("x = 1\n")
    async with initialized_clients(daemon.client_argv("pyright"), root, "reader", "typist") as (reader, typist):
        other = await typist.open(typing, "python")
        stop = anyio.Event()

        async def type_without_pause() -> None:
            version = 1
            while not stop.is_set():
                version += 1
                at = {"line": 1, "character": 0}
                text = "# typing\n" if version % 2 == 0 else ""
                end = at if text else {"line": 2, "character": 0}
                await typist.change_incremental(other, version, {"start": at, "end": end}, text)
                await anyio.sleep(0.1)

        async with anyio.create_task_group() as group:
            group.start_soon(type_without_pause)
            await anyio.sleep(1)  # the typist is under way before the reader opens its file
            uri = await reader.open(path, "python")
            published = await reader.wait_notification(
                "textDocument/publishDiagnostics", is_for(uri, empty=False), timeout=60
            )
            stop.set()
        assert any("not a number" in d["message"] or "int" in d["message"] for d in published["diagnostics"])
        assert published["version"] == 1
