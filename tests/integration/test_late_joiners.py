"""A client that joins a running shared server is told what a server of its own would have told it at start-up.

Agent toolkits wait for a server's start-up signal before their first request (pyright's
"Found N source files" log line, its end of analysis progress, clangd's background-index progress)
and give up after a minute. The reference is the same client run directly against the server: a
late joiner gets the same start-up messages, in the same order, once each, with today's values.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, LspTimeout, default_client_capabilities, path_uri
from support.projects import write_files, write_py_fanout_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PYRIGHT = [str(VENV_BIN / "pyright-langserver"), "--stdio"]
CLANGD = [str(VENV_BIN / "clangd")]
FOUND = "source file"
# What a late joiner is given to hear its start-up signal: far more than the replay needs, far
# less than the minute a toolkit waits (on main it never comes).
SIGNAL_WAIT = 20


def _agent_caps(*, window_progress: bool) -> dict[str, Any]:
    caps = default_client_capabilities()
    caps["window"] = {"workDoneProgress": window_progress}
    return caps


def _startup(client: LspClient) -> list[Any]:
    """What the client was told that is not an answer: log lines, progress, pyright's progress notifications."""
    told: list[Any] = []
    for message in client.messages:
        method = message.get("method")
        params: Any = message.get("params")
        if method == "window/logMessage":
            told.append(("log", params["message"]))
        elif method == "$/progress":
            value = params["value"]
            told.append(("progress", params["token"], value.get("kind"), value.get("title")))
        elif isinstance(method, str) and method.startswith("pyright/"):
            told.append((method, json.dumps(params)))
        elif method == "window/workDoneProgress/create" and "id" in message:
            told.append(("create", params["token"]))
    return told


async def _wait_found(client: LspClient) -> None:
    await client.wait_notification("window/logMessage", lambda p: FOUND in p.get("message", ""), timeout=SIGNAL_WAIT)


async def _direct_pyright_startup(root: Path, caps: dict[str, Any]) -> list[Any]:
    async with LspClient.over_process(PYRIGHT, cwd=root, name="direct") as alone:
        await alone.initialize(root, capabilities=caps)
        await _wait_found(alone)
        told = _startup(alone)
        await alone.shutdown_and_exit()
    return told


async def test_a_late_agent_hears_pyright_start_as_from_its_own_server(daemon: DaemonProc, py_project: Path) -> None:
    caps = _agent_caps(window_progress=False)
    alone = await _direct_pyright_startup(py_project, caps)
    assert any(kind == "log" and FOUND in told for kind, told, *_ in alone), alone
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="first") as first:
        await first.initialize(py_project, capabilities=caps)
        await _wait_found(first)
        async with LspClient.over_process(argv, name="late") as late:
            await late.initialize(py_project, capabilities=caps)
            try:
                await _wait_found(late)
            except LspTimeout:
                pytest.fail(f"the late joiner never heard pyright was ready; it was told {_startup(late)}")
            # Everything pyright said before its InitializeResult came before the late joiner's own.
            answered = next(i for i, m in enumerate(late.messages) if "result" in m)
            early = late.messages[:answered]
            before = [m["params"]["message"] for m in early if m.get("method") == "window/logMessage"]
            assert before and before[0].startswith("Pyright language server"), early
            assert _startup(late) == alone
            # The first client, which started the server, hears it all too, and only once.
            assert _startup(first) == alone
            assert len(daemon.instances("pyright")) == 1


def _found(client: LspClient) -> list[str]:
    return [told for kind, told, *_ in _startup(client) if kind == "log" and FOUND in told]


async def test_a_late_joiner_hears_the_file_count_of_today(daemon: DaemonProc, py_project: Path) -> None:
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="first") as first:
        await first.initialize(py_project)
        await _wait_found(first)
        [at_start] = _found(first)
        today = at_start.replace(at_start.split()[1], str(int(at_start.split()[1]) + 1))
        added = py_project / "demo" / "added.py"
        added.write_text("def added() -> int:\n    return 1\n")
        await first.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": path_uri(added), "type": 1}]})
        await first.wait_notification("window/logMessage", lambda p: p.get("message") == today)
        async with LspClient.over_process(argv, name="late") as late:
            await late.initialize(py_project)
            await _wait_found(late)
            assert _found(late) == [today]


