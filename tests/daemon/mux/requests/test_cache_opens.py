"""The daemon's own questions and the cache: saved files opened keep answers, identical questions asked once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from msgspec import Raw

from lensmux.adapters.registry import adapter_for
from lensmux.daemon.config import load_config
from lensmux.daemon.mux import server_routing
from lensmux.daemon.mux.documents.documents import INTERNAL_HOLDER
from lensmux.daemon.mux.instance import Instance, InstanceKey
from lensmux.daemon.wire.envelope import Envelope

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


async def test_an_identical_question_of_the_daemons_own_in_flight_is_asked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clangd = _instance(tmp_path, "clangd")
    clangd.warmup.busy = lambda: False  # type: ignore[method-assign]  # warm: answers are cached
    clangd.mark_ready()
    clangd.link = cast(Any, object())
    sent: list[dict[str, Any]] = []

    async def send(body: bytes) -> None:
        sent.append(json.loads(body))

    monkeypatch.setattr(clangd, "send_to_server", send)
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await clangd.request("textDocument/references", REFERENCES, timeout=10))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        group.start_soon(ask)
        with anyio.fail_after(5):
            while len(sent) < 1:
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        # Both wait on the one request the server got; its one answer serves both.
        assert len(sent) == 1
        await server_routing.from_server(clangd, Envelope(id=sent[0]["id"], result=Raw(b"[1]")))
    assert answers == [[1], [1]]
    assert _cached(clangd) == b"[1]"


async def test_a_client_opening_and_closing_a_saved_file_keeps_pyrights_answers(tmp_path: Path) -> None:
    """Agents open a file before each question and close it after: their answers stay shared."""
    pyright = _instance(tmp_path, "pyright")
    _cache_answer(pyright)
    epoch = pyright.cache.disk_epoch
    opened = {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}}
    await pyright.sync_documents(lambda: pyright.documents.open(7, opened, disk_text="x = 1\n", disk_epoch=epoch))
    assert _cached(pyright) == b"[1]"
    await pyright.sync_documents(lambda: pyright.documents.close(7, URI))
    assert _cached(pyright) == b"[1]"
    # A buffer that is not the saved file is another text for the server: answers go.
    unsaved = {"textDocument": {**opened["textDocument"], "text": "x = 2\n"}}
    await pyright.sync_documents(lambda: pyright.documents.open(7, unsaved, disk_text="x = 1\n", disk_epoch=epoch))
    assert _cached(pyright) is None
