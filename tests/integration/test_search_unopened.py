"""A search's call-hierarchy questions to pyright leave the files they name closed, and find the same graph.

pyright checks every file it has open (each expression's type, for diagnostics) in the thread
that answers; a search that opened each file it asks about made pyright check files nobody
opened. A file outside pyright's sources (its `exclude`) is answered only once opened, and is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.projects import add_session_calls, write_py_fanout_project

pytestmark = [pytest.mark.slow]

MODULES = 6
# pyright's own sources leave scripts/ out; lensmux's walker indexes it.
EXCLUDED = "[tool.pyright]\nexclude = ['scripts']\n"
TOOL = "from pkg.session import Session\n\n\ndef tool_main() -> str:\n    return Session().request('tool')\n"


def _search(daemon: DaemonProc, root: Path, query: str) -> dict[str, Any]:
    params = {"query": query, "root": str(root), "top_k": 10, "config_overrides": {"max_graph_depth": 1}}
    answer: dict[str, Any] = daemon.call("lensmux/hybridSearch", params, timeout=120)
    return answer


def _reasons(answer: dict[str, Any]) -> set[str]:
    return {r for s in answer["ranked_symbols"] for r in s["reasons"]}


def _pyright(daemon: DaemonProc) -> dict[str, Any]:
    [pyright] = daemon.instances("pyright")
    return pyright


def _open_documents(daemon: DaemonProc) -> int:
    count: int = _pyright(daemon)["open_documents"]
    return count


def _until_expanded(daemon: DaemonProc, root: Path, query: str, reason: str) -> dict[str, Any]:
    """The search again until pyright, discovering its workspace, answers it completely."""
    answer: dict[str, Any] = {}
    for _ in range(60):
        answer = _search(daemon, root, query)
        if reason in _reasons(answer):
            return answer
    pytest.fail(f"{reason} never among {sorted(_reasons(answer))}")


def test_a_search_finds_callers_without_opening_files_at_pyright(tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    add_session_calls(root, MODULES, 2)
    with open(root / "pyproject.toml", "a") as f:
        f.write(EXCLUDED)
    (root / "scripts").mkdir()
    (root / "scripts/tool.py").write_text(TOOL)
    # Learning off: only the searches ask pyright, and nothing lets documents go between them.
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_graph = false\n") as daemon:
        done = daemon.run_cli("index", str(root), "--wait", "--json")
        assert done.returncode == 0, done.stderr
        _search(daemon, root, "`Session`")  # pyright started and known to the status
        # Its bind walk has listed pyright's sources (the files it answers about unopened).
        wait_until(lambda: _pyright(daemon)["prebind"] != "pending", timeout=120)
        before = _open_documents(daemon)
        answer = _until_expanded(daemon, root, "`shared`", "expanded:calls:shared")
        assert not answer["degraded"], answer["warnings"]
        callers = {s["name"] for s in answer["ranked_symbols"] if "expanded:calls:shared" in s["reasons"]}
        assert len(callers) >= 2, callers
        # Callers from every module and shared's own file, none of them opened for it.
        assert _open_documents(daemon) == before
        # A file outside pyright's sources is answered only opened, and is opened for it.
        tool = _until_expanded(daemon, root, "`Session`", "expanded:called_by:tool_main")
        assert "tool_main" in {s["name"] for s in tool["ranked_symbols"]}