async def test_a_client_without_window_progress_gets_pyrights_own_progress_notifications(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    caps = _agent_caps(window_progress=False)
    # Enough open modules that pyright analyses them in more than one pass, and so reports progress.
    root = write_py_fanout_project(tmp_path / "fan", 40)

    async def analyse(client: LspClient) -> list[Any]:
        await client.initialize(root, capabilities=caps)
        await _wait_found(client)
        for i in range(8):
            await client.open(root / "pkg" / f"mod{i}.py", "python")
        await client.wait_notification("pyright/endProgress", timeout=60)
        return [told for told in _startup(client) if told[0].startswith("pyright/")]

    async with LspClient.over_process(PYRIGHT, cwd=root, name="direct") as alone:
        expected = await analyse(alone)
    assert expected[0] == ("pyright/beginProgress", "[null]") and expected[-1] == ("pyright/endProgress", "[null]")
    async with LspClient.over_process(daemon.client_argv("pyright"), name="shared") as shared:
        got = await analyse(shared)
    # The reports count files left and may be fewer or more; their bracket is the signal.
    assert (got[0], got[-1]) == (expected[0], expected[-1]), got
    assert all(kind == "pyright/reportProgress" for kind, _ in got[1:-1]), got


def _indexed_c_project(root: Path, files: int, header_decls: int = 0) -> Path:
    """A C project with a compile database; `header_decls` makes every file parse a large header."""
    include = '#include "big.h"\n' if header_decls else ""
    tree = {f"src/f{i}.c": f"{include}int f{i}(int x) {{ return x + {i}; }}\n" for i in range(files)}
    if header_decls:
        tree["src/big.h"] = "".join(f"int big_{n}(int a, int b);\n" for n in range(header_decls))
    write_files(root, tree)
    commands = [
        {"directory": str(root), "file": f"src/f{i}.c", "arguments": ["cc", "-c", f"src/f{i}.c"]} for i in range(files)
    ]
    (root / "compile_commands.json").write_text(json.dumps(commands))
    return root


def _progress_of(client: LspClient, token: str) -> list[Any]:
    return [t[2] for t in _startup(client) if t[0] == "progress" and t[1] == token]


async def _until(predicate: Callable[[], bool], what: str, limit: float = 60) -> None:
    with anyio.fail_after(limit):
        while not predicate():
            await anyio.sleep(0.05)


BACKGROUND = "backgroundIndexProgress"


async def test_a_late_joiner_hears_clangds_background_index_once(daemon: DaemonProc, tmp_path: Path) -> None:
    root = _indexed_c_project(tmp_path / "c", 8)
    argv = daemon.client_argv("clangd")
    async with LspClient.over_process(argv, name="first") as first:
        await first.initialize(root)
        await first.open(root / "src" / "f0.c", "c")
        await _until(lambda: "end" in _progress_of(first, BACKGROUND), "first client's index end")
        async with LspClient.over_process(argv, name="late") as late:
            await late.initialize(root)
            await _until(lambda: "end" in _progress_of(late, BACKGROUND), "late joiner's index end", SIGNAL_WAIT)
            assert ("create", BACKGROUND) in _startup(late)
            kinds = _progress_of(late, BACKGROUND)
            assert kinds[0] == "begin" and kinds.count("begin") == 1 and kinds.count("end") == 1, kinds
            assert _progress_of(first, BACKGROUND).count("begin") == 1


async def test_a_joiner_during_clangds_index_follows_it_to_its_end(daemon: DaemonProc, tmp_path: Path) -> None:
    # Every file parses a large header: the index takes seconds, so it is surely still running when frozen.
    root = _indexed_c_project(tmp_path / "c", 200, header_decls=20_000)
    argv = daemon.client_argv("clangd")
    async with LspClient.over_process(argv, name="first") as first:
        await first.initialize(root)
        await first.open(root / "src" / "f0.c", "c")
        await _until(lambda: "report" in _progress_of(first, BACKGROUND), "the index's first report")
        (instance,) = daemon.instances("clangd")
        # Frozen mid-index, so the joiner surely joins a progress still running.
        os.kill(instance["pid"], signal.SIGSTOP)
        assert "end" not in _progress_of(first, BACKGROUND), "precondition: the index ended before it was frozen"
        try:
            async with LspClient.over_process(argv, name="late") as late:
                await late.initialize(root)
                await _until(lambda: "begin" in _progress_of(late, BACKGROUND), "the joiner's begin", SIGNAL_WAIT)
                assert "end" not in _progress_of(late, BACKGROUND)
                os.kill(instance["pid"], signal.SIGCONT)
                await _until(lambda: "end" in _progress_of(late, BACKGROUND), "the joiner's end")
                kinds = _progress_of(late, BACKGROUND)
                assert kinds.count("begin") == 1 and kinds.count("end") == 1, kinds
        finally:
            os.kill(instance["pid"], signal.SIGCONT)
