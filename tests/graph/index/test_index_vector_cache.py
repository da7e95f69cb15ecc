"""The user's content-addressed vector cache: keyed by model and text, bounded, never a failed run."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy
import pytest
from index_fakes import DIM, FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.vector_cache import ROW_OVERHEAD, VectorCache


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
