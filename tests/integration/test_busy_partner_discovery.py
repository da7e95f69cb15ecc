"""Next to an editor that never pauses, another client still gets pyright's whole workspace (issue point 3).

pyright finds the workspace's files only once no client has edited a document or asked for
symbols, definitions or code actions for 250 ms. A pyright of its own finds them right after it
starts; a shared one next to an editor that types and asks without pause would not find them at
all, and another client's Find References would hold only the open file and what it imports.
Here the busy editor really never pauses (an edit and its undo every 50 ms, its outline asked
all along, later references it cancels), and the other client must get every caller, as from
pyright alone, and the symbols of a folder it adds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, LspClientError, path_uri
from support.projects import (
    fanout_reference_count,
    fanout_references,
    write_files,
    write_py_fanout_project,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODULES = 30
EXTRA_SYMBOL = "lensmux_folder_tool"


class BusyEditor:
    """Client B: types in its own module and asks about it without ever pausing, until told to stop.

    Typing does not wait for answers, as an editor's keystrokes do not: each keystroke (here an
    insertion and its undo) follows the last by far less than pyright's 250 ms, and its outline is
    asked for all along. Its Find References, each cancelled at once, start only when `find` is
    set: a references walk over every module takes pyright long enough that its timer comes due
    meanwhile and runs next, whoever typed, so before the other client's first answer only the
    typing and the outline may decide whether pyright discovers its workspace.
    """

    def __init__(self, client: LspClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.uri = path_uri(root / "pkg/mod0.py")
        self.keystrokes = 0
        self.symbol_answers = 0
        self.started = anyio.Event()
        self.find = anyio.Event()

    async def run(self, stop: anyio.Event) -> None:
        await self.client.initialize(self.root)
        await self.client.open(self.root / "pkg/mod0.py", "python")
        async with anyio.create_task_group() as group:
            group.start_soon(self._type, stop)
            group.start_soon(self._outline, stop)
            group.start_soon(self._find_references, stop)

    async def _type(self, stop: anyio.Event) -> None:
        at_start = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        undo = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
        while not stop.is_set():
            self.keystrokes += 1
            await self.client.change_incremental(self.uri, 2 * self.keystrokes, at_start, "# busy\n")
            await self.client.change_incremental(self.uri, 2 * self.keystrokes + 1, undo, "")
            self.started.set()
            await anyio.sleep(0.05)

    async def _outline(self, stop: anyio.Event) -> None:
        while not stop.is_set():
            symbols = await self.client.request("textDocument/documentSymbol", {"textDocument": {"uri": self.uri}})
            if symbols:
                self.symbol_answers += 1
            await anyio.sleep(0.05)

    async def _find_references(self, stop: anyio.Event) -> None:
        other = {
            "textDocument": {"uri": self.uri},
            "position": {"line": 0, "character": 22},  # `other` in the import line
            "context": {"includeDeclaration": True},
        }
        await self.find.wait()
        while not stop.is_set():
            refs = await self.client.start_request("textDocument/references", other)
            await refs.cancel()
            try:
                await refs.result(timeout=60)
            except LspClientError:
                pass  # cancelled: B moved on
            await anyio.sleep(0.05)


async def test_a_busy_editor_does_not_hide_the_workspace_from_another(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    extra = write_files(tmp_path / "extra", {"tools.py": f"def {EXTRA_SYMBOL}() -> str:\n    return 'ok'\n"})
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="busy") as b_client,
        LspClient.over_process(argv, name="asker") as a_client,
    ):
        busy = BusyEditor(b_client, root)
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            # B starts the shared pyright and is busy from its first moment on.
            group.start_soon(busy.run, stop)
            await busy.started.wait()
            await a_client.initialize(root)
            uri = await a_client.open(root / "pkg/core.py", "python")
            found = await a_client.request("textDocument/references", fanout_references(uri), timeout=60)
            files = {loc["uri"] for loc in found or []}
            busy.find.set()

            folder = {"uri": path_uri(extra), "name": extra.name}
            await a_client.notify("workspace/didChangeWorkspaceFolders", {"event": {"added": [folder], "removed": []}})
            # pyright alone finds a new folder's files once it has read its settings: ask as the
            # suite's editor does, until found (a bound for failing, not a timing).
            symbols: list[Any] = []
            for _ in range(20):
                answer = await a_client.request("workspace/symbol", {"query": EXTRA_SYMBOL}, timeout=60)
                symbols = [s for s in answer or [] if s.get("name") == EXTRA_SYMBOL]
                if symbols:
                    break
                await anyio.sleep(0.5)
            keystrokes = busy.keystrokes
            stop.set()

    # Every module calls `shared`: pyright alone reports each call, in every module.
    assert len(found) == fanout_reference_count(MODULES), f"{len(found)} references in {sorted(files)}"
    assert len(files) == MODULES + 1
    assert symbols, "the added folder's symbol was never found"
    assert symbols[0]["location"]["uri"] == path_uri(extra / "tools.py")
    # B really was busy all along, and was answered.
    assert keystrokes > 3
    assert busy.symbol_answers > 0
