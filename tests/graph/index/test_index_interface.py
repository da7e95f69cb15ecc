"""The index interface's contract (graph/index/interface.py), asserted the same way of every store.

`stores` lists the stores; each builds its index of the same tree and hands the search side
(IndexReader, VectorReader) to the same assertions. A second store joins by adding a
builder here: whatever the embedded store answers, it must answer too.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource
from support.projects import write_files

from lensmux.graph.index import Indexer, IndexReader, VectorReader
from lensmux.graph.index.interface import KeywordTerm, keyword_terms
from lensmux.graph.index.postgres.publish import copy_files, publish
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.search.candidates.query_text import keyword_expression

pytestmark = pytest.mark.anyio

FILES = {
    "pkg/upload.py": (
        "import time\n\n\nclass Uploader:\n    def send(self, blob):\n        self.backoff_send(blob)\n\n"
        "    def backoff_send(self, blob):\n        time.sleep(1)\n\n\n"
        "def retry_upload(data):\n    return Uploader().send(data)\n"
    ),
    "pkg/network.py": (
        "def send(packet):\n    return packet\n\n\ndef send_all(packets):\n    for p in packets:\n        send(p)\n"
    ),
    "docs/retry.md": "# Retry policy\n\nWe use backoff. Backoff doubles.\n",
}


@dataclass
class Opened:
    """One store's search side, and how to rewrite a file through that store's own writer."""

    reader: IndexReader
    vectors: VectorReader
    rewrite: Callable[[str, str], Awaitable[None]]


async def _sqlite(root: Path, state: Path, request: pytest.FixtureRequest) -> AsyncIterator[Opened]:
    embedder = FakeEmbedder()
    async with Indexer(root, state, embedder, FakeSymbolSource()) as ix:
        await ix.index_all()

        async def rewrite(rel: str, text: str) -> None:
            (root / rel).write_text(text)
            await ix.reindex_file(root / rel)

        yield Opened(ix.store, ix.vectors, rewrite)


async def _postgres(root: Path, state: Path, request: pytest.FixtureRequest) -> AsyncIterator[Opened]:
    """The team store on a real PostgreSQL: the tree indexed locally, published, rewritten file by file."""
    team = TeamStore(request.getfixturevalue("team_database"))
    embedder = FakeEmbedder()
    try:
        async with Indexer(root, state, embedder, FakeSymbolSource()) as ix:
            await ix.index_all()
            published = publish(
                team, root, ix.store, ix.vectors, repo="r0", commit="c1", model_id=ix.model_id, dim=embedder.dim
            )
            store, vectors = team.open(root, published.snapshot)

            async def rewrite(rel: str, text: str) -> None:
                (root / rel).write_text(text)
                await ix.reindex_file(root / rel)
                copy_files(ix.store, ix.vectors, store, vectors, [rel])

            yield Opened(store, vectors, rewrite)
    finally:
        team.close()


STORES: dict[str, Callable[[Path, Path, pytest.FixtureRequest], AbstractAsyncContextManager[Opened]]] = {
    "sqlite": asynccontextmanager(_sqlite),
    "postgres": asynccontextmanager(_postgres),
}


@pytest.fixture(params=sorted(STORES))
async def opened(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opened]:
    write_files(tmp_path / "repo", FILES)
    async with STORES[request.param](tmp_path / "repo", tmp_path / "state", request) as o:
        yield o


def test_keyword_terms_read_back_what_search_writes() -> None:
    expression = keyword_expression('backoffSend retries "quoted"')
    assert expression is not None
    terms = keyword_terms(expression)
    assert KeywordTerm("backoffsend") in terms and KeywordTerm("send") in terms
    assert KeywordTerm("retri", prefix=True) in terms
    assert keyword_terms('"say ""hi""" OR "x"*') == [KeywordTerm('say "hi"'), KeywordTerm("x", prefix=True)]


async def test_paths_are_relative_and_outside_paths_are_none(opened: Opened, tmp_path: Path) -> None:
    store = opened.reader
    assert store.relative(tmp_path / "repo" / "pkg" / "upload.py") == "pkg/upload.py"
    assert store.relative(tmp_path / "elsewhere.py") is None
    assert store.relative("../x.py") is None
    record = store.file(tmp_path / "repo" / "pkg" / "upload.py")
    assert record is not None and record.path == "pkg/upload.py"


async def test_keyword_scores_grow_with_relevance(opened: Opened) -> None:
    store = opened.reader
    expression = keyword_expression("backoff send")
    assert expression is not None
    hits = store.fts_search(expression, 10)
    assert hits, "the tree spells both words"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    best = store.chunk(hits[0][0])
    assert best is not None and best.name.endswith("backoff_send")
    assert store.fts_search(expression, 0) == []
    assert store.keyword_search('"; DROP TABLE chunks; --', 5) == []


