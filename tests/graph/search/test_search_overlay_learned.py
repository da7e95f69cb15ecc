"""A team root's call graph never answers from relations its own changes made stale (issue 24).

The publisher searched before publishing, so the snapshot carries what it learned of
backoff_send's neighbourhood. A checkout laid over that snapshot then changes who calls it, or
what it calls: the overlay must answer as the same tree indexed locally does (the reference
here: a fresh embedded index of the changed tree), not with the publisher's relations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway, FakeSymbolSource
from search_projects import UPLOADER, OverlaidIndex, SearchedIndex, overlaid
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.team.overlay import SHARED_ID_BASE
from lensmux.graph.search import (
    HybridSearchEngine,
    Overrides,
    SearchConfig,
    SearchRequest,
    SearchResponse,
    learn_round,
)

pytestmark = pytest.mark.anyio

RETRY = (
    "from pkg.uploader import Uploader\n\n\n"
    'def retry_later(up: Uploader) -> bool:\n    return up.backoff_send("x", b"")\n'
)
# Spells nothing of backoff_send: the call is gone.
NO_RETRY = "from pkg.uploader import Uploader\n\n\ndef retry_later(up: Uploader) -> bool:\n    return False\n"
SECOND_CALLER = (
    "from pkg.uploader import Uploader\n\n\n"
    'def flush_later(up: Uploader) -> bool:\n    return up.backoff_send("y", b"")\n'
)
TREE = {**UPLOADER, "pkg/retry.py": RETRY}


async def _search(ix: SearchedIndex, gateway: FakeGateway) -> SearchResponse:
    engine = HybridSearchEngine(gateway, embed_query=FakeEmbedder().embed_query, config=SearchConfig(expand_seeds=0))
    request = SearchRequest(query="`backoff_send`", top_k=20, config_overrides=Overrides(max_graph_depth=1))
    return await engine.search(request, ix)


def _graph(response: SearchResponse) -> dict[str, list[str]]:
    """What expansion found, symbol by symbol (seed scores differ: each side keeps its own BM25 statistics)."""
    found = {s.id: [r for r in s.reasons if r.startswith("expanded:")] for s in response.ranked_symbols}
    return {symbol: reasons for symbol, reasons in found.items() if reasons}


# A hollow flush_later: a file that spells nothing of backoff_send yet.
HOLLOW = "from pkg.uploader import Uploader\n\n\ndef flush_later(up: Uploader) -> bool:\n    return False\n"


LOCAL_CHANGES = pytest.mark.parametrize(
    "changes",
    [
        [("pkg/flush.py", SECOND_CALLER)],
        [("pkg/retry.py", SECOND_CALLER.replace("flush_later", "retry_later"))],
        [("pkg/retry.py", NO_RETRY)],
        [("pkg/retry.py", None)],
        # Spells nothing of backoff_send: stale because backoff_send calls put_object, which moved.
        [("pkg/storage.py", "\n\n" + UPLOADER["pkg/storage.py"])],
        # The file is masked already when the call is added: the mask stays, the local text changes.
        [("pkg/flush.py", HOLLOW), ("pkg/flush.py", SECOND_CALLER)],
    ],
    ids=["new caller file", "caller rewritten", "call removed", "caller deleted", "callee moved", "changed file again"],
)


async def _apply(checkout: OverlaidIndex, changes: list[tuple[str, str | None]]) -> None:
    for rel, text in changes:
        if text is None:
            (checkout.root / rel).unlink()
        else:
            (checkout.root / rel).write_text(text)
        await checkout.reindex_file(checkout.root / rel)
        checkout.shared.reader.refresh()  # as the search service does before each search


async def _alone(root: Path, state: Path) -> SearchResponse:
    """The reference: the changed tree indexed locally, searched once."""
    async with Indexer(root, state, FakeEmbedder(), FakeSymbolSource()) as reference:
        await reference.index_all()
        return await _search(reference, FakeGateway(root))


@LOCAL_CHANGES
async def test_a_local_change_around_a_learned_symbol_is_not_answered_from_the_publishers_graph(
    tmp_path: Path, team_database: str, changes: list[tuple[str, str | None]]
) -> None:
    root = write_files(tmp_path / "repo", TREE).resolve()
    async with Indexer(root, tmp_path / "publisher-state", FakeEmbedder(), FakeSymbolSource()) as publisher:
        await publisher.index_all()
        await _search(publisher, FakeGateway(root))
        learned_before = publisher.store.learned_counts()[0]
        assert learned_before > 0, "the publisher learned backoff_send's neighbourhood"
        async with overlaid(publisher, tmp_path / "overlay-state", team_database) as checkout:
            (backoff,) = [s for s in checkout.store.lookup_symbols("backoff_send") if s.name == "backoff_send"]
            assert backoff.id >= SHARED_ID_BASE and checkout.store.recall_learned([backoff.id]), "published learned"
            learned_published = checkout.store.learned_counts()[0]
            await _apply(checkout, changes)
            assert checkout.store.recall_learned([backoff.id]) == {}, "the publisher's relations are stale"
            assert checkout.store.learned_counts()[0] < learned_published, "stale relations are not counted learned"
            gateway = FakeGateway(root)
            through_overlay = await _search(checkout, gateway)
            assert gateway.requests, "backoff_send's callers changed here: the server is asked"
    assert _graph(through_overlay) == _graph(await _alone(root, tmp_path / "reference-state"))


@LOCAL_CHANGES
async def test_a_local_change_around_a_symbol_learned_here_forgets_it(
    tmp_path: Path, team_database: str, changes: list[tuple[str, str | None]]
) -> None:
    """The same changes after the checkout itself learned the snapshot's symbols (the side map, side_learned.py)."""
    root = write_files(tmp_path / "repo", TREE).resolve()
    async with Indexer(root, tmp_path / "publisher-state", FakeEmbedder(), FakeSymbolSource()) as publisher:
        await publisher.index_all()  # published without learning anything
        async with overlaid(publisher, tmp_path / "overlay-state", team_database) as checkout:
            after = 0
            while not (
                done := await learn_round(checkout, FakeGateway(root), SearchConfig(), after=after, limit=50)
            ).done:
                after = done.after
            (backoff,) = [s for s in checkout.store.lookup_symbols("backoff_send") if s.name == "backoff_send"]
            assert checkout.store.recall_learned([backoff.id]), "the checkout learned backoff_send"
            learned, learnable = checkout.store.learned_counts()
            assert learned == learnable > 0 and len(checkout.shared.reader.side) == learned
            await _apply(checkout, changes)
            assert checkout.store.recall_learned([backoff.id]) == {}, "what was learned here is stale"
            assert checkout.store.learned_counts()[0] < learned, "and no longer counted learned"
            gateway = FakeGateway(root)
            through_overlay = await _search(checkout, gateway)
            assert gateway.requests, "backoff_send's callers changed here: the server is asked"
    assert _graph(through_overlay) == _graph(await _alone(root, tmp_path / "reference-state"))


