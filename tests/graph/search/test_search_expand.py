"""Live expansion through a (fake, ast-backed) language server, and what it may do to the ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, hub_project, indexed

from lensmux.graph.search import (
    HybridSearchEngine,
    Overrides,
    RankingWeights,
    SearchConfig,
    SearchRequest,
    SearchResponse,
    SymbolResult,
)

pytestmark = pytest.mark.anyio

BACKOFF = "pkg/uploader.py:Uploader.backoff_send:19"
UPLOAD = "pkg/uploader.py:Uploader.upload:14"
PUT = "pkg/storage.py:Storage.put_object:6"
RUN_CLI = "pkg/cli.py:run_cli:5"
TARGET = "svc/quantum.py:reconcile_ledger_entries:3"
HUB = "svc/metrics.py:emit_metric:0"


def _by_id(response: SearchResponse) -> dict[str, SymbolResult]:
    return {s.id: s for s in response.ranked_symbols}


def _engine(gateway: FakeGateway, config: SearchConfig | None = None) -> HybridSearchEngine:
    return HybridSearchEngine(gateway, embed_query=FakeEmbedder().embed_query, config=config)


def _depth(depth: int, **weights: float) -> Overrides:
    return Overrides(max_graph_depth=depth, ranking_weights=RankingWeights(**weights) if weights else None)


async def test_callers_and_callees_join_with_their_reasons(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        # Only the anchor is expanded, so what is found is its neighbourhood alone.
        engine = _engine(FakeGateway(ix.root), SearchConfig(expand_seeds=0))
        one = await engine.search(SearchRequest(query="`backoff_send`", top_k=20, config_overrides=_depth(1)), ix)
        two = await engine.search(SearchRequest(query="`backoff_send`", top_k=20, config_overrides=_depth(2)), ix)
    found = _by_id(one)
    assert found[BACKOFF].reasons[0] == "anchor:explicit_symbol"
    assert "expanded:called_by:Uploader.backoff_send" in found[PUT].reasons
    assert "expanded:calls:Uploader.backoff_send" in found[UPLOAD].reasons
    assert "expanded:calls:Uploader.upload" not in (found[RUN_CLI].reasons if RUN_CLI in found else []), "2 hops"
    assert "expanded:calls:Uploader.upload" in _by_id(two)[RUN_CLI].reasons
    assert not one.degraded and one.warnings == []


async def test_generic_names_are_not_reached_by_expansion(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        # Keyword seeds only, so `log` can only come in through expansion (backoff_send calls it).
        engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=None)
        response = await engine.search(SearchRequest(query="`backoff_send`", top_k=30), ix)
    assert PUT in _by_id(response), "its other callee is there"
    assert not any(s.name == "log" for s in response.ranked_symbols)


async def test_subclass_is_found_through_references_in_its_base_list(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(FakeGateway(ix.root)).search(SearchRequest(query="`Storage`"), ix)
    bucket = _by_id(response)["pkg/storage.py:BucketStorage:15"]
    assert "expanded:inherits:Storage" in bucket.reasons
    init = _by_id(response)["pkg/uploader.py:Uploader.__init__:11"]
    assert "expanded:references:Storage" in init.reasons, "a seed-reached generic name stays when it is a seed"


@pytest.mark.parametrize("call_hierarchy", [True, False], ids=["no-outgoing-calls", "no-call-hierarchy"])
async def test_outgoing_calls_are_derived_when_the_server_lacks_them(tmp_path: Path, call_hierarchy: bool) -> None:
    files = {
        **UPLOADER,
        "pkg/mirror.py": (
            "from pkg.storage import Storage\n\n\n"
            "def mirror_object(source: Storage, target: Storage, key: str) -> bool:\n"
            '    """Copy one object between stores."""\n'
            "    return target.put_object(key, source.get_object(key))  # get_object: two classes define it\n"
        ),
    }
    async with indexed(tmp_path, files) as ix:
        gateway = FakeGateway(ix.root, outgoing=False, call_hierarchy=call_hierarchy)
        request = SearchRequest(query="`mirror_object`", top_k=20, config_overrides=_depth(1))
        response = await _engine(gateway).search(request, ix)
    found = _by_id(response)
    derived = "expanded:called_by:mirror_object:derived"
    assert derived in found[PUT].reasons, "a unique name resolves through the index alone"
    get_objects = [s for s in response.ranked_symbols if s.name == "get_object" and derived in s.reasons]
    assert len(get_objects) == 1, "an ambiguous name is settled by one definition request"
    assert "textDocument/definition" in gateway.requests
    assert "callHierarchy/outgoingCalls" not in gateway.requests or call_hierarchy
    assert not response.degraded and response.warnings == [], "a missing method is not a failure"


async def test_module_level_call_is_not_blamed_on_the_first_symbol(tmp_path: Path) -> None:
    files = {
        **hub_project(3),
        "svc/boot.py": (
            "from svc.quantum import reconcile_ledger_entries\n"
            "def first_thing() -> None:\n    pass\n\n\n"
            "reconcile_ledger_entries([])\n"
        ),
    }
    async with indexed(tmp_path, files) as ix:
        request = SearchRequest(query="`reconcile_ledger_entries`", top_k=30, config_overrides=_depth(1))
        response = await _engine(FakeGateway(ix.root)).search(request, ix)
    reasons = {r for s in response.ranked_symbols if s.name == "first_thing" for r in s.reasons}
    assert "expanded:calls:reconcile_ledger_entries" not in reasons


@pytest.mark.parametrize("vectors", [False, True], ids=["hub-only-expanded", "hub-also-a-weak-seed"])
async def test_central_but_unrelated_hub_does_not_push_the_top_seed_down(tmp_path: Path, vectors: bool) -> None:
    query = "reconcile ledger entries against the bank statement"
    embed = FakeEmbedder().embed_query if vectors else None
    async with indexed(tmp_path, hub_project(30)) as ix:
        engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=embed)
        flat = await engine.search(SearchRequest(query=query, top_k=3, config_overrides=_depth(0)), ix)
        expanded = await engine.search(SearchRequest(query=query, top_k=40, config_overrides=_depth(2)), ix)
    assert flat.ranked_symbols[0].id == TARGET
    found = _by_id(expanded)
    assert "expanded:called_by:reconcile_ledger_entries" in found[HUB].reasons
    callers = [s for s in expanded.ranked_symbols if "expanded:calls:emit_metric" in s.reasons]
    assert len(callers) >= 20, "the hub is central: expansion found most of its callers"
    assert all(found[HUB].score > s.score for s in callers)
    assert expanded.ranked_symbols[0].id == TARGET, "the best seed stays first"
    assert found[TARGET].score == 1.0, "relevance, centrality and proximity all at their maximum"


@pytest.mark.parametrize(
    "query",
    ["how are objects fetched from storage", "retry a failed upload with exponential backoff", "`Storage` users"],
)
async def test_expansion_never_lowers_a_seed_score(tmp_path: Path, query: str) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        engine = _engine(FakeGateway(ix.root))
        flat = await engine.search(SearchRequest(query=query, top_k=100, config_overrides=_depth(0)), ix)
        expanded = await engine.search(SearchRequest(query=query, top_k=100, config_overrides=_depth(2)), ix)
    after = _by_id(expanded)
    assert any(r.startswith("expanded:") for s in expanded.ranked_symbols for r in s.reasons)
    for seed in flat.ranked_symbols:
        assert after[seed.id].score >= seed.score, f"{seed.id} lost score to expansion"
    # So a seed moves down only when another symbol rose above it through the graph.
    assert expanded.ranked_symbols[0].id == flat.ranked_symbols[0].id


async def test_expansion_stops_at_the_node_cap(tmp_path: Path) -> None:
    async with indexed(tmp_path, hub_project(30)) as ix:
        engine = _engine(FakeGateway(ix.root), SearchConfig(max_nodes=8))
        response = await engine.search(SearchRequest(query="`emit_metric`", top_k=2), ix)
    assert "expansion stopped at 8 nodes" in response.warnings
    assert len(response.ranked_symbols) == 2
    assert not response.degraded, "a cap is a limit, not a failure"
