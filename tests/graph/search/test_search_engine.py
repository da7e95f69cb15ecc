"""The whole pipeline over a real index: response shape, determinism, anchors, index states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, SearchedIndex, indexed
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.search import (
    HybridSearchEngine,
    Overrides,
    RootNotReady,
    SearchConfig,
    SearchRequest,
    SearchResponse,
)

pytestmark = pytest.mark.anyio


def _engine(ix: SearchedIndex, *, vectors: bool = True, **gateway: Any) -> HybridSearchEngine:
    embed = FakeEmbedder().embed_query if vectors else None
    return HybridSearchEngine(FakeGateway(ix.root, **gateway), embed_query=embed)


def _stable(response: SearchResponse) -> dict[str, Any]:
    """Everything but the id and the clocks."""
    out: dict[str, Any] = msgspec.to_builtins(response)
    for key in ("query_id", "execution_time_ms", "timing"):
        out.pop(key)
    return out


def _ids(response: SearchResponse) -> list[str]:
    return [s.id for s in response.ranked_symbols]


async def test_response_has_the_documented_shape(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        query = "retry a failed upload with exponential backoff"
        response = await _engine(ix).search(SearchRequest(query=query, top_k=6), ix)
    body = msgspec.json.decode(msgspec.json.encode(response))
    assert set(body) == {
        "query_id", "execution_time_ms", "timing", "degraded", "warnings", "results", "ranked_symbols", "root",
        "coverage",
    }  # fmt: skip
    assert body["coverage"] == 1.0
    assert set(body["timing"]) == {"seeds", "expansion", "graph", "clustering", "rerank", "fresh"}
    assert body["root"] == str(ix.root) and body["degraded"] is False and body["warnings"] == []
    symbol = next(s for s in body["ranked_symbols"] if s["name"] == "backoff_send")
    assert set(symbol) == {"id", "name", "kind", "file_path", "range", "score", "raw_code", "reasons"}
    assert set(symbol["range"]) == {"start", "end"} and set(symbol["range"]["start"]) == {"line", "character"}
    assert symbol["id"] == "pkg/uploader.py:Uploader.backoff_send:19"
    assert symbol["name"] == "backoff_send" and symbol["kind"] == "method"
    assert symbol["range"] == {"start": {"line": 19, "character": 4}, "end": {"line": 26, "character": 20}}
    assert symbol["raw_code"].startswith("    def backoff_send(self, path: str, data: bytes) -> bool:")
    assert symbol["raw_code"].endswith("return False")
    assert "seed:keyword:1" in symbol["reasons"]
    assert len(body["ranked_symbols"]) == 6
    scores = [s["score"] for s in body["ranked_symbols"]]
    assert scores == sorted(scores, reverse=True), "no anchors here: one order by score"


async def test_clusters_partition_the_ranked_symbols(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix).search(SearchRequest(query="upload files to storage", top_k=10), ix)
    in_clusters = [s.id for c in response.results for s in c.symbols]
    assert sorted(in_clusters) == sorted(_ids(response)) and len(set(in_clusters)) == len(in_clusters)
    assert [c.cluster_id for c in response.results] == [f"cluster_{i}" for i in range(len(response.results))]
    for c in response.results:
        assert c.score == max(s.score for s in c.symbols), "a cluster scores as its best symbol"
        assert c.title
    # Clusters come in the order of their best member in the global ranking.
    firsts = [_ids(response).index(c.symbols[0].id) for c in response.results]
    assert firsts == sorted(firsts)


async def test_same_query_same_index_same_answer(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        request = SearchRequest(query="how are uploads retried with backoff", top_k=10)
        first = await _engine(ix).search(request, ix)
        second = await _engine(ix).search(request, ix)
        engine = _engine(ix)
        third, fourth = await engine.search(request, ix), await engine.search(request, ix)
    assert len(first.results) > 1, "several clusters, so the partition itself is compared"
    assert _stable(first) == _stable(second) == _stable(third) == _stable(fourth)
    assert first.query_id != second.query_id


async def test_named_symbol_comes_first_even_when_other_text_matches_better(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        query = "object storage put and get of objects, also `read_file`"
        plain = await _engine(ix).search(SearchRequest(query=query.replace(", also `read_file`", "")), ix)
        anchored = await _engine(ix).search(SearchRequest(query=query, top_k=3), ix)
    assert "pkg/uploader.py:read_file:29" not in _ids(plain)[:3]
    top = anchored.ranked_symbols[0]
    assert top.id == "pkg/uploader.py:read_file:29"
    assert top.reasons[0] == "anchor:explicit_symbol"


async def test_anchors_are_kept_even_beyond_top_k(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix).search(SearchRequest(query="`read_file` and `render_table`", top_k=1), ix)
    assert set(_ids(response)) == {"pkg/uploader.py:read_file:29", "pkg/report.py:render_table:3"}


async def test_named_file_anchors_its_symbols_best_matching_first(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix).search(SearchRequest(query="how are objects fetched in storage.py", top_k=8), ix)
    ids = _ids(response)
    file_symbols = [i for i in ids if i.startswith("pkg/storage.py:") and not i.startswith("pkg/storage.py:pkg/")]
    assert ids[: len(file_symbols)] == file_symbols, "the named file's symbols lead"
    assert len(file_symbols) == 5
    fetch = next(s for s in response.ranked_symbols if s.id == "pkg/storage.py:Storage.get_object:10")
    assert "seed:keyword:1" in fetch.reasons, "its docstring says 'Fetch'"
    assert all("anchor:explicit_file" in s.reasons for s in response.ranked_symbols[:5])


async def test_explicit_name_the_index_lacks_is_reported(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix).search(SearchRequest(query="where is `frobnicate_widgets` defined"), ix)
    assert "`frobnicate_widgets` names no indexed symbol" in response.warnings


async def test_identifier_only_the_server_knows_is_resolved_with_workspace_symbol(tmp_path: Path) -> None:
    files = {**UPLOADER, "pkg/limits.py": "class Limits:\n    chunk_size_bytes = 1024\n    timeout = 3\n"}
    async with indexed(tmp_path, files) as ix:
        assert ix.store.lookup_symbols("chunk_size_bytes") == [], "class attributes are not indexed symbols"
        gateway = FakeGateway(ix.root)
        response = await HybridSearchEngine(gateway).search(SearchRequest(query="where is `chunk_size_bytes` set"), ix)
    assert "workspace/symbol" in gateway.requests
    top = response.ranked_symbols[0]
    assert top.id == "pkg/limits.py:Limits:0", "the server's answer maps to the enclosing indexed symbol"
    assert top.reasons[:2] == ["anchor:explicit_symbol", "resolved:workspace_symbol"]
    assert not any("names no indexed symbol" in w for w in response.warnings)


async def test_root_still_indexing_answers_with_a_warning(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix).search(
            SearchRequest(query="read file"), ix, indexing_in_progress=True, coverage=0.375
        )
    assert response.ranked_symbols
    assert "still being indexed" in response.warnings[0] and "37%" in response.warnings[0]
    assert response.coverage == 0.375


async def test_closed_index_is_not_ready(tmp_path: Path) -> None:
    root = write_files(tmp_path / "repo", UPLOADER)
    ix = Indexer(root, tmp_path / "state", FakeEmbedder(), FakeSymbolSourceNone())
    with pytest.raises(RootNotReady) as info:
        await _engine(ix).search(SearchRequest(query="x"), ix)
    assert info.value.field == "root" and info.value.http_status == 409


async def test_without_vectors_keyword_and_anchors_still_answer(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        response = await _engine(ix, vectors=False).search(SearchRequest(query="retry failed uploads"), ix)
    assert response.ranked_symbols[0].id == "pkg/uploader.py:Uploader.backoff_send:19"
    assert response.degraded is True
    assert any("vector search unavailable" in w for w in response.warnings)
    assert not any(r.startswith("seed:vector") for s in response.ranked_symbols for r in s.reasons)


async def test_depth_zero_asks_no_server(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        engine = _engine(ix)
        request = SearchRequest(query="retry failed uploads", config_overrides=Overrides(max_graph_depth=0))
        response = await engine.search(request, ix)
    assert isinstance(engine.gateway, FakeGateway) and engine.gateway.requests == []
    assert response.degraded is False
    assert not any(r.startswith("expanded:") for s in response.ranked_symbols for r in s.reasons)


async def test_config_defaults_can_be_changed_per_engine(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        engine = HybridSearchEngine(FakeGateway(ix.root), config=SearchConfig(max_graph_depth=0))
        response = await engine.search(SearchRequest(query="retry failed uploads"), ix)
    assert isinstance(engine.gateway, FakeGateway) and engine.gateway.requests == []
    assert response.ranked_symbols


class FakeSymbolSourceNone:
    """A symbol source for an index that is never opened."""

    async def document_symbols(self, path: Path, language_id: str, text: str) -> None:
        return None


async def test_rrf_fusion_is_still_available_and_ranks_the_same_function_first(tmp_path: Path) -> None:
    from lensmux.graph.search import FusionWeights

    query = "retry a failed upload with exponential backoff"
    async with indexed(tmp_path, UPLOADER) as ix:
        convex = await _engine(ix).search(SearchRequest(query=query, top_k=5), ix)
        rrf_engine = HybridSearchEngine(
            FakeGateway(ix.root),
            embed_query=FakeEmbedder().embed_query,
            config=SearchConfig(fusion=FusionWeights(method="rrf", vector=3.0, keyword=1.0)),
        )
        rrf = await rrf_engine.search(SearchRequest(query=query, top_k=5), ix)
    assert convex.ranked_symbols[0].name == rrf.ranked_symbols[0].name == "backoff_send"


async def test_a_rewritten_file_answers_with_its_new_text_only(tmp_path: Path) -> None:
    # On a root laid over a team snapshot the file moves to the local side; its shared rows must
    # answer no more (graph/index/team/overlay.py's mask). Every symbol moves down two lines.
    query = SearchRequest(query="where is `put_object` of `Storage` defined", top_k=20)
    async with indexed(tmp_path, UPLOADER) as ix:
        before = _ids(await _engine(ix).search(query, ix))
        storage = ix.root / "pkg/storage.py"
        storage.write_text("\n\n" + storage.read_text())
        await ix.reindex_file(storage)
        after = _ids(await _engine(ix).search(query, ix))
    assert "pkg/storage.py:Storage.put_object:6" in before
    assert "pkg/storage.py:Storage.put_object:8" in after
    assert not {i for i in after if i.startswith("pkg/storage.py:")} & set(before), "nothing of the old text"
