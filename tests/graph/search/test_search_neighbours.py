"""Graph neighbours of the top hits fill the answer's tail; the first places stay the rerank's."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import SearchedIndex, indexed

from lensmux.graph.search import HybridSearchEngine, Overrides, SearchConfig, SearchRequest, SearchResponse

pytestmark = pytest.mark.anyio

QUERY = "reconcile ledger entries against the bank statement"
TOP_K = 6
PROTECT = 3
SIBLING = "ledger/core.py:drain_pending_queue:13"


def _ledger() -> dict[str, str]:
    """A function the query names in all but name, a sibling it does not match, and many weaker matches."""
    # One report per file: they have no siblings, so the only neighbour of note is in core.py.
    reports = {
        f"ledger/report_{i}.py": (
            f"def ledger_report_{i}(entries: list) -> str:\n"
            f'    """Report {i} on the ledger entries of one bank statement."""\n'
            f"    return str(len(entries) + {i})\n"
        )
        for i in range(12)
    }
    return {
        "ledger/__init__.py": "",
        "ledger/core.py": (
            "def reconcile_ledger_entries(entries: list, statement: list) -> int:\n"
            '    """Reconcile ledger entries against the bank statement and count mismatches."""\n'
            "    mismatches = 0\n"
            "    for entry, line in zip(entries, statement):\n"
            "        if entry != line:\n"
            "            mismatches += 1\n"
            "    return mismatches\n"
            "\n"
            "\n"
            "TIMEOUT = 3\n"
            "\n"
            "\n"
            "\n"
            "def drain_pending_queue(queue: list) -> int:\n"
            '    """Pop every waiting job."""\n'
            "    n = 0\n"
            "    while queue:\n"
            "        queue.pop()\n"
            "        n += 1\n"
            "    return n\n"
        ),
        **reports,
    }


async def _search(ix: SearchedIndex, overrides: Overrides | None = None) -> SearchResponse:
    # The fill is off by default; these tests turn it on as the localization benchmark measured it.
    config = SearchConfig(neighbour_protect=PROTECT, neighbour_from=10)
    engine = HybridSearchEngine(FakeGateway(ix.root), embed_query=FakeEmbedder().embed_query, config=config)
    request = SearchRequest(query=QUERY, top_k=TOP_K, config_overrides=overrides)
    return await engine.search(request, ix)


def _ids(response: SearchResponse) -> list[str]:
    return [s.id for s in response.ranked_symbols]


async def test_a_same_file_sibling_the_query_does_not_match_enters_the_answer(tmp_path: Path) -> None:
    async with indexed(tmp_path, _ledger()) as ix:
        without = await _search(ix, Overrides(neighbour_from=0))
        filled = await _search(ix)
    assert _ids(without)[0] == "ledger/core.py:reconcile_ledger_entries:0"
    assert SIBLING not in _ids(without), "the sibling is not a direct hit of this query"
    assert SIBLING in _ids(filled)
    sibling = next(s for s in filled.ranked_symbols if s.id == SIBLING)
    assert sibling.reasons[0] == "neighbour:same_file:reconcile_ledger_entries"
    assert len(filled.ranked_symbols) == TOP_K
    scores = [s.score for s in filled.ranked_symbols]
    assert scores == sorted(scores, reverse=True), "a neighbour shows the score of the hit above it"
    in_clusters = sorted(s.id for c in filled.results for s in c.symbols)
    assert in_clusters == sorted(_ids(filled))


async def test_strong_direct_hits_are_never_displaced(tmp_path: Path) -> None:
    async with indexed(tmp_path, _ledger()) as ix:
        without = await _search(ix, Overrides(neighbour_from=0))
        filled = await _search(ix)
    # The protected places are the rerank's own, in its order; after them a neighbour
    # only ever takes every other place, so each direct hit moves down at most by half.
    assert _ids(filled)[:PROTECT] == _ids(without)[:PROTECT]
    direct = [key for key in _ids(filled) if key in _ids(without)]
    assert direct == _ids(without)[: len(direct)], "direct hits keep their order"
    assert len(direct) >= PROTECT + (TOP_K - PROTECT) // 2


async def test_depth_zero_is_stage_one_alone(tmp_path: Path) -> None:
    async with indexed(tmp_path, _ledger()) as ix:
        response = await _search(ix, Overrides(max_graph_depth=0))
    assert SIBLING not in _ids(response)
    assert not any(r.startswith("neighbour:") for s in response.ranked_symbols for r in s.reasons)


async def test_test_code_is_no_neighbour_of_library_code(tmp_path: Path) -> None:
    files = _ledger()
    files["ledger/core.py"] = files["ledger/core.py"].split("\n\nTIMEOUT")[0] + "\n"
    files["ledger/jobs.py"] = (
        "from ledger.core import reconcile_ledger_entries\n\n\n"
        "def nightly_job(a: list, b: list) -> int:\n"
        "    return reconcile_ledger_entries(a, b)\n"
    )
    files["tests/test_core.py"] = (
        "from ledger.core import reconcile_ledger_entries\n\n\n"
        "def test_counts() -> None:\n"
        "    assert reconcile_ledger_entries([1], [2]) == 1\n"
    )
    async with indexed(tmp_path, files) as ix:
        filled = await _search(ix)
    reasons = {s.id: s.reasons for s in filled.ranked_symbols}
    assert "ledger/jobs.py:nightly_job:3" in reasons
    assert not any(
        r.startswith("neighbour:") for key, why in reasons.items() if key.startswith("tests/") for r in why
    ), "test code is no neighbour of library code"
