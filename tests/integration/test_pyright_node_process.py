"""The daemon runs the PyPI pyright as one node process, without the Python entry point waiting on it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.daemon_proc import running_daemon, wait_until
from support.lspclient import LspClient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == pgid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


async def test_shared_pyright_is_one_node_process_and_answers(tmp_path: Path, py_project: Path) -> None:
    with running_daemon(tmp_path / "d") as daemon:
        async with LspClient.over_process(daemon.client_argv("pyright"), name="editor") as editor:
            await editor.initialize(py_project)
            uri = await editor.open(py_project / "demo" / "util.py", "python")
            symbols = await editor.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
            assert {"add", "scale"} <= {s["name"] for s in symbols}

            (inst,) = daemon.instances("pyright")
            # The server's pid is its process group (a session of its own): node alone in it,
            # no python entry point beside it.
            assert _group(inst["pid"]) == [inst["pid"]]
            assert Path(os.readlink(f"/proc/{inst['pid']}/exe")).name == "node"
            cmdline = Path(f"/proc/{inst['pid']}/cmdline").read_bytes().split(b"\0")
            assert cmdline[1].endswith(b"/pyright/dist/langserver.index.js")
            assert cmdline[2:4] == [b"--", b"--stdio"]
            # Its young generation capped (lsp-configs/pyright.toml): about 80 MiB less resident
            # with 8 agents and 2 editors on tornado (docs/benchmarks.md).
            environ = Path(f"/proc/{inst['pid']}/environ").read_bytes().split(b"\0")
            assert b"NODE_OPTIONS=--max-semi-space-size=16" in environ

            def sampled() -> bool:
                (now,) = daemon.instances("pyright")
                return bool(now["server_processes"])

            wait_until(sampled, timeout=30, what="the memory watch's first sample")
            (inst,) = daemon.instances("pyright")
            assert inst["server_processes"] == 1
