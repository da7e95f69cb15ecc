"""A store that fails under expansion's concurrent requests, as a team store lost mid-search does."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, indexed

from lensmux.graph.index.errors import StoreUnreachable
from lensmux.graph.search import HybridSearchEngine, SearchConfig, SearchRequest
from lensmux.graph.search.errors import SearchFailed

pytestmark = pytest.mark.anyio


async def test_a_store_lost_under_expansion_fails_the_search_as_search_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expansion maps the servers' answers to indexed symbols inside a task group; the store's error
    must still reach the engine as itself, so the search fails as SearchFailed (the daemon then falls
    back to the local index) rather than as an ExceptionGroup no handler matches."""
    async with indexed(tmp_path, UPLOADER) as ix:

        def lost(path: str, line: int) -> None:
            raise StoreUnreachable("enclosing symbol: terminating connection due to administrator command")

        monkeypatch.setattr(ix.store, "enclosing_symbol", lost)
        engine = HybridSearchEngine(
            FakeGateway(ix.root), embed_query=FakeEmbedder().embed_query, config=SearchConfig(expand_seeds=0)
        )
        with pytest.raises(SearchFailed, match="administrator command"):
            await engine.search(SearchRequest(query="`backoff_send`", top_k=20), ix)
