"""Two editors through `lensmux client` share one real clangd / pyright, correctly."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, process_alive, wait_until
from support.lspclient import LspClient, LspResponseError, path_uri

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@dataclass(frozen=True)
class Case:
    """One server and where things are in its sample project."""

    server: str
    language: str
    project: str
    util: str  # file defining add() and scale()
    main: str  # file calling them
    add_def: tuple[int, int]  # position of the name `add` in its definition
    add_call_in_main: tuple[int, int]  # position of `add` in the call in main
    expected_symbols_util: frozenset[str]


CLANGD = Case("clangd", "c", "c_project", "src/util.c", "src/main.c", (2, 4), (3, 17), frozenset({"add", "scale"}))
PYRIGHT = Case(
    "pyright", "python", "py_project", "demo/util.py", "demo/main.py", (0, 4), (5, 21), frozenset({"add", "scale"})
)


def _names(symbols: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for sym in symbols:
        out.add(sym["name"])
        out |= _names(sym.get("children", []))
    return out


def _pos(line_char: tuple[int, int]) -> dict[str, int]:
    return {"line": line_char[0], "character": line_char[1]}


def _server_pids(daemon: DaemonProc, server: str) -> list[int]:
    return [i["pid"] for i in daemon.instances(server) if i["pid"]]


@pytest.fixture(params=[CLANGD, PYRIGHT], ids=lambda c: c.server)
def case(request: pytest.FixtureRequest) -> Case:
    """Each test runs against clangd and against pyright."""
    param: Case = request.param
    return param


async def test_two_clients_share_one_server_and_both_get_answers(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue(case.project)
    util, main = root / case.util, root / case.main
    argv = daemon.client_argv(case.server)
    async with LspClient.over_process(argv, name="editor-a") as a, LspClient.over_process(argv, name="editor-b") as b:
        result_a = await a.initialize(root)
        result_b = await b.initialize(root)
        # The second client gets the same InitializeResult, from the cache.
        assert result_a == result_b
        assert "documentSymbolProvider" in result_a["capabilities"]

        instances = daemon.instances(case.server)
        assert len(instances) == 1, instances
        assert len(instances[0]["clients"]) == 2
        assert Path(instances[0]["root"]) == root.resolve()
        pid = instances[0]["pid"]
        assert process_alive(pid)

        uri_util = await a.open(util, case.language)
        uri_main = await b.open(main, case.language)
        await a.open(main, case.language)

        symbols = await a.request("textDocument/documentSymbol", {"textDocument": {"uri": uri_util}})
        assert case.expected_symbols_util <= _names(symbols)

        definition = await b.request(
            "textDocument/definition", {"textDocument": {"uri": uri_main}, "position": _pos(case.add_call_in_main)}
        )
        locations = definition if isinstance(definition, list) else [definition]
        target_uris = {loc.get("uri") or loc.get("targetUri") for loc in locations}
        assert uri_util in target_uris or path_uri(root / "include/util.h") in target_uris

        async def references_cover_both_files() -> bool:
            refs = await a.request(
                "textDocument/references",
                {
                    "textDocument": {"uri": uri_util},
                    "position": _pos(case.add_def),
                    "context": {"includeDeclaration": True},
                },
            )
            return {r["uri"] for r in refs} >= {uri_util, uri_main}

        # clangd's cross-file answers are complete once its index has the files.
        for _ in range(100):
            if await references_cover_both_files():
                break
        else:
            pytest.fail("references never covered both files")

        # b asks about util's callers as a client of its own would: with util open. (clangd tells
        # a client only the callers in files it opened itself: docs/sharing.md.)
        await b.open(util, case.language)
        items = await b.request(
            "textDocument/prepareCallHierarchy", {"textDocument": {"uri": uri_util}, "position": _pos(case.add_def)}
        )
        assert items and items[0]["name"].startswith("add")
        incoming = await b.request("callHierarchy/incomingCalls", {"item": items[0]})
        callers = {call["from"]["name"] for call in incoming}
        assert any(name.startswith("scale") for name in callers), callers

        # Still one process for both clients, and it is the same one.
        assert _server_pids(daemon, case.server) == [pid]


async def test_one_client_leaving_does_not_disturb_the_other(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue(case.project)
    argv = daemon.client_argv(case.server)
    async with LspClient.over_process(argv, name="stays") as stays:
        await stays.initialize(root)
        uri = await stays.open(root / case.util, case.language)
        async with LspClient.over_process(argv, name="leaves") as leaves:
            await leaves.initialize(root)
            await leaves.open(root / case.util, case.language)
            await leaves.shutdown_and_exit()
        wait_until(lambda: len(daemon.instances(case.server)[0]["clients"]) == 1, what="client to detach")
        # The document stays open for the remaining client and answers still come.
        assert daemon.instances(case.server)[0]["open_documents"] == 1
        symbols = await stays.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert case.expected_symbols_util <= _names(symbols)


async def test_edits_from_two_clients_reach_one_consistent_document(
    case: Case, daemon: DaemonProc, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue(case.project)
    util = root / case.util
    argv = daemon.client_argv(case.server)
    if case.server == "clangd":
        first, second = "int triple(int x) { return 3 * x; }\n", "int quadruple(int x) { return 4 * x; }\n"
    else:
        first, second = (
            "def triple(x: int) -> int:\n    return 3 * x\n",
            "def quadruple(x: int) -> int:\n    return 4 * x\n",
        )
    async with LspClient.over_process(argv, name="a") as a, LspClient.over_process(argv, name="b") as b:
        await a.initialize(root)
        await b.initialize(root)
        uri = await a.open(util, case.language)
        await b.open(util, case.language)
        # Each connection is ordered, the two are not: a round trip on b makes
        # sure its didOpen (with the disk text) is in before a edits.
        await b.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        end_line = len(util.read_text().splitlines())
        at_end = {"start": {"line": end_line, "character": 0}, "end": {"line": end_line, "character": 0}}
        # Each client numbers its own versions; both start at 1.
        await a.change_incremental(uri, 2, at_end, first)
        end_line += first.count("\n")
        at_end = {"start": {"line": end_line, "character": 0}, "end": {"line": end_line, "character": 0}}
        await b.change_incremental(uri, 2, at_end, second)
        # The two changes travel on different connections, so a request may
        # reach clangd between them and be answered ContentModified (-32801),
        # which editors retry; the final state must hold both edits.
        for client in (a, b):
            names: set[str] = set()
            for _ in range(50):
                try:
                    names = _names(await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}))
                except LspResponseError as exc:
                    assert exc.code == -32801, exc
                    continue
                if {"triple", "quadruple"} <= names:
                    break
                await anyio.sleep(0.1)
            assert {"triple", "quadruple"} <= names, names


async def test_idle_instance_shuts_down_and_its_process_exits(tmp_path: Path, py_project: Path) -> None:
    from support.daemon_proc import running_daemon

    with running_daemon(tmp_path / "d", "[daemon]\nidle_timeout = 0.5\n") as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright")) as client:
            await client.initialize(py_project)
            pid = daemon.instances("pyright")[0]["pid"]
        wait_until(lambda: not daemon.instances("pyright"), timeout=30, what="idle shutdown")
        wait_until(lambda: not process_alive(pid), timeout=15, what="pyright to exit")
        assert "idle" in daemon.log_text()