async def test_a_class_named_again_makes_its_constructors_relations_stale_and_only_those(
    tmp_path: Path, team_database: str
) -> None:
    root = write_files(tmp_path / "repo", TREE).resolve()
    async with Indexer(root, tmp_path / "publisher-state", FakeEmbedder(), FakeSymbolSource()) as publisher:
        await publisher.index_all()
        after = 0
        while not (done := await learn_round(publisher, FakeGateway(root), SearchConfig(), after=after, limit=50)).done:
            after = done.after
        async with overlaid(publisher, tmp_path / "overlay-state", team_database) as checkout:

            def shared_id(qualified: str) -> int:
                (found,) = [s for s in checkout.store.lookup_symbols(qualified) if s.qualified_name == qualified]
                return found.id

            init, put = shared_id("Uploader.__init__"), shared_id("Storage.put_object")
            assert set(checkout.store.recall_learned([init, put])) == {init, put}, "the publisher learned both"
            # `Uploader(...)` calls __init__ without spelling it: the class's name is what changed.
            (root / "pkg/factory.py").write_text(
                "from pkg.uploader import Uploader\n\n\ndef make_uploader(storage):\n    return Uploader(storage)\n"
            )
            await checkout.reindex_file(root / "pkg/factory.py")
            assert set(checkout.store.recall_learned([init, put])) == {put}
