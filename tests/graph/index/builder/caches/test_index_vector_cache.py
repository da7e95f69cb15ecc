"""The user's content-addressed vector cache: keyed by model and text, bounded, never a failed run."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy
import pytest
from index_fakes import DIM, FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.builder.caches.vector_cache import ROW_OVERHEAD, VectorCache, text_digest


def _vectors(texts: list[str]) -> dict[str, numpy.ndarray]:
    return dict(zip(texts, FakeEmbedder().embed(texts), strict=True))


def test_vectors_come_back_for_their_model_and_text_only(tmp_path: Path) -> None:
    cache = VectorCache.open(tmp_path / "cache.sqlite")
    try:
        made = _vectors(["alpha", "beta"])
        cache.put("model-a", made)
        got = cache.get("model-a", ["alpha", "beta", "gamma"], DIM)
        assert set(got) == {"alpha", "beta"}
        assert all(numpy.array_equal(got[t], made[t]) for t in got)
        assert cache.get("model-b", ["alpha"], DIM) == {}, "another model's vectors never answer"
        assert cache.get("model-a", ["alpha"], DIM * 2) == {}, "nor vectors of another dimension"
        stats = cache.stats()
        assert (stats.hits, stats.entries) == (2, 2)
    finally:
        cache.close()


def test_the_cache_keeps_to_its_bound_and_evicts_the_least_recently_used(tmp_path: Path) -> None:
    row = DIM * 4 + ROW_OVERHEAD
    cache = VectorCache.open(tmp_path / "cache.sqlite", max_bytes=10 * row)
    try:
        cache.put("m", _vectors([f"t{i}" for i in range(8)]))
        assert cache.get("m", ["t0"], DIM), "t0 is used again, so it is the most recent"
        cache.put("m", _vectors([f"u{i}" for i in range(4)]))
        stats = cache.stats()
        assert stats.bytes <= 10 * row
        assert stats.evicted == 3, "down to 90% of the bound: 9 of the 12 rows"
        kept = set(cache.get("m", [*(f"t{i}" for i in range(8)), *(f"u{i}" for i in range(4))], DIM))
        assert {"t0", "u0", "u1", "u2", "u3"} <= kept, "the used again and the newest stay"
        assert len(kept) == 9
    finally:
        cache.close()


def test_a_corrupt_cache_is_logged_and_started_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database" * 500)
    with caplog.at_level(logging.ERROR):
        cache = VectorCache.open(path)
    try:
        assert "corrupt" in caplog.text
        cache.put("m", _vectors(["alpha"]))
        assert set(cache.get("m", ["alpha"], DIM)) == {"alpha"}
        assert cache.stats().rebuilt == 1
    finally:
        cache.close()


@pytest.mark.anyio
async def test_an_index_run_does_not_fail_when_the_cache_file_goes_bad(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": module_text(i) for i in range(6)}
    path = tmp_path / "cache.sqlite"
    cache = VectorCache.open(path)
    async with Indexer(
        write_files(tmp_path / "one", files), tmp_path / "s1", FakeEmbedder(), FakeSymbolSource(), vector_cache=cache
    ) as ix:
        await ix.index_all()
    cache.close()
    # Every page but the first (the header and schema) overwritten: SQLite finds out on the first read.
    with path.open("r+b") as fh:
        size = fh.seek(0, 2)
        fh.seek(4096)
        fh.write(b"\xff" * (size - 4096))
    cache = VectorCache.open(path)
    try:
        embedder = FakeEmbedder()
        async with Indexer(
            write_files(tmp_path / "two", files), tmp_path / "s2", embedder, FakeSymbolSource(), vector_cache=cache
        ) as ix:
            snapshot = await ix.index_all()
            assert snapshot.state == "ready"
            assert len(ix.vectors) == ix.store.counts().chunks > 0
        assert embedder.texts, "what the cache could not give, the model made"
        assert cache.stats().rebuilt == 1
    finally:
        cache.close()


@pytest.mark.anyio
async def test_a_second_root_with_the_same_files_embeds_nothing(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": module_text(i) for i in range(6)}
    cache = VectorCache.open(tmp_path / "cache.sqlite")
    try:
        first, second = FakeEmbedder(), FakeEmbedder()
        for name, embedder in (("one", first), ("two", second)):
            root = write_files(tmp_path / name, files)
            async with Indexer(
                root, tmp_path / f"state-{name}", embedder, FakeSymbolSource(), vector_cache=cache
            ) as ix:
                await ix.index_all()
                assert len(ix.vectors) == ix.store.counts().chunks > 0
        assert first.texts and second.texts == []
    finally:
        cache.close()


def _model_sized(count: int, seed: int = 0) -> dict[str, numpy.ndarray]:
    """Vectors of the default model's width (384 float32), the size the page layout is made for."""
    rng = numpy.random.default_rng(seed)
    return {f"chunk text {seed}-{i}": rng.standard_normal(384).astype(numpy.float32) for i in range(count)}


def test_the_bytes_the_cache_counts_are_the_bytes_it_takes_on_disk(tmp_path: Path) -> None:
    """Its bound is in bytes on disk: a WITHOUT ROWID table took 4.7 KiB a 1.5 KiB vector (overflow pages)."""
    path = tmp_path / "cache.sqlite"
    cache = VectorCache.open(path)
    try:
        for part in range(4):
            cache.put("m", _model_sized(500, part))
        counted = cache.stats().bytes
    finally:
        cache.close()
    on_disk = sum(p.stat().st_size for p in tmp_path.glob("cache.sqlite*"))
    assert counted == 2000 * (384 * 4 + ROW_OVERHEAD)
    assert on_disk <= 1.1 * counted, f"{on_disk} B on disk for {counted} B counted"


# The cache's first layout (graph/index/builder/caches/vector_cache.py before issue 23's disk work).
_WITHOUT_ROWID_DDL = """
CREATE TABLE models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE vectors (
    model INTEGER NOT NULL, digest BLOB NOT NULL, vector BLOB NOT NULL, used INTEGER NOT NULL,
    PRIMARY KEY (model, digest)
) WITHOUT ROWID;
CREATE INDEX vectors_by_use ON vectors(used);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta(key, value) VALUES ('bytes', 0), ('clock', 0);
"""


def test_a_cache_of_the_first_layout_is_converted_keeping_every_vector(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    made = _model_sized(300)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(_WITHOUT_ROWID_DDL)
    conn.execute("INSERT INTO models(id, name) VALUES (1, 'm')")
    conn.executemany(
        "INSERT INTO vectors(model, digest, vector, used) VALUES (1, ?, ?, ?)",
        [(text_digest(t), v.tobytes(), i) for i, (t, v) in enumerate(made.items())],
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'bytes'", (300 * (384 * 4 + 64),))
    conn.execute("UPDATE meta SET value = 300 WHERE key = 'clock'")
    conn.close()
    before = path.stat().st_size

    cache = VectorCache.open(path)
    try:
        got = cache.get("m", list(made), 384)
        assert set(got) == set(made) and all(numpy.array_equal(got[t], made[t]) for t in made)
        assert cache.stats().bytes == 300 * (384 * 4 + ROW_OVERHEAD), "recounted with today's row cost"
        cache.put("m", _model_sized(10, seed=9))
        assert len(cache.get("m", list(_model_sized(10, seed=9)), 384)) == 10
    finally:
        cache.close()
    conn = sqlite3.connect(path)
    try:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vectors'").fetchone()[0]
        assert "WITHOUT ROWID" not in sql.upper()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    assert path.stat().st_size < before / 2, "the overflow pages went back to the file system"
