"""Which cancels reach a server: the adapter's list of methods whose cancel the server mishandles."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.instance import Instance, InstanceKey
from lensmux.daemon.mux.requests.cancel_shield import cancel_at_server

pytestmark = [pytest.mark.anyio]


def _instance(tmp_path: Path, server: str) -> Instance:
    config = load_config(tmp_path / "none.toml")
    cfg = config.servers[server]
    return Instance(InstanceKey(server, cfg.fingerprint(), tmp_path), cfg, adapter_for(cfg), config.daemon)


async def test_pyright_references_and_commands_are_never_cancelled_at_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pyright = _instance(tmp_path, "pyright")
    caplog.set_level("INFO")
    assert not await cancel_at_server(pyright, 7, "textDocument/references", "timed out after 60s")
    assert not await cancel_at_server(pyright, 8, "workspace/executeCommand", "cancelled by editor-1")
    # Explained in the log at info level, naming the request and why it was given up.
    assert "textDocument/references (server id 7) timed out after 60s; cancel withheld" in caplog.text
    # Everything else is cancelled as usual (best effort: this instance has no server running).
    assert await cancel_at_server(pyright, 9, "textDocument/hover", "cancelled by editor-1")


async def test_other_servers_get_every_cancel(tmp_path: Path) -> None:
    clangd = _instance(tmp_path, "clangd")
    assert await cancel_at_server(clangd, 7, "textDocument/references", "cancelled by editor-1")
