"""The daemon's file-by-file parse-and-bind warm-up of a shared pyright (issue 21, daemon/mux/lifecycle/bind_walk.py).

Once pyright has discovered its workspace, the daemon asks it documentSymbol for each workspace
file, one at a time and only while no client is busy, so that pyright has parsed and bound every
file before anyone asks a cross-file question. What pyright did, and in which order, is read from
its own Trace log (`[FG] binding:` lines, which it sends as window/logMessage to every client);
what clients see at pyright's default log level must be the same with the walk on and off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRACE = '\n[servers.pyright.settings.python.analysis]\nlogLevel = "Trace"\n'
OFF = "\n[servers.pyright]\nprebind = false\n"
# After discovery, the walk waits for 0.3 s without client messages; this is several times that.
SETTLE_S = 3.0
# Enough modules that the walk is still going when a client asks in the middle of it.
MANY = 300


def _project(root: Path, modules: int = 0) -> Path:
    """main.py (opened) imports nothing; lonely.py and the mNNN modules are imported and opened by nobody."""
    root.mkdir(parents=True)
    (root / "main.py").write_text("def main() -> int:\n    return 1\n")
    (root / "lonely.py").write_text("class Lonely:\n    def alone(self) -> str:\n        return 'x'\n")
    for n in range(modules):
        (root / f"m{n:03}.py").write_text(f"class C{n}:\n    def f(self, x: int) -> int:\n        return x + {n}\n")
    return root


def _messages(client: LspClient) -> list[str]:
    return [p.get("message", "") for p in client.notifications_of("window/logMessage") if isinstance(p, dict)]


def _is_binding(message: str, name: str) -> bool:
    """pyright's Trace line for binding a file: `[FG] binding: file:///.../name.py (3ms)`."""
    return "binding: " in message and message.rstrip().split(" (")[0].endswith("/" + name)


def _bound_lonely(client: LspClient) -> bool:
    return any(_is_binding(m, "lonely.py") for m in _messages(client))


def _walk_state(daemon: DaemonProc) -> str | None:
    instances = daemon.instances("pyright")
    return instances[0].get("prebind") if instances else None


async def _discovered(client: LspClient) -> None:
    with anyio.fail_after(60):
        while not any(m.startswith(("Found ", "No source files")) for m in _messages(client)):
            await anyio.sleep(0.05)


async def test_the_walk_binds_a_file_nobody_opened_or_imported(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    with running_daemon(tmp_path / "d", TRACE) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            await editor.open(root / "main.py", "python")
            await _discovered(editor)
            with anyio.fail_after(60):
                while not _bound_lonely(editor):
                    await anyio.sleep(0.05)
            wait_until(lambda: _walk_state(daemon) == "done", what="bind walk done in status")
        assert "binding 2 workspace files ahead" in daemon.log_text()


async def test_a_folder_added_is_walked_too(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "faraway.py").write_text("def far() -> int:\n    return 2\n")
    with running_daemon(tmp_path / "d", TRACE) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            await editor.open(root / "main.py", "python")
            await _discovered(editor)
            wait_until(lambda: _walk_state(daemon) == "done", what="bind walk of the root done")
            folder = {"uri": extra.as_uri(), "name": extra.name}
            await editor.notify("workspace/didChangeWorkspaceFolders", {"event": {"added": [folder], "removed": []}})
            with anyio.fail_after(60):
                while _bound(editor, "faraway.py") is None:
                    await anyio.sleep(0.05)
            wait_until(lambda: _walk_state(daemon) == "done", what="bind walk of the folder done")
        # The root's files were bound already: the second walk asked the new folder's file alone.
        log = daemon.log_text()
        assert "binding 3 workspace files ahead" in log
        assert log.count("bind walk: asking") == 3


async def test_the_walk_asks_nothing_when_off_by_config(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    with running_daemon(tmp_path / "d", TRACE + OFF) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            await editor.open(root / "main.py", "python")
            await _discovered(editor)
            # A wait, not a measurement: long past the moment the walk would have asked.
            await anyio.sleep(SETTLE_S)
            assert not _bound_lonely(editor)
            assert _walk_state(daemon) == "off"
        assert "workspace files ahead" not in daemon.log_text()


async def test_a_client_request_is_answered_between_two_files_of_the_walk(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", MANY)
    with running_daemon(tmp_path / "d", TRACE) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            uri = await editor.open(root / "main.py", "python")
            await _discovered(editor)
            with anyio.fail_after(60):
                while not any(_is_binding(m, "m000.py") for m in _messages(editor)):
                    await anyio.sleep(0.005)
            hover = await editor.request(
                "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}}
            )
            assert hover is not None
            answered_at = next(
                i for i, m in enumerate(editor.messages) if "id" in m and "result" in m and m["result"] == hover
            )
            wait_until(lambda: _walk_state(daemon) == "done", timeout=120, what="bind walk done in status")
            with anyio.fail_after(60):
                while not _bound(editor, f"m{MANY - 1:03}.py"):
                    await anyio.sleep(0.05)
            # In pyright's own order: the hover's answer came while modules were still to be bound,
            # and the walk bound them after it (a single workspace-wide pass would have bound them all first).
            last_bound = _bound(editor, f"m{MANY - 1:03}.py")
            assert last_bound is not None and last_bound > answered_at


def _bound(client: LspClient, name: str) -> int | None:
    """Where in everything the client received pyright's line for binding `name` is."""
    for i, m in enumerate(client.messages):
        params = m.get("params")
        if m.get("method") == "window/logMessage" and isinstance(params, dict) and _is_binding(params["message"], name):
            return i
    return None


async def _session(tmp_path: Path, root: Path, config: str, tag: str) -> list[tuple[str, Any]]:
    """Everything an editor connected from the start is told, until well after the walk."""
    with running_daemon(tmp_path / tag, config) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(root)
            await editor.open(root / "main.py", "python")
            await _discovered(editor)
            if "prebind = false" in config:
                await anyio.sleep(SETTLE_S)
            else:
                wait_until(lambda: _walk_state(daemon) == "done", what="bind walk done in status")
            # One question after it, so that anything late the walk caused has arrived before its answer.
            symbols = await editor.request("workspace/symbol", {"query": "Lonely"}, timeout=60)
            assert [s["name"] for s in symbols] == ["Lonely"]
            return list(editor.notifications)


async def test_an_editor_connected_during_the_walk_is_told_nothing_more(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    on = await _session(tmp_path, root, "", "on")
    off = await _session(tmp_path, root, OFF, "off")
    # No extra log line, progress, diagnostics or stray answer: the same messages in the same order.
    assert on == off
