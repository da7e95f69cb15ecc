"""A search cut short by its expansion budget leaves pyright only the question it is working on.

pyright answers one request at a time. What a search gave up on while still queued at
pyright is cancelled there (pyright drops it unstarted), so the next question is not kept
waiting behind answers nobody waits for; the one pyright was answering finishes, for the cache.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.projects import add_session_calls, write_py_fanout_project

pytestmark = [pytest.mark.slow]

MODULES = 40


def test_a_search_cut_by_its_budget_leaves_pyright_one_question(tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    add_session_calls(root, MODULES, 5)
    # Far too short for pyright to answer the expansion's first level in one go.
    # Learning off: nothing but the searches asks pyright.
    config = "[daemon.search]\nexpansion_budget = 0.05\nlearn_graph = false\n"
    with running_daemon(tmp_path / "d", config) as daemon:
        done = daemon.run_cli("index", str(root), "--wait", "--json")
        assert done.returncode == 0, done.stderr
        # Answers computed while pyright still discovers the workspace are not cached at all:
        # other questions first, until the daemon has seen discovery end and the bind walk has
        # listed pyright's sources (it asks pyright too, one file at a time).
        for _ in range(60):
            daemon.call("lensmux/hybridSearch", {"query": "helper module", "root": str(root)}, timeout=120)
            if "cross-file answers are cached from now on" in daemon.log_text() and _walk(daemon) == "done":
                break
            time.sleep(0.5)
        assert _walk(daemon) == "done"
        wait_until(lambda: _in_flight(daemon) == 0, timeout=120)
        before = _cache(daemon)
        mark = len(daemon.log_text())
        params = {"query": "Session request", "root": str(root), "top_k": 5}
        first = daemon.call("lensmux/hybridSearch", params, timeout=120)
        assert any("budget" in w for w in first["warnings"]), first["warnings"]
        # The answer is sent after the search gave up on its questions: of those pyright could
        # drop (its references are never cancelled, cancel_shield.py), one is left to finish.
        given_up = daemon.log_text()[mark:].splitlines()
        left = [line for line in given_up if "left to finish for the cache" in line and "/references" not in line]
        cancelled = [line for line in given_up if "behind an older request; cancelled" in line]
        assert len(left) <= 1, left
        assert cancelled, given_up
        wait_until(lambda: _in_flight(daemon) == 0, timeout=120)
        after = _cache(daemon)
        # What pyright answered is kept for the next search that asks it.
        assert after[0] > before[0]


def _walk(daemon: DaemonProc) -> str | None:
    instances = daemon.instances("pyright")
    return instances[0].get("prebind") if instances else None


def _in_flight(daemon: DaemonProc) -> int:
    return sum(i["in_flight"] for i in daemon.instances("pyright"))


def _cache(daemon: DaemonProc) -> tuple[int, int]:
    """Entries in pyright's response cache, and the misses that asked the server."""
    [pyright] = daemon.instances("pyright")
    cache = pyright["cache"]
    return cache["entries"], sum(m["misses"] for m in cache["methods"].values())