async def test_vector_search_returns_chunks_by_similarity(opened: Opened) -> None:
    vectors = opened.vectors
    assert len(vectors) > 0
    embedder = FakeEmbedder()
    found = vectors.search(embedder.embed_query("def send(packet): return packet"), 5)
    assert found and all(-1.0 <= s <= 1.0001 for _, s in found)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert all(opened.reader.chunk(cid) is not None for cid, _ in found)


async def test_a_small_index_answers_with_the_exact_nearest_chunks_ties_by_id(opened: Opened) -> None:
    # Both stores search exactly at this size, so they give the same list for the same vectors
    # (a second machine's answers are the publisher's); two approximate graphs would each miss
    # different neighbours, and order equal similarities as their walk found them.
    ids = sorted(opened.reader.chunk_ids())  # type: ignore[attr-defined]
    stored = opened.vectors.vectors(ids)  # type: ignore[attr-defined]
    question = FakeEmbedder().embed_query("send every packet of a buffer")
    question = question / numpy.linalg.norm(question)
    scores = {cid: float(stored[cid] @ question) for cid in ids}
    found = opened.vectors.search(question, len(ids))
    assert sorted(cid for cid, _ in found) == ids
    assert [s for _, s in found] == pytest.approx([scores[cid] for cid, _ in found], abs=1e-5)
    # Most similar first; equal similarities (the fake model gives equal texts equal vectors) by id.
    for (a, sa), (b, sb) in itertools.pairwise(found):
        assert sa > sb + 1e-6 or (abs(sa - sb) <= 1e-6 and a < b)
    assert opened.vectors.search(question, 3) == found[:3]


async def test_symbols_resolve_by_name_file_and_line(opened: Opened) -> None:
    store = opened.reader
    [send_all] = [s for s in store.lookup_symbols("send_all") if s.path == "pkg/network.py"]
    assert store.symbol(send_all.id) == send_all
    assert [c.name for c in store.chunks_for_symbol(send_all.id)] == ["send_all"]
    enclosing = store.enclosing_symbol("pkg/network.py", send_all.range.start_line + 1)
    assert enclosing is not None and enclosing.id == send_all.id
    assert [s.name for s in store.symbols_in_file("pkg/network.py")] == ["send", "send_all"]
    assert [f.path for f in store.files_matching("network")] == ["pkg/network.py"]
    assert "Uploader.send" in {s.qualified_name for s in store.lookup_symbols("Uploader.send")}


async def test_ids_of_a_rewritten_file_are_gone_without_errors(opened: Opened) -> None:
    store = opened.reader
    old = store.chunks_in_file("pkg/network.py")
    before = store.generation
    await opened.rewrite("pkg/network.py", "def transmit(frame):\n    return frame\n")
    assert store.generation > before
    assert all(store.chunk(c.id) is None for c in old)
    assert store.chunks([c.id for c in old]) == []
    assert [c.name for c in store.chunks_in_file("pkg/network.py")] == ["transmit"]


async def test_vectors_follow_a_rewrite_of_files(opened: Opened) -> None:
    # The team store keeps a snapshot's vector count and its exact-search matrix after the
    # first read; a write of files (which stores the chunks' vectors with their rows) must drop both.
    store, vectors = opened.reader, opened.vectors
    question = FakeEmbedder().embed_query("def transmit(frame): return frame")
    before = len(vectors)
    old = {c.id for c in store.chunks_in_file("pkg/network.py")}
    assert {i for i, _ in vectors.search(question, before)} >= old
    await opened.rewrite(
        "pkg/network.py", "def transmit(frame):\n    return frame\n\n\ndef receive(frame):\n    return frame\n\n\n"
        "def relay(frame):\n    return transmit(receive(frame))\n"
    )  # fmt: skip
    new = {c.id for c in store.chunks_in_file("pkg/network.py")}
    assert len(vectors) == before - len(old) + len(new)
    found = {i for i, _ in vectors.search(question, len(vectors))}
    assert found >= new and not found & (old - new)


async def test_learned_relations_of_an_older_generation_are_refused(opened: Opened) -> None:
    store = opened.reader
    [send] = [s for s in store.lookup_symbols("send") if s.path == "pkg/network.py"]
    [send_all] = store.lookup_symbols("send_all")
    stale = store.generation
    await opened.rewrite("docs/retry.md", "# Retry policy\n\nNo more backoff.\n")
    assert store.remember_learned({send_all.id: [("calls", send.id)]}, stale) == 0
    assert store.recall_learned([send_all.id]) == {}
    assert store.remember_learned({send_all.id: [("calls", send.id)]}, store.generation) == 1
    assert store.recall_learned([send_all.id]) == {send_all.id: [("calls", send.id)]}
