"""A search cut short by its expansion budget leaves the server's answers to the cache, so asking again is quick."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.projects import add_session_calls, write_py_fanout_project

pytestmark = [pytest.mark.slow]

MODULES = 40


def test_a_search_cut_by_its_budget_is_complete_when_asked_again(tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    add_session_calls(root, MODULES, 5)
    # Far too short for pyright to answer the expansion's first level in one go.
    # Learning off: this is about what the response cache keeps of a search cut short.
    config = "[daemon.search]\nexpansion_budget = 0.05\nlearn_graph = false\n"
    with running_daemon(tmp_path / "d", config) as daemon:
        done = daemon.run_cli("index", str(root), "--wait", "--json")
        assert done.returncode == 0, done.stderr
        # Answers computed while pyright still discovers the workspace are not cached at all:
        # other questions first, until the daemon has seen discovery end.
        for _ in range(60):
            daemon.call("lensmux/hybridSearch", {"query": "helper module", "root": str(root)}, timeout=120)
            if "cross-file answers are cached from now on" in daemon.log_text():
                break
            time.sleep(0.5)
        wait_until(lambda: all(i["in_flight"] == 0 for i in daemon.instances("pyright")), timeout=120)
        before = _cache(daemon)
        params = {"query": "Session request", "root": str(root), "top_k": 5}
        first = daemon.call("lensmux/hybridSearch", params, timeout=120)
        assert any("budget" in w for w in first["warnings"]), first["warnings"]
        wait_until(lambda: all(i["in_flight"] == 0 for i in daemon.instances("pyright")), timeout=120)
        after = _cache(daemon)
        # Every question the search had to ask pyright is remembered, those it gave up on included,
        # so the same search again is answered from the cache as far as the first one asked.
        assert after[0] - before[0] == after[1] - before[1] > 0


def _cache(daemon: DaemonProc) -> tuple[int, int]:
    """Entries in pyright's response cache, and the misses that asked the server."""
    [pyright] = daemon.instances("pyright")
    cache = pyright["cache"]
    return cache["entries"], sum(m["misses"] for m in cache["methods"].values())
