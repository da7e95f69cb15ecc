"""An index written for another schema version is kept for the lensmux that reads it.

A downgrade used to delete a newer lensmux's index as stale, learned call graph and all.
Now the older lensmux moves it whole into `schema-<N>/` and builds its own; when the newer
lensmux runs again it takes its index back byte for byte and keeps the older one's in turn.
A kill in the middle of either move leaves files the next open puts right.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.sqlite import database
from lensmux.graph.index.sqlite.schema import SCHEMA_VERSION

pytestmark = pytest.mark.anyio

FILES = {
    "pkg/retry.py": (
        "def backoff(delay):\n    return delay * 2\n\n\n"
        "def send_with_retry(packet, attempts=3):\n"
        "    for n in range(attempts):\n        backoff(n)\n    return packet\n"
    ),
    "pkg/wire.py": "def frame(payload):\n    return len(payload).to_bytes(4, 'big') + payload\n",
}
NEWER = SCHEMA_VERSION + 1


def _indexer(tmp_path: Path) -> Indexer:
    return Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource())


def _digests(folder: Path) -> dict[str, str]:
    """sha256 of the database and every vector file in `folder`."""
    names = [p for p in folder.iterdir() if p.name == "index.sqlite" or p.name.startswith("vectors-")]
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in names}


def _stamp_schema(db: Path, version: int) -> None:
    """Make the file say what a lensmux of `version` would have written."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    conn.close()


async def _build_with_learned(tmp_path: Path) -> tuple[object, tuple[int, int], int]:
    """Index the repo and learn one relation; (counts, learned counts, the learned symbol)."""
    write_files(tmp_path / "repo", FILES)
    async with _indexer(tmp_path) as ix:
        await ix.index_all()
        symbols = sorted(ix.store.unlearned_symbols(0, 10))
        assert len(symbols) >= 2
        assert ix.store.remember_learned({symbols[0]: [("callee", symbols[1])]}, ix.store.generation) == 1
        return ix.store.counts(), ix.store.learned_counts(), symbols[0]


async def test_a_newer_schemas_index_survives_a_downgrade_and_is_taken_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts, learned, subject = await _build_with_learned(tmp_path)
    state = tmp_path / "state"
    _stamp_schema(state / "index.sqlite", NEWER)
    newer_files = _digests(state)
    assert any(name.startswith("vectors-") for name in newer_files)

    # This lensmux is older than the file: it must keep it, and work on an index of its own.
    async with _indexer(tmp_path) as ix:
        assert ix.store.counts().files == 0
        note = ix.status().progress.last_error or ""
        assert f"schema {NEWER}" in note and f"schema-{NEWER}" in note
        await ix.index_all()
        assert ix.store.counts() == counts
        assert ix.store.learned_counts()[0] == 0
    assert _digests(state / f"schema-{NEWER}") == newer_files

    # The newer lensmux comes back: its own index, learned relation included, not a rebuild.
    monkeypatch.setattr(database, "SCHEMA_VERSION", NEWER)
    async with _indexer(tmp_path) as ix:
        assert ix.store.counts() == counts
        assert ix.pending_vectors == 0
        assert ix.store.learned_counts() == learned
        assert subject in ix.store.recall_learned([subject])
        assert "took back" in (ix.status().progress.last_error or "")
    assert not (state / f"schema-{NEWER}").exists()
    assert (state / f"schema-{SCHEMA_VERSION}" / "index.sqlite").is_file(), "the older one's index is kept in turn"


async def test_a_kill_while_setting_aside_is_undone_on_the_next_open(tmp_path: Path) -> None:
    counts, learned, _ = await _build_with_learned(tmp_path)
    state = tmp_path / "state"
    # Killed after the vector file moved into the staging folder, before the database did.
    staging = state / f"schema-{NEWER}.partial"
    staging.mkdir()
    for vector_file in state.glob("vectors-*.hnsw"):
        os.replace(vector_file, staging / vector_file.name)

    async with _indexer(tmp_path) as ix:
        assert ix.store.counts() == counts
        assert ix.pending_vectors == 0, "the vector file came back, nothing to embed again"
        assert ix.store.learned_counts() == learned
    assert not staging.exists()


async def test_a_kill_while_taking_back_is_finished_on_the_next_open(tmp_path: Path) -> None:
    counts, learned, _ = await _build_with_learned(tmp_path)
    state = tmp_path / "state"
    # Killed after the kept folder was renamed, with only the vector file moved out of it.
    restoring = state / "restoring"
    restoring.mkdir()
    for path in state.iterdir():
        if path.name.startswith("index.sqlite"):
            os.replace(path, restoring / path.name)

    async with _indexer(tmp_path) as ix:
        assert ix.store.counts() == counts
        assert ix.pending_vectors == 0
        assert ix.store.learned_counts() == learned
    assert not restoring.exists()
