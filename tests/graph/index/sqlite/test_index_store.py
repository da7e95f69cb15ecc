"""The SQLite store: keyword search, symbol and file lookups, recovery from bad files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from index_fakes import DIM, FakeEmbedder, FakeSymbolSource
from support.projects import write_files

from lensmux.graph.index import Indexer, IndexLocked, RootNotIndexed, Store, default_store_dir

pytestmark = pytest.mark.anyio

UPLOAD = '''"""Uploading with retries."""
import time


class Uploader:
    """Sends blobs to the server."""

    def send(self, blob: bytes) -> None:
        self.backoff_send(blob)

    def backoff_send(self, blob: bytes) -> None:
        pass


def backoff_send(data: bytes, retries: int = 3) -> bool:
    """Send data, sleeping longer after each failure."""
    for attempt in range(retries):
        time.sleep(2 ** attempt)
    return True


def retry_upload(data: bytes) -> bool:
    # a caller: mentions backoff_send but is not it
    return backoff_send(data)
'''

FILES = {
    "src/pkg/upload.py": UPLOAD,
    "src/pkg/network.py": (
        "def send(packet):\n    return packet\n\n\ndef backoff(delay):\n    return delay * 2\n\n\n"
        "def send_all(packets):\n    for p in packets:\n        send(p)\n"
    ),
    "docs/retry.md": "# Retry policy\n\nWe use backoff. Backoff doubles. The backoff is capped.\n",
    "web/client.js": "function backoffSend(req) {\n  return fetch(req);\n}\n",
}


@pytest.fixture
async def indexer(tmp_path: Path) -> AsyncIterator[Indexer]:
    write_files(tmp_path / "repo", FILES)
    ix = Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource())
    async with ix:
        await ix.index_all()
        yield ix


async def test_keyword_search_ranks_the_definitions_first(indexer: Indexer) -> None:
    results = indexer.store.keyword_search("backoff send", 10)
    chunks = [c for cid, _ in results if (c := indexer.store.chunk(cid)) is not None]
    top_two = {(c.path, c.kind, c.name) for c in chunks[:2]}
    assert top_two == {
        ("src/pkg/upload.py", "function", "backoff_send"),
        ("src/pkg/upload.py", "method", "Uploader.backoff_send"),
    }, "both definitions outrank callers, docs and the separate `send`/`backoff` functions"
    assert all("def backoff_send(" in c.code for c in chunks[:2])
    assert {c.name for c in chunks[2:]} >= {"retry_upload", "Uploader.send"}
    scores = [score for _, score in results]
    assert scores == sorted(scores, reverse=True)


async def test_keyword_search_matches_across_naming_styles(indexer: Indexer) -> None:
    for query in ("backoffSend", "backoff_send", "BACKOFF SEND"):
        paths = {c.path for cid, _ in indexer.store.keyword_search(query, 20) if (c := indexer.store.chunk(cid))}
        assert {"web/client.js", "src/pkg/upload.py"} <= paths, query
    assert indexer.store.keyword_search('"; DROP TABLE chunks; --', 5) == []
    assert indexer.store.keyword_search("", 5) == []


async def test_lookup_symbols_exact_case_insensitive_and_qualified_suffix(indexer: Indexer) -> None:
    store = indexer.store
    exact = store.lookup_symbols("backoff_send")
    assert [s.qualified_name for s in exact] == ["backoff_send", "Uploader.backoff_send"]
    assert [s.qualified_name for s in store.lookup_symbols("BACKOFF_SEND")] == [
        "backoff_send",
        "Uploader.backoff_send",
    ], "a whole qualified name matching outranks a short name matching"
    assert [s.qualified_name for s in store.lookup_symbols("Uploader.send")] == ["Uploader.send"]
    assert [s.qualified_name for s in store.lookup_symbols("uploader::SEND")] == ["Uploader.send"]
    assert {(s.path, s.kind) for s in store.lookup_symbols("send")} == {
        ("src/pkg/upload.py", "method"),
        ("src/pkg/network.py", "function"),
    }
    assert store.lookup_symbols("nothing_like_this") == []


async def test_files_symbols_chunks_and_enclosing_symbol(indexer: Indexer) -> None:
    store = indexer.store
    assert [f.path for f in store.files_matching("UPLOAD")] == ["src/pkg/upload.py"]
    assert [f.path for f in store.files_matching("/src/pkg/")] == ["src/pkg/upload.py", "src/pkg/network.py"]
    assert [f.path for f in store.files_matching("network.py")] == ["src/pkg/network.py"]
    names = [s.qualified_name for s in store.symbols_in_file("src/pkg/upload.py")]
    assert names == ["Uploader", "Uploader.send", "Uploader.backoff_send", "backoff_send", "retry_upload"]

    inside_method = store.enclosing_symbol("src/pkg/upload.py", 8)
    assert inside_method is not None and inside_method.qualified_name == "Uploader.send"
    in_class_body = store.enclosing_symbol(indexer.root / "src/pkg/upload.py", 5)
    assert in_class_body is not None and in_class_body.qualified_name == "Uploader"
    assert store.enclosing_symbol("src/pkg/upload.py", 1) is None
    only_classes = store.enclosing_symbol("src/pkg/upload.py", 8, kinds=["class"])
    assert only_classes is not None and only_classes.qualified_name == "Uploader"

    symbol = store.symbol(inside_method.id)
    assert symbol == inside_method
    parent = store.symbol(inside_method.parent_id or -1)
    assert parent is not None and parent.qualified_name == "Uploader"
    (chunk,) = store.chunks_for_symbol(inside_method.id)
    assert store.chunk(chunk.id) == chunk
    assert (chunk.start_line, chunk.end_line) == (7, 8)
    assert store.chunk(10**9) is None
    hits = [cid for cid, _ in store.keyword_search("backoff send", 5)]
    assert [c.id for c in store.chunks([*hits, 10**9, hits[0]])] == hits


def test_corrupt_database_is_moved_aside_and_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "index.sqlite").write_bytes(b"this is not a database" * 200)
    store = Store.open(state, tmp_path, model_id="m", dim=DIM)
    try:
        assert store.recovery_note is not None and "corrupt" in store.recovery_note
        assert store.counts().files == 0
        assert store.keyword_search("anything", 5) == []
    finally:
        store.close()
    aside = list(state.glob("index.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")


def test_other_model_or_dimension_starts_a_fresh_index(tmp_path: Path) -> None:
    state = tmp_path / "state"
    Store.open(state, tmp_path, model_id="model-a", dim=DIM).close()
    store = Store.open(state, tmp_path, model_id="model-b", dim=DIM)
    try:
        assert store.recovery_note is not None and "model_id" in store.recovery_note
        assert store.meta()["model_id"] == "model-b"
    finally:
        store.close()
    assert not list(state.glob("*.corrupt-*")), "a stale index is not corrupt; it is just replaced"


def test_second_opener_is_refused_and_missing_index_is_reported(tmp_path: Path) -> None:
    with pytest.raises(RootNotIndexed):
        Store.open(tmp_path / "state", tmp_path, model_id="m", dim=DIM, create=False)
    store = Store.open(tmp_path / "state", tmp_path, model_id="m", dim=DIM)
    try:
        with pytest.raises(IndexLocked):
            Store.open(tmp_path / "state", tmp_path, model_id="m", dim=DIM)
    finally:
        store.close()
    Store.open(tmp_path / "state", tmp_path, model_id="m", dim=DIM, create=False).close()


def test_default_location_follows_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "My Project"
    root.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    where = default_store_dir(root)
    assert where.parent == tmp_path / "xdg" / "lensmux" / "roots"
    assert where.name.startswith("My_Project-") and len(where.name) == len("My_Project-") + 12
    assert default_store_dir(root / ".." / "My Project") == where, "one root, one index"
    assert default_store_dir(tmp_path) != where
    monkeypatch.setenv("XDG_STATE_HOME", "relative/not/allowed")
    assert default_store_dir(root).parent == Path.home() / ".local" / "state" / "lensmux" / "roots"
