"""A full run saves its vector file as it grows by a share, not on a timer (issue 23, item 4).

Every save writes the whole graph; saving on a fixed interval made a run's saves cost time
quadratic in its length (100k vectors: 161 MiB, 0.81 s a save, once a minute). With
`save_growth` the elements all saves write stay within (2 + 1/growth) times the vectors the
run added. Vectors a dead process never saved are embedded again on the next open, from the
vector cache, not by the model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import IndexConfig, Indexer
from lensmux.graph.index.builder.caches.vector_cache import VectorCache
from lensmux.graph.index.records import VectorPointer
from lensmux.graph.index.sqlite.persistence import IndexFiles
from lensmux.graph.index.sqlite.vectors import VectorIndex

pytestmark = pytest.mark.anyio

FILES = 120


def _saves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The elements each VectorIndex.save writes, in order."""
    written: list[int] = []
    real = VectorIndex.save

    def counting(self: VectorIndex, directory: Path, generation: int) -> VectorPointer:
        pointer = real(self, directory, generation)
        written.append(pointer.count)
        return pointer

    monkeypatch.setattr(VectorIndex, "save", counting)
    return written


@pytest.mark.parametrize("growth", [0.25, 1.0])
async def test_a_full_runs_saves_write_a_bounded_multiple_of_its_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, growth: float
) -> None:
    write_files(tmp_path / "repo", {f"pkg/mod{i}.py": module_text(i) for i in range(FILES)})
    written = _saves(monkeypatch)
    # Two files a transaction and no minimum interval: a save would be due after every batch.
    config = IndexConfig(commit_files=2, commit_chunks=8, embed_batch=8, save_interval_s=0.0, save_growth=growth)
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), FakeSymbolSource(), config=config) as ix:
        await ix.index_all()
        added = ix.status().vectors
        assert added == ix.status().chunks
        assert added is not None and added > 4 * FILES
    assert written[-1] == added, "the run ends with a save of everything"
    assert sum(written) <= (2 + 1 / growth) * added, f"saves wrote {sum(written)} elements for {added} vectors"
    # Saves are still made during the run, not only at its end.
    assert len(written) >= 3


async def test_vectors_a_killed_run_never_saved_come_back_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path / "repo", {f"pkg/mod{i}.py": module_text(i) for i in range(40)})
    config = IndexConfig(commit_files=2, commit_chunks=8, embed_batch=8, save_interval_s=0.0, save_growth=0.25)
    real_save = IndexFiles.save
    saves = 0

    def dies_after_two_saves(self: IndexFiles, compact_fraction: float, compact_min_deleted: int) -> bool:
        # The process is "killed" after its second save: nothing it does later reaches the disk.
        nonlocal saves
        saves += 1
        return real_save(self, compact_fraction, compact_min_deleted) if saves <= 2 else False

    monkeypatch.setattr(IndexFiles, "save", dies_after_two_saves)
    cache = VectorCache.open(tmp_path / "vector-cache.sqlite")
    try:
        first = FakeEmbedder()
        async with Indexer(
            tmp_path / "repo", tmp_path / "state", first, FakeSymbolSource(), config=config, vector_cache=cache
        ) as ix:
            await ix.index_all()
            chunks = ix.status().chunks
            assert chunks is not None
        monkeypatch.setattr(IndexFiles, "save", real_save)

        second = FakeEmbedder()
        async with Indexer(
            tmp_path / "repo", tmp_path / "state", second, FakeSymbolSource(), config=config, vector_cache=cache
        ) as ix:
            lost = ix.pending_vectors
            assert 0 < lost < chunks, "some vectors were saved, the rest are pending"
            await ix.index_all()
            assert ix.pending_vectors == 0 and ix.status().vectors == chunks
            assert second.texts == [], "every lost vector came from the cache, none from the model"
    finally:
        cache.close()
