"""Searches teach the learner what to learn first (daemon/search/graph_learning.py, issue 23).

A search whose expansion had to ask the servers live (its budget ran out before they
answered) leaves those symbols on its root's queue; the next learning round asks about
them before going on in id order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from search_fakes import FakeEmbedder, FakeGateway, LearnerGateway
from search_projects import UPLOADER, indexed

from lensmux.daemon.cli.views.status_view import render_indexes
from lensmux.daemon.search.gateway import DaemonGateway
from lensmux.daemon.search.graph_learning import GraphLearner
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.root_index import RootIndex
from lensmux.graph.index import Indexer
from lensmux.graph.search import HybridSearchEngine, Overrides, SearchConfig, SearchRequest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.embedded_store(
        "the order and lanes of rounds do not depend on the store;"
        " the learner on a team root's overlay is test_learning_yields.py's"
    ),
]

# backoff_send's name, 0-based line 19 of pkg/uploader.py: neither the first file nor its first symbol.
BACKOFF_LINE = 19


class PositionsGateway(LearnerGateway):
    """The ast fake, recording the (file, line) of each request made at a position."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.positions: list[tuple[str, int]] = []

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        position, document = params.get("position"), params.get("textDocument")
        if isinstance(position, Mapping) and isinstance(document, Mapping):
            self.positions.append((Path(str(document["uri"])).name, int(position["line"])))
        return await super().request(root, language, method, params, timeout=timeout)


# Symbols that later searches queue after the first one: thirty searches at their budget on a
# large root queue about this many (docs/benchmarks.md, "100k, 300k and 1M again").
LATER_SEARCHES = 150


@pytest.mark.parametrize("later", [0, LATER_SEARCHES], ids=["alone", "then-other-searches"])
async def test_a_search_that_asked_live_has_its_seeds_learned_before_the_cursor(tmp_path: Path, later: int) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        entry = RootIndex(ix.root, ix, finished_at=1.0)
        indexes = cast(IndexService, type("Indexes", (), {"roots": {ix.root: entry}})())
        # The server answers nothing within the budget: the search asked live and learned nothing.
        config = SearchConfig(expand_seeds=0, expansion_budget_s=0.2)
        engine = HybridSearchEngine(
            FakeGateway(ix.root, hanging=True), embed_query=FakeEmbedder().embed_query, config=config
        )
        request = SearchRequest(query="`backoff_send`", top_k=20, config_overrides=Overrides(max_graph_depth=1))
        with anyio.fail_after(30):
            response = await engine.search(request, ix, asked_live=entry.learn_first.extend)
        assert any("budget" in w for w in response.warnings), response.warnings
        assert ix.store.learned_counts()[0] == 0
        assert list(entry.learn_first), "the seed the search asked about is queued"
        asked = set(entry.learn_first)
        # Later searches queue symbols of their own (ids of no symbol here: a round drops them).
        entry.learn_first.extend(range(10**6, 10**6 + later))

        gateway = PositionsGateway(ix.root)
        learner = GraphLearner(indexes, cast(DaemonGateway, gateway), lambda: config, lambda: False)
        with anyio.fail_after(30):
            await learner._round(entry, config)
    assert gateway.positions[0] == ("uploader.py", BACKOFF_LINE), gateway.positions
    assert not asked & set(entry.learn_first), "what the round took leaves the queue"
    # The id-order cursor did not move past anything for it: the rest of the round came from the start.
    assert len({p for p in gateway.positions}) > 1


def test_lensmux_status_shows_the_symbols_searches_queued() -> None:
    graph = {"learned": 10, "learnable": 40, "state": "learning", "interrupted_rounds": 0, "queued_by_searches": 3,
             "queue_bound": 1024}  # fmt: skip
    shown = "\n".join(render_indexes({"model": {"state": "loaded"}, "roots": [{"root": "/r", "graph": graph}]}))
    assert "call graph: 10/40 symbols learned (learning; 3 of at most 1,024 queued by searches)" in shown
    quiet = {**graph, "queued_by_searches": 0, "state": "up to date"}
    shown = "\n".join(render_indexes({"model": {"state": "loaded"}, "roots": [{"root": "/r", "graph": quiet}]}))
    assert "call graph: 10/40 symbols learned (up to date)" in shown
