"""`lensmux mcp` sees what editors see, shares their server, and indexes on first search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc
from support.lspclient import LspClient
from support.mcp_session import call, mcp_client, ok

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def test_unsaved_editor_change_is_seen_and_rename_preview_touches_nothing(
    daemon: DaemonProc, py_project: Path
) -> None:
    util = py_project / "demo/util.py"
    on_disk = util.read_bytes()
    async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
        await editor.initialize(py_project)
        uri = await editor.open(util, "python")
        added = "\n\ndef brand_new_helper() -> int:\n    return add(1, 1)\n"
        end = len(util.read_text().splitlines())
        await editor.change_incremental(
            uri, 2, {"start": {"line": end, "character": 0}, "end": {"line": end, "character": 0}}, added
        )
        async with mcp_client(daemon, py_project) as client:
            text, data = await ok(client, "document_symbols", file="demo/util.py")
            assert "brand_new_helper" in {s["name"] for s in data["symbols"]}
            assert data["unsaved_files"] == ["demo/util.py"]
            assert "unsaved" in text

            _, data = await ok(client, "rename_preview", symbol="add", new_name="plus")
            assert "+    return plus(1, 1)" in data["diff"]
            # One server process for the editor and the assistant.
            assert len(daemon.instances("pyright")) == 1
        # The editor's buffer was not edited: no applyEdit reached it, its text is still its own.
        assert not [m for m, _ in editor.server_requests if m == "workspace/applyEdit"]
    assert util.read_bytes() == on_disk


async def test_search_code_indexes_a_new_root_with_progress(daemon: DaemonProc, py_project: Path) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with mcp_client(daemon, py_project) as client:
        result = await client.call_tool(
            "search_code", {"query": "multiply a value by repeated addition"}, progress_callback=on_progress
        )
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, text
        data = result.structured_content
        assert data is not None
        assert seen, "no progress notification while the first index ran"
        hits = data["hits"]
        assert hits and {"path", "line", "end_line", "symbol", "kind", "score", "reasons"} <= set(hits[0])
        assert any(h["path"] == "demo/util.py" and h["symbol"].endswith("scale") for h in hits), text
        scale = next(h for h in hits if h["symbol"].endswith("scale"))
        assert scale["line"] == 5
        assert "demo/util.py:5" in text

        _, data = await ok(client, "search_code", query="scale", budget_tokens=500)
        assert "def scale" in data["context"]
        text, _, is_error = await call(client, "search_code", query="")
        assert is_error and "query" in text


async def test_sessions_autostart_one_daemon_and_share_one_server(tmp_path: Path, py_project: Path) -> None:
    import subprocess

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from support.daemon_proc import LENSMUX, wait_until

    config_home, state_home = tmp_path / "c", tmp_path / "s"
    (config_home / "lensmux").mkdir(parents=True)
    (config_home / "lensmux" / "config.toml").write_text("[daemon.http]\nenabled = false\n")
    runtime_dir = tmp_path / "r" / "lensmux"
    # Only what the client passes: the SDK's minimal environment plus the private config and state.
    env = {"XDG_CONFIG_HOME": str(config_home), "XDG_STATE_HOME": str(state_home)}
    argv = ["mcp", "--runtime-dir", str(runtime_dir), "--root", str(py_project)]

    refused = subprocess.run(
        [LENSMUX, *argv, "--no-autostart"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "no lensmux daemon" in refused.stderr

    params = StdioServerParameters(command=LENSMUX, args=argv, env=env, cwd=str(py_project))
    try:
        # Two sessions starting at once: each may start a daemon, one serves.
        async with Client(params, read_timeout_seconds=120) as a, Client(params, read_timeout_seconds=120) as b:
            _, data_a = await ok(a, "workspace_symbols", query="scale")
            _, data_b = await ok(b, "find_definition", symbol="add")
            assert data_a["symbols"] and data_b["locations"]
            status = subprocess.run(
                [LENSMUX, "status", "--json", "--runtime-dir", str(runtime_dir)], capture_output=True, text=True
            )
            assert status.returncode == 0, status.stderr
            assert len([i for i in json.loads(status.stdout)["instances"] if i["server"] == "pyright"]) == 1
    finally:
        stop = subprocess.run([LENSMUX, "stop", "--runtime-dir", str(runtime_dir)], capture_output=True, text=True)
    assert stop.returncode == 0, stop.stderr
    wait_until(lambda: not (runtime_dir / "lensmux.sock").exists(), what="sockets removed")
