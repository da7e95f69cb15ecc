"""The call graph kept with the index: what one search learned, the next reads instead of asking."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway, FakeSymbolSource
from search_projects import UPLOADER, SearchedIndex, indexed

from lensmux.graph.index import Indexer
from lensmux.graph.search import HybridSearchEngine, Overrides, SearchConfig, SearchRequest, SearchResponse, learn_round

pytestmark = pytest.mark.anyio

BACKOFF = "pkg/uploader.py:Uploader.backoff_send:19"
UPLOAD = "pkg/uploader.py:Uploader.upload:14"
PUT = "pkg/storage.py:Storage.put_object:6"
NEW_CALLER = "pkg/retry.py:retry_later:3"
RETRY = (
    "from pkg.uploader import Uploader\n\n\n"
    'def retry_later(up: Uploader) -> bool:\n    return up.backoff_send("x", b"")\n'
)
# Only the anchor is expanded, one level: the graph is backoff_send's neighbourhood alone.
ANCHOR_ONLY = SearchConfig(expand_seeds=0)


async def _search(ix: SearchedIndex, gateway: FakeGateway, query: str = "`backoff_send`") -> SearchResponse:
    engine = HybridSearchEngine(gateway, embed_query=FakeEmbedder().embed_query, config=ANCHOR_ONLY)
    request = SearchRequest(query=query, top_k=20, config_overrides=Overrides(max_graph_depth=1))
    return await engine.search(request, ix)


async def _search_after_write(ix: SearchedIndex, rel: str, text: str) -> tuple[FakeGateway, SearchResponse]:
    """Learn by searching once, write `rel` and re-index it, search again; the second search's gateway and answer."""
    await _search(ix, FakeGateway(ix.root))
    (ix.root / rel).write_text(text)
    await ix.reindex_file(ix.root / rel)
    gateway = FakeGateway(ix.root)
    return gateway, await _search(ix, gateway)


def _reasons(response: SearchResponse) -> dict[str, list[str]]:
    return {s.id: s.reasons for s in response.ranked_symbols}


async def test_a_search_reads_what_an_earlier_one_learned_without_asking(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        first_gateway, again_gateway = FakeGateway(ix.root), FakeGateway(ix.root)
        first = await _search(ix, first_gateway)
        again = await _search(ix, again_gateway)
    assert first_gateway.requests, "the first search asks the server"
    assert again_gateway.requests == [], "the second reads the learned relations"
    assert _reasons(again) == _reasons(first)
    assert "expanded:called_by:Uploader.backoff_send" in _reasons(again)[PUT]
    assert not again.degraded and again.warnings == []


async def test_learned_relations_answer_while_the_server_is_down(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        first = await _search(ix, FakeGateway(ix.root))
        down = await _search(ix, FakeGateway(ix.root, unavailable="pyright is not installed"))
    assert _reasons(down) == _reasons(first)
    assert not down.degraded, "nothing had to be asked"


async def test_a_new_caller_in_another_file_makes_the_search_ask_again(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        gateway, after = await _search_after_write(ix, "pkg/retry.py", RETRY)
    assert gateway.requests, "a file that spells backoff_send was written: its relations are asked again"
    assert "expanded:calls:Uploader.backoff_send" in _reasons(after)[NEW_CALLER]


async def test_a_change_to_a_callee_file_forgets_the_callers_relations(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        storage = (ix.root / "pkg/storage.py").read_text()
        # put_object moves down two lines
        gateway, after = await _search_after_write(ix, "pkg/storage.py", "\n\n" + storage)
    assert gateway.requests
    assert "expanded:called_by:Uploader.backoff_send" in _reasons(after)["pkg/storage.py:Storage.put_object:8"]


async def test_a_file_that_does_not_mention_the_symbol_keeps_what_was_learned(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        unrelated = "def tally(xs: list[int]) -> int:\n    return sum(xs)\n"
        gateway, _after = await _search_after_write(ix, "pkg/unrelated.py", unrelated)
    assert gateway.requests == []


@pytest.mark.parametrize(
    "first", [{"failing": "injected failure"}, {"settled": False}], ids=["failed requests", "server still warming"]
)
async def test_answers_that_may_be_incomplete_are_not_kept(tmp_path: Path, first: dict[str, object]) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        await _search(ix, FakeGateway(ix.root, **first))  # type: ignore[arg-type]
        gateway = FakeGateway(ix.root)
        after = await _search(ix, gateway)
    assert gateway.requests, "nothing was kept, so the next search asks"
    assert "expanded:calls:Uploader.backoff_send" in _reasons(after)[UPLOAD]


async def test_learning_rounds_cover_every_symbol_before_any_search(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        after, rounds = 0, 0
        while True:
            done = await learn_round(ix, FakeGateway(ix.root), SearchConfig(), after=after, limit=3)
            if done.done:
                break
            after, rounds = done.after, rounds + 1
        learned, learnable = ix.store.learned_counts()
        gateway = FakeGateway(ix.root)
        response = await _search(ix, gateway)
    assert rounds >= 2 and learned == learnable > 0
    assert gateway.requests == []
    assert "expanded:calls:Uploader.backoff_send" in _reasons(response)[UPLOAD]


@pytest.mark.embedded_store("it drops the SQLite file's learned tables; the team schema is migrated as a whole")
async def test_an_index_written_before_the_learned_tables_gains_them(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        db, root, state = ix.store.path, ix.root, ix.store.directory
    conn = sqlite3.connect(db)
    conn.executescript("DROP TABLE learned_edges; DROP TABLE learned;")
    conn.close()
    async with Indexer(root, state, FakeEmbedder(), FakeSymbolSource()) as again:
        first_gateway, gateway = FakeGateway(root), FakeGateway(root)
        await _search(again, first_gateway)
        await _search(again, gateway)
        files = again.store.counts().files
    assert files == len(UPLOADER), "the index was kept, not rebuilt"
    assert first_gateway.requests and gateway.requests == []
