"""`lensmux index` through the daemon, with symbols from real pyright and clangd."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.daemon_proc import LENSMUX, DaemonProc, running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.slow]


def _index(daemon: DaemonProc, root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LENSMUX, "index", str(root), "--runtime-dir", str(daemon.runtime_dir), *extra],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def _root_status(daemon: DaemonProc, root: Path) -> dict[str, Any]:
    status: dict[str, Any] = daemon.call("lensmux/indexStatus", {"root": str(root)})
    return status


@pytest.mark.parametrize(("project", "server"), [("py_project", "pyright"), ("c_project", "clangd")])
def test_index_wait_json_gets_symbols_from_the_language_server(
    daemon: DaemonProc, project: str, server: str, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue(project)
    result = _index(daemon, root, "--wait", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["files"] >= 3 and summary["chunks"] >= 3 and summary["error"] is None
    # Symbols only come from documentSymbol, so a non-zero count proves the server answered.
    assert summary["symbols"] >= 3
    assert daemon.instances(server), "indexing should have started the server's instance"
    status = daemon.status()["index"]
    assert status["model"]["state"] == "ready"
    assert any(r["root"] == str(root.resolve()) and r["vectors"] == r["chunks"] for r in status["roots"])


def test_unchanged_files_are_skipped_and_a_changed_file_is_reindexed(daemon: DaemonProc, py_project: Path) -> None:
    assert _index(daemon, py_project, "--wait").returncode == 0
    first = _root_status(daemon, py_project)
    assert _index(daemon, py_project, "--wait").returncode == 0
    assert _root_status(daemon, py_project)["chunks"] == first["chunks"]
    (py_project / "demo" / "extra.py").write_text("def brand_new_function(x: int) -> int:\n    return x * 7\n")
    # The watcher picks the new file up without another `lensmux index`.
    wait_until(lambda: _root_status(daemon, py_project)["files"] == first["files"] + 1, timeout=60, what="watcher")
    wait_until(lambda: _root_status(daemon, py_project)["symbols"] > first["symbols"], timeout=60, what="symbols")


def test_elapsed_time_stops_when_indexing_ends(daemon: DaemonProc, py_project: Path) -> None:
    result = _index(daemon, py_project, "--wait", "--json")
    assert result.returncode == 0, result.stderr
    reported = json.loads(result.stdout)["seconds"]
    first = _root_status(daemon, py_project)
    assert not first["running"] and first["elapsed_s"] == reported
    time.sleep(1.5)  # long enough for a still-running clock to move by a reported digit
    assert _root_status(daemon, py_project)["elapsed_s"] == reported
    assert daemon.status()["index"]["roots"][0]["elapsed_s"] == reported


NEW_FUNCTION = (
    "\n\ndef reconcile_ledger_entries(entries: list[int]) -> int:\n"
    '    """Reconcile ledger entries against the bank statement."""\n'
    "    return sum(entries)\n"
)


def _names_found(daemon: DaemonProc, root: Path, query: str) -> list[str]:
    response = daemon.call("lensmux/hybridSearch", {"query": query, "root": str(root), "top_k": 5}, timeout=120)
    return [s["name"] for s in response["ranked_symbols"]]


@pytest.mark.anyio
async def test_an_unsaved_edit_becomes_searchable(daemon: DaemonProc, py_project: Path) -> None:
    assert _index(daemon, py_project, "--wait").returncode == 0
    path = py_project / "demo" / "util.py"
    on_disk = path.read_text()
    edited = on_disk + NEW_FUNCTION

    def found() -> list[str]:
        return _names_found(daemon, py_project, "reconcile ledger entries against the bank statement")

    assert "reconcile_ledger_entries" not in await anyio.to_thread.run_sync(found)
    async with LspClient.over_process(daemon.client_argv("pyright")) as editor:
        await editor.initialize(py_project)
        uri = await editor.open(path, "python")
        await editor.change_full(uri, edited, 2)  # typed, never saved
        with anyio.fail_after(120):
            while "reconcile_ledger_entries" not in await anyio.to_thread.run_sync(found):
                await anyio.sleep(0.1)
        assert path.read_text() == on_disk, "the text came from the editor's buffer, not the disk"


# The precondition, made rather than hoped for: with nothing learned ahead, the search's expansion
# asks pyright itself (its budget ample even on a loaded machine), and no learner closes what the
# search kept open when it pauses.
LIVE_EXPANSION = "[daemon.search]\nlearn_graph = false\nexpansion_budget = 60\n"


# Without the bind walk pyright's sources are not listed, so the search opens util.py at pyright and
# keeps it open; with it, the search asks about util.py unopened (daemon/search/gateway.py) and
# pyright learns of the write from the file events the daemon forwards.
@pytest.mark.parametrize(("prebind", "kept_open"), [("false", True), ("true", False)], ids=["opened", "unopened"])
def test_a_file_a_search_asked_about_is_reindexed_with_its_new_symbols(
    tmp_path: Path, py_project: Path, prebind: str, kept_open: bool
) -> None:
    config = LIVE_EXPANSION + f"\n[servers.pyright]\nprebind = {prebind}\n"
    with running_daemon(tmp_path / "d", config) as daemon:
        assert _index(daemon, py_project, "--wait").returncode == 0
        if not kept_open:
            # The walk lists pyright's sources once discovery and the index run are over.
            wait_until(
                lambda: daemon.instances("pyright")[0]["prebind"] != "pending", timeout=60, what="the walk's list"
            )
        # Expanding the answer asks pyright about util.py.
        assert "scale" in _names_found(daemon, py_project, "scale a value by a factor with repeated addition")
        left_open = any(i["open_documents"] for i in daemon.instances("pyright"))
        assert left_open == kept_open, f"the search left documents open: {left_open}, expected {kept_open}"
        path = py_project / "demo" / "util.py"
        path.write_text(path.read_text() + NEW_FUNCTION)  # no editor: only the watcher sees it
        query = "reconcile ledger entries against the bank statement"
        wait_until(
            lambda: "reconcile_ledger_entries" in _names_found(daemon, py_project, query), timeout=60, what="symbol"
        )


def test_bad_roots_get_a_clear_error(daemon: DaemonProc, tmp_path: Path) -> None:
    result = _index(daemon, tmp_path / "missing")
    assert result.returncode != 0 and "not a directory" in result.stderr


def _many_files(root: Path, count: int) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "many"\n')
    for i in range(count):
        (root / f"mod_{i}.py").write_text(
            f'def function_{i}(value: int) -> int:\n    """Compute thing number {i}."""\n    return value + {i}\n\n\n'
            f"class Thing{i}:\n    def method(self) -> int:\n        return function_{i}({i})\n"
        )
    return root


@pytest.mark.anyio
async def test_editor_requests_are_answered_while_a_root_is_indexing(daemon: DaemonProc, tmp_path: Path) -> None:
    root = _many_files(tmp_path / "many", 300)
    async with LspClient.over_process(daemon.client_argv("pyright")) as editor:
        await editor.initialize(root)
        uri = await editor.open(root / "mod_1.py", "python")
        daemon.call("lensmux/index", {"root": str(root)})
        answered_during_indexing = 0
        with anyio.fail_after(300):
            while _root_status(daemon, root)["running"]:
                before = _root_status(daemon, root)
                symbols = await editor.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
                assert {s["name"] for s in symbols} >= {"function_1", "Thing1"}
                after = _root_status(daemon, root)
                if before["state"] == "indexing" and after["state"] == "indexing":
                    answered_during_indexing += 1
                await editor.change_full(
                    uri,
                    (root / "mod_1.py").read_text() + f"\n# edit {answered_during_indexing}\n",
                    answered_during_indexing + 2,
                )
        assert answered_during_indexing >= 1
        assert _root_status(daemon, root)["files"] >= 300


def test_kill_9_of_the_daemon_mid_index_leaves_an_index_that_reopens(tmp_path: Path) -> None:
    root = _many_files(tmp_path / "many", 200)
    with running_daemon(tmp_path / "d1") as first:
        first.call("lensmux/index", {"root": str(root)})
        wait_until(lambda: _root_status(first, root)["chunks"] or 0, timeout=120, what="some chunks committed")
        os.kill(first.pid, signal.SIGKILL)
        first.proc.wait()
        env_state = first.env["XDG_STATE_HOME"]
    # A new daemon on the same state directory reopens the index and finishes it.
    with running_daemon(tmp_path / "d2", extra_env={"XDG_STATE_HOME": env_state}) as second:
        result = _index(second, root, "--wait", "--json")
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        assert summary["files"] == 201 and summary["error"] is None
        status = _root_status(second, root)
        assert status["vectors"] == status["chunks"] and status["pending_vectors"] == 0


@pytest.mark.parametrize(("cache_mb", "memo_entries"), [(512, 100_000), (0, 0)])
def test_a_copy_of_an_indexed_root_takes_its_vectors_from_the_users_cache(
    tmp_path: Path, py_project: Path, cache_mb: int, memo_entries: int
) -> None:
    """Issue 23, item 3: a re-clone's chunks are all cache hits and its token counts remembered;
    `vector_cache_mb = 0` and `token_memo_entries = 0` turn both off."""
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(py_project), str(copy)], check=True)
    settings = f"[daemon.index]\nvector_cache_mb = {cache_mb}\ntoken_memo_entries = {memo_entries}\n"
    with running_daemon(tmp_path / "d", settings) as daemon:
        assert _index(daemon, py_project, "--wait").returncode == 0
        before = daemon.status()["index"]["vector_cache"]
        memo_before = daemon.status()["index"]["token_memo"]
        assert _index(daemon, copy, "--wait").returncode == 0
        index = daemon.status()["index"]
        shown = daemon.run_cli("status").stdout
    chunks = _chunks_of(index, copy)
    assert chunks > 0
    memo = index["token_memo"]
    assert memo["limit"] == memo_entries and f"token counts remembered: {memo['entries']} of {memo_entries}" in shown
    if memo_entries:
        assert memo["hits"] > memo_before["hits"], "the copy's texts were counted before"
        assert memo["misses"] == memo_before["misses"], "and none of them went to the tokenizer again"
    else:
        assert memo["entries"] == memo["hits"] == 0
    assert index["caps"]["vector_cache_mb"] == cache_mb and f"vector_cache_mb {cache_mb}" in shown
    if cache_mb == 0:
        assert before is None and index["vector_cache"] is None
        return
    cache = index["vector_cache"]
    assert before["misses"] == _chunks_of(index, py_project) and before["hits"] == 0
    assert cache["hits"] - before["hits"] == chunks and cache["misses"] == before["misses"]
    assert "vector cache:" in shown


def _chunks_of(index: dict[str, Any], root: Path) -> int:
    [entry] = [r for r in index["roots"] if r["root"] == str(root.resolve())]
    assert entry["vectors"] == entry["chunks"]
    return int(entry["chunks"])
