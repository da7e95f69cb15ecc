"""Learning and the bind walk on one pyright: one request of the daemon's own in flight at a time (issue 21).

Both ask pyright in quiet moments for no one; each sends one request at a time, and together they
hold the instance's own-request slot (daemon/mux/requests/own_slot.py), so a client's question
waits behind one of them at most. The daemon logs, at each such send, how many of them are in
flight at the server; that is what is read here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import initialized_clients
from support.projects import write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Modules and functions per module of a call chain: every function is named in another module,
# so the learner asks pyright about each (a function nobody names has no callers to ask about).
CHAIN, PER_MODULE = 10, 6
# Files of the folder the editor adds: the walk binds them, the index run never asks about them.
WALKED = 300
SENT = re.compile(r"own background request (\S+) sent; (\d+) in flight")


def _chain_project(root: Path) -> Path:
    files = {"pyproject.toml": '[project]\nname = "chain"\nversion = "0.1"\n', "chain/__init__.py": ""}
    for i in range(CHAIN):
        after = (i + 1) % CHAIN
        body = f"from chain import c{after} as nxt\n"
        for j in range(PER_MODULE):
            body += f"\n\ndef f{i}_{j}(x: int) -> int:\n    return nxt.f{after}_{j}(x) + 1\n"
        files[f"chain/c{i}.py"] = body
    return write_files(root, files)


def _graph(daemon: DaemonProc) -> dict[str, Any]:
    [root] = daemon.status()["index"]["roots"]
    graph: dict[str, Any] = root["graph"]
    return graph


def _walk_state(daemon: DaemonProc) -> str | None:
    [pyright] = daemon.instances("pyright")
    state = pyright.get("prebind")
    return state if isinstance(state, str) else None


async def test_learning_and_the_walk_never_have_two_requests_in_flight_at_once(tmp_path: Path) -> None:
    root = _chain_project(tmp_path / "proj")
    extra = write_files(
        tmp_path / "extra", {f"w{n:03}.py": f"def w{n}(x: int) -> int:\n    return x + {n}\n" for n in range(WALKED)}
    )
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_quiet = 0.3\n") as daemon:
        async with initialized_clients(daemon.client_argv("pyright"), root, "editor") as (editor,):
            wait_until(lambda: _walk_state(daemon) == "done", timeout=120, what="bind walk of the root done")
            done = await anyio.to_thread.run_sync(lambda: daemon.run_cli("index", str(root), "--wait", "--json"))
            assert done.returncode == 0, done.stderr
            # Learning has just begun, or is about to: the folder makes the walk due on the same
            # instance, and both go on at the next quiet moment.
            folder = {"uri": extra.as_uri(), "name": extra.name}
            await editor.notify("workspace/didChangeWorkspaceFolders", {"event": {"added": [folder], "removed": []}})
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: _graph(daemon).get("state") == "up to date", timeout=300, what="learned")
            )
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: _walk_state(daemon) == "done", timeout=300, what="bind walk done")
            )
        sends = [(m.group(1), int(m.group(2))) for m in SENT.finditer(daemon.log_text())]
    walk = [i for i, (method, _) in enumerate(sends) if method == "textDocument/documentSymbol"]
    learning = [i for i, (method, _) in enumerate(sends) if method != "textDocument/documentSymbol"]
    # Both were due on the one instance at once: learning asked between the walk's first and last file.
    assert len(walk) > WALKED and learning, sends
    assert any(walk[0] < i < walk[-1] for i in learning), "learning ran while the walk was still going"
    assert max(count for _, count in sends) == 1, [s for s in sends if s[1] > 1]
