"""A search reads the writes it follows: edits and saves the daemon knows of are indexed first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.lspclient import LspClient

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

QUERY = "reconcile ledger entries against the bank statement"
NEW_FUNCTION = (
    "\n\ndef reconcile_ledger_entries(entries: list[int]) -> int:\n"
    '    """Reconcile ledger entries against the bank statement."""\n'
    "    return sum(entries)\n"
)


def _index(daemon: DaemonProc, root: Path) -> None:
    done = daemon.run_cli("index", str(root), "--wait", "--json", timeout=600)
    assert done.returncode == 0, done.stderr


def _search(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    response: dict[str, Any] = daemon.call(
        "lensmux/hybridSearch", {"query": QUERY, "root": str(root), "top_k": 5}, timeout=120
    )
    return response


def _names(response: dict[str, Any]) -> list[str]:
    return [s["name"] for s in response["ranked_symbols"]]


async def _edited(editor: LspClient, root: Path, *, save: bool) -> Path:
    """Open util.py, add the new function, maybe save; return once the daemon has read it all."""
    path = root / "demo" / "util.py"
    uri = await editor.open(path, "python")
    await editor.change_full(uri, path.read_text() + NEW_FUNCTION, 2)
    if save:
        path.write_text(path.read_text() + NEW_FUNCTION)
        await editor.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    # The daemon handles one client's messages in order: once this is answered, it has
    # seen the edit (and the save), whatever it has indexed.
    await editor.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    return path


@pytest.mark.parametrize("save", [False, True], ids=["unsaved-edit", "save"])
async def test_the_first_search_after_a_change_finds_it(daemon: DaemonProc, py_project: Path, save: bool) -> None:
    _index(daemon, py_project)
    assert "reconcile_ledger_entries" not in _names(_search(daemon, py_project))
    async with LspClient.over_process(daemon.client_argv("pyright")) as editor:
        await editor.initialize(py_project)
        await _edited(editor, py_project, save=save)
        # No waiting, no polling: the very next search must see the change.
        response = await anyio.to_thread.run_sync(_search, daemon, py_project)
    assert "reconcile_ledger_entries" in _names(response), response["warnings"]
    assert not any("still being indexed" in w for w in response["warnings"])


async def test_a_change_not_indexed_within_the_bound_is_named(tmp_path: Path, py_project: Path) -> None:
    config = "[daemon.search]\nfresh_wait = 0.001\nlearn_graph = false\n"
    with running_daemon(tmp_path / "d", config) as daemon:
        _index(daemon, py_project)
        async with LspClient.over_process(daemon.client_argv("pyright")) as editor:
            await editor.initialize(py_project)
            await _edited(editor, py_project, save=False)
            response = await anyio.to_thread.run_sync(_search, daemon, py_project)
    assert any("demo/util.py" in w and "still being indexed" in w for w in response["warnings"]), response
    assert response["degraded"] is False
