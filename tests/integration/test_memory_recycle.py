"""A server past its memory limit is recycled while quiet; its clients keep their documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# One MiB: every real server is over it, so the daemon recycles pyright as soon as it may.
_TINY_LIMIT = """
[daemon.memory]
server_limit_mb = 1
check_interval = 0.2
min_uptime = 2
"""


def _names(symbols: list[dict[str, Any]]) -> set[str]:
    return {s["name"] for s in symbols} | {n for s in symbols for n in _names(s.get("children", []))}


async def test_bloated_server_is_recycled_and_keeps_unsaved_text(tmp_path: Path, py_project: Path) -> None:
    with running_daemon(tmp_path / "d", _TINY_LIMIT) as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(py_project)
            util = py_project / "demo" / "util.py"
            uri = await editor.open(util, "python")
            unsaved = util.read_text() + "\n\ndef only_in_the_buffer() -> int:\n    return 1\n"
            await editor.change_full(uri, unsaved, 2)

            (first,) = daemon.instances("pyright")
            assert first["memory_mb"] > 1  # measured over the whole process group

            def recycled_and_back() -> bool:
                (inst,) = daemon.instances("pyright")
                return bool(inst["recycles"] >= 1 and inst["pid"])

            wait_until(recycled_and_back, timeout=60, what="a recycle and a fresh process")
            (after,) = daemon.instances("pyright")
            # A planned restart: not counted as a crash, and a new process.
            assert after["restarts"] == 0
            assert after["pid"] != first["pid"]
            assert len(after["clients"]) == 1

            # The fresh process has the editor's unsaved text, replayed by the daemon.
            symbols = await editor.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
            assert "only_in_the_buffer" in _names(symbols)
            assert not util.read_text().count("only_in_the_buffer")
        assert "recycled:" in daemon.log_text()
