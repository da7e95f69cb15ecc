"""The daemon learns an indexed root's call graph from pyright while nobody is typing; searches then read it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import DaemonProc, running_daemon, wait_until
from support.lspclient import initialized_clients
from support.projects import add_session_calls, write_py_fanout_project

pytestmark = [pytest.mark.slow]

MODULES = 6


def _graph(daemon: DaemonProc) -> dict[str, Any]:
    [root] = daemon.status()["index"]["roots"]
    graph: dict[str, Any] = root["graph"]
    return graph


def _open_at_pyright(daemon: DaemonProc) -> int:
    [pyright] = daemon.instances("pyright")
    return int(pyright["open_documents"])


def _asked(daemon: DaemonProc) -> int:
    """Call-hierarchy lookups at pyright's response cache: every one the daemon made, hit or miss."""
    [pyright] = daemon.instances("pyright")
    methods = pyright["cache"]["methods"]
    return sum(m["hits"] + m["misses"] for name, m in methods.items() if "allHierarchy" in name)


def test_a_quiet_daemon_learns_the_call_graph_and_searches_ask_pyright_nothing(tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    add_session_calls(root, MODULES, 2)
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_quiet = 0.5\n") as daemon:
        done = daemon.run_cli("index", str(root), "--wait", "--json")
        assert done.returncode == 0, done.stderr
        wait_until(lambda: _graph(daemon).get("state") == "up to date", timeout=300)
        # What learning opened at pyright is closed once it pauses: pyright re-checks open
        # files, so an editor alone on it would otherwise pay for them after every edit.
        wait_until(lambda: _open_at_pyright(daemon) == 0, timeout=30, what="learning's documents closed")
        graph = _graph(daemon)
        status = daemon.run_cli("status")
        asked = _asked(daemon)
        params = {"query": "Session request", "root": str(root), "top_k": 10}
        result = daemon.call("lensmux/hybridSearch", params, timeout=120)
        asked_after = _asked(daemon)
    assert graph["learned"] == graph["learnable"] > 0, graph
    assert f"call graph: {graph['learned']}/{graph['learnable']} symbols learned (up to date)" in status.stdout
    assert not result["degraded"], result["warnings"]
    callers = [s for s in result["ranked_symbols"] if any(r.startswith("expanded:calls:") for r in s["reasons"])]
    assert callers, "Session.request's callers joined from the learned graph"
    assert asked > 0, "the learner asked pyright for the call hierarchy"
    assert asked_after == asked, "the search was answered without asking pyright"


async def _nothing_learned_then_everything(daemon: DaemonProc, during: list[dict[str, Any]], why: str) -> None:
    """Nothing was learned while the work went on, and status said `why`; the daemon, quiet now, learns it all."""
    await anyio.to_thread.run_sync(lambda: wait_until(lambda: _graph(daemon).get("state") == "up to date", 300))
    graph = _graph(daemon)
    learned = [sample.get("learned", 0) for sample in during]
    assert learned and max(learned) == 0, learned
    assert during[-1]["state"] == f"waiting for quiet: {why} (pyright)", during[-1]
    assert graph["learned"] == graph["learnable"] > 0


async def _learned_during(
    daemon: DaemonProc, root: Path, work: Callable[[anyio.Event], Coroutine[Any, Any, None]]
) -> list[dict[str, Any]]:
    """Index `root` while `work` goes on, then read the graph's status every 0.5 s for 8 s; `work` ends after."""
    stop = anyio.Event()
    samples: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(work, stop)
        done = await anyio.to_thread.run_sync(lambda: daemon.run_cli("index", str(root), "--wait"))
        assert done.returncode == 0, done.stderr
        for _ in range(16):
            await anyio.sleep(0.5)
            # In a thread, so that the work goes on while the daemon answers.
            samples.append(await anyio.to_thread.run_sync(_graph, daemon))
        stop.set()
    return samples


@pytest.mark.anyio
async def test_learning_waits_while_an_editor_is_typing(tmp_path: Path) -> None:
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    core = root / "pkg/core.py"
    text = core.read_text()
    # The editor types every 0.5 s, far more often than the 3 s of quiet learning needs.
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_quiet = 3\n") as daemon:
        async with initialized_clients(daemon.client_argv("pyright"), root, "typist") as (typist,):
            uri = await typist.open(core, "python", text)

            async def type_until(stop: anyio.Event) -> None:
                version = 1
                while not stop.is_set():
                    version += 1
                    await typist.change_full(uri, f"{text}\n# edit {version}\n", version)
                    await anyio.sleep(0.5)

            while_typing = await _learned_during(daemon, root, type_until)
        # The editor has left: the daemon is quiet now and learns the whole graph.
        await _nothing_learned_then_everything(daemon, while_typing, "a client spoke")


@pytest.mark.anyio
async def test_learning_waits_while_an_agent_writes_files_on_disk(tmp_path: Path) -> None:
    """An agent that edits with its own file tools speaks to no server; its writes count as typing.

    pyright reads no message while it answers one: a learning request it is working on when the
    agent writes a file holds that file's re-index until it is answered (seconds at 100k lines).
    """
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    scratch = anyio.Path(root / "pkg/scratch.py")

    async def write_until(stop: anyio.Event) -> None:
        number = 0
        while not stop.is_set():
            number += 1
            await scratch.write_text(f"def step_{number}(v: int) -> int:\n    return v + {number}\n")
            await anyio.sleep(0.5)

    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_quiet = 3\n") as daemon:
        while_writing = await _learned_during(daemon, root, write_until)
        # The agent has stopped writing: the daemon is quiet now and learns the whole graph.
        await _nothing_learned_then_everything(daemon, while_writing, "source files changing on disk")


@pytest.mark.anyio
async def test_a_log_a_tool_keeps_writing_does_not_hold_learning_back(tmp_path: Path) -> None:
    """Only source files of a server's languages count: a dev server's log is no one at work."""
    root = write_py_fanout_project(tmp_path / "fan", MODULES)
    log_file = root / "server.log"
    with running_daemon(tmp_path / "d", "[daemon.search]\nlearn_quiet = 1\n") as daemon:
        writing = anyio.Event()
        graph: dict[str, Any] = {}

        async def append_until_told() -> None:
            async with await anyio.open_file(log_file, "a") as out:
                while not writing.is_set():
                    await out.write("GET / 200\n")
                    await out.flush()
                    await anyio.sleep(0.2)

        async with anyio.create_task_group() as tg:
            tg.start_soon(append_until_told)
            done = await anyio.to_thread.run_sync(lambda: daemon.run_cli("index", str(root), "--wait"))
            assert done.returncode == 0, done.stderr
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: _graph(daemon).get("state") == "up to date", 120))
            graph = await anyio.to_thread.run_sync(_graph, daemon)
            writing.set()
    assert graph["learned"] == graph["learnable"] > 0
