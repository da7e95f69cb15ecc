"""A daemon that only multiplexes, and the stdio bridge, import what they use and nothing more.

The search stack (numpy, networkx, python-louvain, hnswlib, onnxruntime, lensmux.graph) is
about half of an idle daemon's memory: it is imported on the first index or search request
(daemon/search/on_demand.py), never for editors alone. The bridge (`lensmux client`) only
splices bytes: once attached it is a bare interpreter (`python -I -S`) running the splice,
which imports the standard library alone. lsprotocol with cattrs (16.6 MiB of a 47 MiB daemon)
builds the capabilities the daemon declares, at build time: they are shipped built
(adapters/capabilities.json), so no daemon imports it. What each process imported comes from the real
commands, unchanged, through tests/support/module_probe (the names in sys.modules when the process exits).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from support.daemon_proc import DaemonProc, running_daemon
from support.lspclient import LspClient, path_uri

from lensmux.daemon.config import DaemonConfig

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROBE = Path(__file__).resolve().parents[1] / "support" / "module_probe"
SEARCH_STACK = (
    "numpy", "networkx", "community", "hnswlib", "onnxruntime", "lensmux.graph", "lensmux.daemon.search.indexing"
)  # fmt: skip
MESSAGE_TYPES = ("lsprotocol", "cattrs")
NOTHING_INDEXED: dict[str, object] = {
    "model": {"state": "not loaded", "progress": None, "query_adapter": "off"},
    "roots": [],
    "caps": DaemonConfig().index_caps(),
    "vector_cache": None,
    "symbol_cache": None,
    "token_memo": None,
}


def _probe_env(out: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": f"{PROBE}{os.pathsep}{path}" if path else str(PROBE), "LENSMUX_MODULES_OUT": str(out)}


def _imported(out: Path, pid: int) -> set[str]:
    """The modules process `pid` had imported when it exited."""
    return set((out.parent / f"{out.name}.{pid}").read_text().split())


def _among(imported: set[str], packages: Iterable[str]) -> list[str]:
    """The imported modules that are one of `packages` or inside one."""
    return sorted(m for m in imported if any(m == p or m.startswith(f"{p}.") for p in packages))


def _main_position(project: Path) -> dict[str, Any]:
    return {"textDocument": {"uri": path_uri(project / "demo/main.py")}, "position": {"line": 4, "character": 10}}


async def _hover(client: LspClient, project: Path) -> None:
    await client.initialize(project)
    await client.open(project / "demo/main.py", "python")
    assert await client.request("textDocument/hover", _main_position(project), timeout=120)


async def test_a_daemon_serving_editors_imports_neither_the_search_stack_nor_lsprotocol(
    tmp_path: Path, py_project: Path, c_project: Path
) -> None:
    out = tmp_path / "modules"
    with running_daemon(tmp_path / "d", extra_env=_probe_env(out)) as daemon:
        async with LspClient.over_unix(daemon.runtime_dir / "pyright.sock") as client:
            await _hover(client, py_project)
            await client.change_full(await client.open(py_project / "demo/util.py", "python"), "x = 1\n", 2)
        async with LspClient.over_unix(daemon.runtime_dir / "clangd.sock") as client:
            await client.initialize(c_project)
            uri = await client.open(c_project / "src/main.c", "c")
            position = {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 11}}
            assert await client.request("textDocument/hover", position, timeout=120)
        status = daemon.status()
        with pytest.raises(RuntimeError, match="is not indexed"):
            daemon.call("lensmux/indexStatus", {"root": str(py_project)})
        pid = daemon.pid
    imported = _imported(out, pid)
    assert "lensmux.daemon.mux.instance" in imported  # the probe saw the daemon at work
    assert _among(imported, SEARCH_STACK) == []
    assert _among(imported, MESSAGE_TYPES) == []
    assert status["index"] == NOTHING_INDEXED


async def test_the_first_search_request_imports_the_search_stack(tmp_path: Path) -> None:
    out = tmp_path / "modules"
    with running_daemon(tmp_path / "d", extra_env=_probe_env(out)) as daemon:
        assert daemon.status()["index"] == NOTHING_INDEXED
        with pytest.raises(RuntimeError, match="control error"):
            daemon.call("lensmux/hybridSearch", {"query": "where are numbers added", "root": str(tmp_path)})
        pid = daemon.pid
    assert {"numpy", "networkx", "hnswlib", "lensmux.daemon.search.indexing"} <= _imported(out, pid)


async def test_the_attached_bridge_is_a_bare_interpreter_running_the_splice_alone(
    daemon: DaemonProc, py_project: Path
) -> None:
    async with LspClient.over_process(daemon.client_argv("pyright")) as client:
        await _hover(client, py_project)
        pid = client.pid
        assert pid is not None
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        maps = Path(f"/proc/{pid}/maps").read_text()
        # Still answering through the same process, now the exec'd one (daemon/cli/connect/bridge.py).
        assert await client.request("textDocument/hover", _main_position(py_project), timeout=120)
    # -I -S: no site, so neither site-packages nor lensmux's package is on its path; it runs
    # splice.py (the standard library alone) as a module of its own. An event loop library
    # (asyncio imports ssl) was 10 of the bridge's 27 MiB; the console script's start 3 more.
    assert argv[1:4] == ["-I", "-S", "-c"]
    assert "import splice" in argv[4] and argv[5].endswith("/daemon/cli/connect")
    assert "site-packages" not in maps and "_ssl" not in maps and "_asyncio" not in maps
