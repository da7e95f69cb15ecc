"""clangd's cross-file answers through lensmux show a client what its own opens show it from clangd alone.

Without compile_commands.json, clangd answers Find References and incoming calls from its
dynamic index: every file opened at it since it started, closed ones included. An agent
next to an editor that holds util.c and intl.c open must not get their references, and
must keep those of a file it opened and closed itself. With compile_commands.json every
file is indexed; the references are the same whoever opened what, and so must be their
order. The reference is the agent's session run directly against clangd.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import VENV_BIN, DaemonProc
from support.lspclient import LspClient, path_uri
from support.projects import C_FILES, write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLANGD = [str(VENV_BIN / "clangd")]
INTL = '#include "util.h"\n\nstatic int twice(int v) { return add(v, v); }\nint use_twice(void) { return twice(3); }\n'
FILES = {**C_FILES, "src/intl.c": INTL}
BACKGROUND = "backgroundIndexProgress"


def _cdb(root: Path) -> dict[str, str]:
    """The project with a compilation database instead of compile_flags.txt: clangd indexes every file."""
    entries = [
        {"directory": str(root), "file": f"src/{name}.c", "arguments": ["cc", "-std=c11", "-Iinclude", "-c"]}
        for name in ("util", "main", "intl")
    ]
    files = {rel: text for rel, text in FILES.items() if rel != "compile_flags.txt"}
    return {**files, "compile_commands.json": json.dumps(entries)}


async def _open(client: LspClient, root: Path, rel: str) -> str:
    """Open a file and wait until clangd has built it (its diagnostics come after its index entry)."""
    uri = path_uri(root / rel)
    since = len(client.notifications)
    await client.open(root / rel, "c")
    await client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri, since=since)
    return uri


def _position(root: Path, rel: str, needle: str) -> dict[str, int]:
    text = (root / rel).read_text()
    at = text.index(needle)
    return {"line": text.count("\n", 0, at), "character": at - text.rfind("\n", 0, at) - 1}


def _shown(root: Path, value: Any) -> Any:
    """An answer with its URIs relative to the project (the two runs use two directories)."""
    return json.loads(json.dumps(value).replace(path_uri(root) + "/", ""))


async def _references(client: LspClient, root: Path) -> Any:
    params = {
        "textDocument": {"uri": path_uri(root / "src/main.c")},
        "position": _position(root, "src/main.c", "add(1, 2)"),
        "context": {"includeDeclaration": True},
    }
    return _shown(root, await client.request("textDocument/references", params))


async def _incoming_calls(client: LspClient, root: Path) -> Any:
    main = {"uri": path_uri(root / "src/main.c")}
    params = {"textDocument": main, "position": _position(root, "src/main.c", "add(1")}
    items = await client.request("textDocument/prepareCallHierarchy", params)
    return _shown(root, await client.request("callHierarchy/incomingCalls", {"item": items[0]}))


async def _agent(client: LspClient, root: Path) -> dict[str, Any]:
    """The agent: main.c open, then util.c opened and closed again."""
    await client.initialize(root)
    await _open(client, root, "src/main.c")
    told = {"references": await _references(client, root), "incoming calls": await _incoming_calls(client, root)}
    await client.close(await _open(client, root, "src/util.c"))
    told["references, util.c opened and closed"] = await _references(client, root)
    told["incoming calls, util.c opened and closed"] = await _incoming_calls(client, root)
    return told


def _direct_env() -> dict[str, str]:
    return {"PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}


async def test_an_agent_is_not_shown_the_files_an_editor_holds_open(daemon: DaemonProc, tmp_path: Path) -> None:
    alone_root = write_files(tmp_path / "alone" / "proj", FILES)
    async with LspClient.over_process(CLANGD, cwd=alone_root, env=_direct_env(), name="agent") as agent:
        alone = await _agent(agent, alone_root)
    assert alone["references"] == [{"uri": "src/main.c", "range": alone["references"][0]["range"]}], alone
    assert any(loc["uri"] == "src/util.c" for loc in alone["references, util.c opened and closed"]), alone

    root = write_files(tmp_path / "shared" / "proj", FILES)
    argv = daemon.client_argv("clangd")
    async with (
        LspClient.over_process(argv, name="editor") as editor,
        LspClient.over_process(argv, name="agent") as agent,
    ):
        await editor.initialize(root)
        for rel in ("src/util.c", "src/intl.c"):
            await _open(editor, root, rel)
        shared = await _agent(agent, root)
        # The editor, which holds both, still gets everything clangd knows.
        editor_refs = {loc["uri"] for loc in await _references(editor, root)}
    assert shared == alone
    assert editor_refs == {"src/main.c", "src/util.c", "src/intl.c"}


async def _agent_after_indexing(client: LspClient, root: Path) -> Any:
    await client.initialize(root)
    await _open(client, root, "src/main.c")
    await client.wait_notification(
        "$/progress", lambda p: p["token"] == BACKGROUND and p["value"]["kind"] == "end", timeout=60
    )
    return await _references(client, root)


async def test_with_a_compilation_database_the_order_is_the_agents_own(daemon: DaemonProc, tmp_path: Path) -> None:
    alone_root = tmp_path / "alone" / "proj"
    write_files(alone_root, _cdb(alone_root))
    async with LspClient.over_process(CLANGD, cwd=alone_root, env=_direct_env(), name="agent") as agent:
        alone = await _agent_after_indexing(agent, alone_root)
    # Every caller, util.h's declaration included: the background index covers them all.
    assert {loc["uri"] for loc in alone} == {"src/main.c", "src/util.c", "src/intl.c", "include/util.h"}, alone

    root = tmp_path / "shared" / "proj"
    write_files(root, _cdb(root))
    argv = daemon.client_argv("clangd")
    async with (
        LspClient.over_process(argv, name="editor") as editor,
        LspClient.over_process(argv, name="agent") as agent,
    ):
        await editor.initialize(root)
        await _open(editor, root, "src/util.c")
        await editor.wait_notification(
            "$/progress", lambda p: p["token"] == BACKGROUND and p["value"]["kind"] == "end", timeout=60
        )
        shared = await _agent_after_indexing(agent, root)
    assert shared == alone
