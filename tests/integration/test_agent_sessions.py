"""Agents share a warm pyright's answers even though each opens the file before its question and closes it after.

Agent toolkits (Serena's SolidLSP, multilspy) wrap every question in didOpen/didClose of the
file as saved. pyright reads unopened files from disk, so such an open changes no answer:
a second agent asking what a first one asked is answered at once, and the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient
from support.projects import FANOUT_SHARED_DEF, fanout_reference_count, write_py_fanout_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _hits(daemon: DaemonProc) -> int:
    (instance,) = daemon.instances("pyright")
    hits: int = instance["cache"]["methods"].get("textDocument/references", {}).get("hits", 0)
    return hits


async def _ask_like_an_agent(argv: list[str], root: Path) -> Any:
    core = root / "pkg" / "core.py"
    line, character = FANOUT_SHARED_DEF
    async with LspClient.over_process(argv, name="agent") as agent:
        await agent.initialize(root)
        await agent.wait_notification("window/logMessage", lambda p: "source file" in p.get("message", ""))
        uri = await agent.open(core, "python")
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": character},
            "context": {"includeDeclaration": False},
        }
        found = await agent.request("textDocument/references", params, timeout=120)
        await agent.close(uri)
        await agent.shutdown_and_exit()
    return found


async def test_a_second_agent_gets_the_first_agents_answer_from_the_cache(daemon: DaemonProc, tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", 30)
    argv = daemon.client_argv("pyright")
    async with LspClient.over_process(argv, name="editor") as editor:
        # An editor keeps the instance (and its cache) alive between the agents' sessions.
        await editor.initialize(root)
        await editor.wait_notification("window/logMessage", lambda p: "source file" in p.get("message", ""))
        first = await _ask_like_an_agent(argv, root)
        assert len(first) == fanout_reference_count(30)
        before = _hits(daemon)
        second = await _ask_like_an_agent(argv, root)
        assert second == first
        assert _hits(daemon) == before + 1, "the second agent's open and close of the saved file dropped the answer"
