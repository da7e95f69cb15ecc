"""Indexing the same tree twice, batched differently, gives the same vectors and the same answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fakes import FakeGateway, FakeSymbolSource
from search_projects import UPLOADER, hub_project
from support.projects import write_files

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index import IndexConfig, Indexer
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
