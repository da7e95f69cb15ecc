"""A client sees pyright's "Finding references" progress for its references, however the daemon answers it.

pyright alone shows a client that declared `window.workDoneProgress` a progress (create, begin
"Finding references", end) for each references request. Through lensmux a second client's
identical question is answered from the cache, or joined to a request in flight: the progress
must come all the same, and to the asker, not to whoever asked the server something last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient, path_uri
from support.projects import FANOUT_SHARED_DEF, write_py_fanout_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROGRESS = {"window": {"workDoneProgress": True}}


def _hits(daemon: DaemonProc) -> int:
    (instance,) = daemon.instances("pyright")
    hits: int = instance["cache"]["methods"].get("textDocument/references", {}).get("hits", 0)
    return hits


def _finding_references(client: LspClient) -> list[list[str]]:
    """Each progress the client was shown for a references search: its kinds, in order."""
    runs: dict[Any, list[str]] = {}
    for method, params in client.notifications:
        if method != "$/progress" or not isinstance(params, dict):
            continue
        value = params.get("value") or {}
        token = repr(params.get("token"))
        if value.get("kind") == "begin" and value.get("title") == "Finding references":
            runs[token] = ["begin"]
        elif token in runs:
            runs[token].append(str(value.get("kind")))
    return list(runs.values())


async def test_an_answer_from_the_cache_comes_with_the_progress_pyright_shows(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    root = write_py_fanout_project(tmp_path / "fan", 30)
    line, character = FANOUT_SHARED_DEF
    params = {
        "textDocument": {"uri": path_uri(root / "pkg" / "core.py")},
        "position": {"line": line, "character": character},
        "context": {"includeDeclaration": False},
    }
    argv = daemon.client_argv("pyright")
    async with (
        LspClient.over_process(argv, name="first") as first,
        LspClient.over_process(argv, name="second") as second,
    ):
        for client in (first, second):
            await client.initialize(root, capabilities=PROGRESS)
            await client.wait_notification("window/logMessage", lambda p: "source file" in p.get("message", ""))
        found = await first.request("textDocument/references", params, timeout=120)
        assert _finding_references(first) == [["begin", "end"]], "pyright shows the asker its search"
        before = _hits(daemon)
        again = await second.request("textDocument/references", params, timeout=120)
        assert _hits(daemon) == before + 1, "the second question was not answered from the cache"
        assert again == found
        assert _finding_references(second) == [["begin", "end"]]
        assert _finding_references(first) == [["begin", "end"]], "nor is the first shown the second's"
