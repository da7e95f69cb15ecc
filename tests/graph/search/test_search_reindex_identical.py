"""Indexing the same tree twice, batched differently, gives the same vectors and the same answers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy
import numpy.typing as npt
import pytest
from search_fakes import FakeGateway, FakeSymbolSource
from search_projects import UPLOADER, hub_project
from support.projects import write_files

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index import IndexConfig, Indexer
from lensmux.graph.index.builder.caches.vector_cache import VectorCache
from lensmux.graph.search import HybridSearchEngine, SearchRequest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

QUERIES = ["retry a failed upload with exponential backoff", "send one metric sample", "render a table of rows"]


@pytest.fixture(scope="module")
def int8_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The int8 model users get, built into a private cache."""
    return Embedder.open_default("int8", cache_root=tmp_path_factory.mktemp("models"))


async def _answers(root: Path, state: Path, embedder: Embedder, batch: int) -> list[list[object]]:
    config = IndexConfig(embed_batch=batch, commit_files=batch, commit_chunks=batch)
    async with Indexer(root, state, embedder, FakeSymbolSource(), config=config) as ix:
        await ix.index_all()
        engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=embedder.embed_query)
        answers: list[list[object]] = []
        for query in QUERIES:
            response = await engine.search(SearchRequest(query=query), ix)
            answers.append([(s.id, s.score, s.reasons) for s in response.ranked_symbols])
        for query in QUERIES:
            hits = await ix.semantic_search(query, 50)
            answers.append([(_where(ix, cid), score) for cid, score in hits])
        return answers


def _where(ix: Indexer, chunk_id: int) -> tuple[str, int] | None:
    """Chunk ids depend on commit order; a chunk is named by its file and first line."""
    chunk = ix.store.chunk(chunk_id)
    return None if chunk is None else (chunk.path, chunk.start_line)


async def test_indexing_the_same_tree_twice_gives_identical_results(tmp_path: Path, int8_embedder: Embedder) -> None:
    root = write_files(tmp_path / "repo", {**UPLOADER, **hub_project(12)}).resolve()
    first = await _answers(root, tmp_path / "state-1", int8_embedder, batch=256)
    second = await _answers(root, tmp_path / "state-2", int8_embedder, batch=3)
    assert first[0] and first[-1], "the queries find something"
    assert len(first[-1]) > 20, "every chunk is compared"
    assert first == second


class _Counting:
    """The real embedder, counting the document texts it is asked to embed."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.dim = embedder.dim
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        self.texts += len(texts)
        return self._embedder.embed(texts)

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        return self._embedder.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self._embedder.count_tokens(text)


async def test_a_copy_of_an_indexed_tree_answers_as_a_fresh_index_from_cached_vectors(
    tmp_path: Path, int8_embedder: Embedder
) -> None:
    """Issue 23, item 3: a second worktree embeds nothing, and answers exactly as if it had."""
    files = {**UPLOADER, **hub_project(12)}
    first = write_files(tmp_path / "repo", files).resolve()
    worktree = write_files(tmp_path / "worktree", files).resolve()
    cache = VectorCache.open(tmp_path / "vector-cache.sqlite")
    counting = _Counting(int8_embedder)
    try:
        async with Indexer(first, tmp_path / "state-1", counting, FakeSymbolSource(), vector_cache=cache) as ix:
            await ix.index_all()
        embedded_first = counting.texts
        # Cached vectors are the model's own, bit for bit, whatever they were batched with.
        texts = ["def send(self, blob):\n    pass", "class Uploader:", "render a table of rows"]
        cache.put("probe", dict(zip(texts, int8_embedder.embed(texts), strict=True)))
        fresh = numpy.stack([int8_embedder.embed([t])[0] for t in texts])
        cached = cache.get("probe", texts, int8_embedder.dim)
        assert numpy.array_equal(numpy.stack([cached[t] for t in texts]), fresh)

        counting.texts = 0
        config = IndexConfig(embed_batch=5, commit_files=5, commit_chunks=5)
        async with Indexer(
            worktree, tmp_path / "state-2", counting, FakeSymbolSource(), config=config, vector_cache=cache
        ) as ix:
            await ix.index_all()
        assert embedded_first > 20 and counting.texts == 0, "every chunk of the copy came from the cache"
        from_cache = await _answers(worktree, tmp_path / "state-2", int8_embedder, batch=7)
    finally:
        cache.close()
    assert from_cache == await _answers(worktree, tmp_path / "state-3", int8_embedder, batch=256)
