"""The daemon's own opens of saved files keep cached answers where the server reads unopened files from disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux.documents import INTERNAL_HOLDER
from lensmux.daemon.mux.instance import Instance, InstanceKey

pytestmark = [pytest.mark.anyio]

URI = "file:///w/pkg/a.py"
REFERENCES = {"textDocument": {"uri": "file:///w/pkg/b.py"}, "position": {"line": 1, "character": 4}}


def _instance(tmp_path: Path, server: str) -> Instance:
    config = load_config(tmp_path / "none.toml")
    cfg = config.servers[server]
    return Instance(InstanceKey(server, cfg.fingerprint(), tmp_path), cfg, adapter_for(cfg), config.daemon)


def _cached(inst: Instance) -> bytes | None:
    key = inst.cache.key_for("textDocument/references", REFERENCES)
    assert key is not None
    return inst.cache.get(key)


def _cache_answer(inst: Instance) -> None:
    key = inst.cache.key_for("textDocument/references", REFERENCES)
    assert key is not None
    inst.cache.put(key, b"[1]", inst.cache.generation_for(key))


async def test_opening_and_closing_a_saved_file_keeps_pyrights_cross_file_answers(tmp_path: Path) -> None:
    pyright = _instance(tmp_path, "pyright")
    _cache_answer(pyright)
    epoch = pyright.cache.disk_epoch
    await pyright.sync_documents(lambda: pyright.documents.open_internal(URI, "python", "x = 1\n", disk_epoch=epoch))
    assert _cached(pyright) == b"[1]"
    await pyright.sync_documents(lambda: pyright.documents.close(INTERNAL_HOLDER, URI))
    assert _cached(pyright) == b"[1]"


async def test_text_that_is_not_the_saved_file_invalidates(tmp_path: Path) -> None:
    pyright = _instance(tmp_path, "pyright")
    _cache_answer(pyright)
    # Opened with text that did not come from disk (an unsaved buffer handed to the search).
    await pyright.sync_documents(lambda: pyright.documents.open_internal(URI, "python", "x = 2\n"))
    assert _cached(pyright) is None
    _cache_answer(pyright)
    # Opened from disk, then the file changed on disk: closing it changes what the server sees.
    other = "file:///w/pkg/c.py"
    epoch = pyright.cache.disk_epoch
    await pyright.sync_documents(lambda: pyright.documents.open_internal(other, "python", "y\n", disk_epoch=epoch))
    pyright.cache.workspace_changed()
    _cache_answer(pyright)
    await pyright.sync_documents(lambda: pyright.documents.close(INTERNAL_HOLDER, other))
    assert _cached(pyright) is None


async def test_an_open_file_joins_clangds_index_so_its_answers_go(tmp_path: Path) -> None:
    clangd = _instance(tmp_path, "clangd")
    _cache_answer(clangd)
    epoch = clangd.cache.disk_epoch
    await clangd.sync_documents(lambda: clangd.documents.open_internal(URI, "c", "int x;\n", disk_epoch=epoch))
    assert _cached(clangd) is None
