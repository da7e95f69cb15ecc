"""Language-server trouble never fails a search: the answer falls back to stage 1 and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, SearchedIndex, indexed

from lensmux.graph.search import (
    HybridSearchEngine,
    NoServer,
    Overrides,
    SearchConfig,
    SearchRequest,
    SearchResponse,
)

pytestmark = pytest.mark.anyio

QUERY = "retry a failed upload with exponential backoff"


def _ranking(response: SearchResponse) -> list[tuple[str, float]]:
    return [(s.id, s.score) for s in response.ranked_symbols]


async def _stage_one(ix: SearchedIndex) -> SearchResponse:
    engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=FakeEmbedder().embed_query)
    return await engine.search(SearchRequest(query=QUERY, config_overrides=Overrides(max_graph_depth=0)), ix)


async def _degraded(
    ix: SearchedIndex, config: SearchConfig | None = None, **faults: Any
) -> tuple[SearchResponse, FakeGateway]:
    gateway = FakeGateway(ix.root, **faults)
    engine = HybridSearchEngine(gateway, embed_query=FakeEmbedder().embed_query, config=config)
    return await engine.search(SearchRequest(query=QUERY), ix), gateway


async def test_missing_server_answers_from_stage_one(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        response, gateway = await _degraded(ix, unavailable="no server for python")
    assert response.degraded is True
    assert response.warnings == ["python: no server for python; its symbols were not expanded"]
    assert gateway.requests == [], "an unavailable server is not asked"
    assert _ranking(response) == _ranking(baseline)


async def test_a_language_without_a_server_is_not_a_degradation(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        response, gateway = await _degraded(ix, unavailable=NoServer("no language server configured for python"))
    assert response.degraded is False
    assert response.warnings == [
        "python: no language server configured for python; its symbols were ranked without a language server"
    ]
    assert gateway.requests == []
    assert _ranking(response) == _ranking(baseline)


async def test_a_few_failed_requests_are_a_warning_not_a_degradation(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response, gateway = await _degraded(ix, failing_every=3)
    failed = len(gateway.requests) // 3
    assert failed >= 1 and len(gateway.requests) > failed
    assert response.degraded is False
    [warning] = response.warnings
    assert warning.startswith(f"python: {failed} of {len(gateway.requests)} language-server requests failed: ")
    assert "injected occasional failure" in warning
    assert any(r.startswith("expanded:") for s in response.ranked_symbols for r in s.reasons)


async def test_open_breaker_reason_reaches_the_warnings(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response, _ = await _degraded(ix, unavailable="pyright circuit open until 12:00:05")
    assert response.degraded and "pyright circuit open until 12:00:05" in response.warnings[0]


async def test_failing_requests_answer_from_stage_one(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        response, gateway = await _degraded(ix, failing="server crashed")
    assert response.degraded is True
    [warning] = response.warnings
    assert warning.startswith(f"python: {len(gateway.requests)} of {len(gateway.requests)} language-server requests")
    assert "server crashed" in warning
    assert _ranking(response) == _ranking(baseline)


async def test_hanging_requests_time_out_one_by_one(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        config = SearchConfig(request_timeout_s=0.1, expansion_budget_s=30.0)
        response, _ = await _degraded(ix, config, hanging=True)
    assert response.degraded is True
    assert "timed out after 0.1 s" in response.warnings[0]
    assert _ranking(response) == _ranking(baseline)


async def test_expansion_ends_at_its_budget_with_what_it_has(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        config = SearchConfig(request_timeout_s=30.0, expansion_budget_s=0.2)
        response, gateway = await _degraded(ix, config, hanging=True)
    assert response.degraded is True
    assert any("expansion stopped at its 0.2 s budget" in w for w in response.warnings)
    assert gateway.requests, "requests were in flight when the budget ran out"
    assert _ranking(response) == _ranking(baseline)


async def test_slow_server_keeps_the_answers_that_arrived_in_time(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        # Depth 1 answers arrive (0.01 s each); the budget ends during depth 2.
        config = SearchConfig(expansion_budget_s=0.6, max_in_flight=2)
        response, _ = await _degraded(ix, config, delay=0.05)
    assert response.degraded is False, "the server answered: a budget is a limit, not an outage"
    assert any("budget" in w for w in response.warnings)
    assert any(r.startswith("expanded:") for s in response.ranked_symbols for r in s.reasons)


async def test_a_gateway_bug_does_not_fail_the_search(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        baseline = await _stage_one(ix)
        response, _ = await _degraded(ix, broken=True)
    assert response.degraded is True
    assert "gateway error: bug in the gateway" in response.warnings[0]
    assert _ranking(response) == _ranking(baseline)
