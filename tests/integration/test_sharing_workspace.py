"""What a client's workspace and documents do to a shared server (issue 12, point 9).

Workspace folders a client adds reach the server (once, however many clients
add them) and leave it with the last client that held them; notebooks, which
the daemon cannot share, are refused with a message to the client that sent one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc
from support.lsp_defaults import initialize_params
from support.lspclient import LspClient
from support.projects import write_py_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

UNIQUE = "zebra_unique_helper"


def _extra_folder(base: Path) -> Path:
    folder = base / "extra"
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "extra"\nversion = "0.1"\n')
    (folder / "helpers.py").write_text(f"def {UNIQUE}() -> int:\n    return 1\n")
    return folder


async def _symbol_names(client: LspClient) -> set[str]:
    found = await client.request("workspace/symbol", {"query": UNIQUE}, timeout=60)
    return {s["name"] for s in found or []}


async def _eventually(client: LspClient, present: bool) -> None:
    for _ in range(240):
        if (UNIQUE in await _symbol_names(client)) == present:
            return
        await anyio.sleep(0.25)
    pytest.fail(f"{UNIQUE} {'never appeared' if present else 'never went away'} in workspace/symbol")


def _folders_event(added: list[Path], removed: list[Path]) -> dict[str, Any]:
    def folder(path: Path) -> dict[str, str]:
        return {"uri": path.as_uri(), "name": path.name}

    return {"event": {"added": [folder(p) for p in added], "removed": [folder(p) for p in removed]}}


async def test_added_workspace_folder_reaches_the_server_until_its_last_holder_leaves(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_py_project(tmp_path / "pyproj")
    extra = _extra_folder(tmp_path)
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="stays") as stays:
        await stays.initialize(root)
        await stays.open(root / "demo/util.py", "python")
        await _eventually(stays, present=False)
        async with LspClient.over_process(argv, name="adder") as adder:
            await adder.initialize(root)
            await adder.notify("workspace/didChangeWorkspaceFolders", _folders_event([extra], []))
            # The client that added the folder sees its symbols, as with its own server.
            await _eventually(adder, present=True)
            async with LspClient.over_process(argv, name="second") as second:
                # A second holder, naming it in its initialize, keeps it after the first removes it.
                params = initialize_params(
                    root,
                    client_name="second",
                    capabilities=None,
                    workspace_folders=True,
                    process_id=None,
                    initialization_options=None,
                )
                params["workspaceFolders"].append({"uri": extra.as_uri(), "name": extra.name})
                await second.request("initialize", params)
                await second.notify("initialized", {})
                await adder.notify("workspace/didChangeWorkspaceFolders", _folders_event([], [extra]))
                await _eventually(second, present=True)
            # `second` left; `adder` had removed it: no client holds the folder any more.
        await _eventually(stays, present=False)
        # A client asking for a subdirectory gets a pyright of its own there (pyright's answers
        # depend on its root: docs/sharing.md), which was never told of the folder either.
        async with LspClient.over_process(argv, name="subdir") as subdir:
            await subdir.initialize(root / "demo")
            await _eventually(subdir, present=False)
            assert sorted(i["root"] for i in daemon.instances("pyright")) == [str(root), str(root / "demo")]


async def test_notebook_documents_are_refused_with_a_message(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_project(tmp_path / "pyproj")
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="notebook-editor") as editor:
        result = await editor.initialize(root)
        # Not offered: a client that follows the capabilities never sends notebooks.
        assert "notebookDocumentSync" not in result["capabilities"]
        notebook = (root / "nb.ipynb").as_uri()
        await editor.notify(
            "notebookDocument/didOpen",
            {
                "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": []},
                "cellTextDocuments": [],
            },
        )
        message = await editor.wait_notification("window/showMessage", timeout=30)
        assert "notebook" in message["message"].lower()
        # The shared server keeps serving this client.
        uri = await editor.open(root / "demo/util.py", "python")
        symbols = await editor.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        assert {s["name"] for s in symbols} >= {"add", "scale"}
