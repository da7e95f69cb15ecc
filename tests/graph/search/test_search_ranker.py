"""Stage 1's learned ranker: its features on a tiny fixture, determinism, and the invariants it keeps."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest
from search_fakes import FakeEmbedder, FakeGateway
from search_projects import UPLOADER, SearchedIndex, indexed

from lensmux.graph.index import LspRange
from lensmux.graph.search import HybridSearchEngine, SearchConfig, SearchRequest
from lensmux.graph.search import ranker as ranker_module
from lensmux.graph.search.candidates.anchors import TIER_SYMBOL, AnchorSet
from lensmux.graph.search.candidates.seeds import _fuse, _SourceHits, query_words
from lensmux.graph.search.catalog import Node
from lensmux.graph.search.ranker import (
    FEATURES,
    FUSION_ALONE,
    Candidate,
    QueryFacts,
    RankerModel,
    RankerWeightsError,
    candidate_graph,
    feature_matrix,
    graph_candidates,
    load_weights,
    shipped_model,
)

_COL = {name: i for i, name in enumerate(FEATURES)}


def _node(name: str, path: str, line: int, *, kind: str = "function", parent: int | None = None) -> Node:
    span = LspRange(line, 0, line + 9, 0)
    return Node(
        key=f"{path}:{name}:{line}",
        name=name,
        qualified_name=name,
        kind=kind,
        path=path,
        range=span,
        selection=span,
        symbol_id=line,
        parent_id=parent,
    )


# A query, three candidates: upload (calls backoff_send), backoff_send (in class Uploader), Uploader;
# and a C function that only the keyword side found.
UPLOAD = _node("upload", "pkg/uploader.py", 30, kind="method", parent=24)
BACKOFF = _node("backoff_send", "pkg/uploader.py", 35, kind="method", parent=24)
UPLOADER_CLASS = _node("Uploader", "pkg/uploader.py", 24, kind="class")
C_SEND = _node("send_bytes", "src/net/send.c", 100)
TEXTS = {
    UPLOAD.key: "def upload(self, path):\n    data = read_file(path)\n    return self.backoff_send(path, data)\n",
    BACKOFF.key: "def backoff_send(self, path, data):\n    for attempt in range(5):\n        time.sleep(2)\n",
    UPLOADER_CLASS.key: "class Uploader:\n    def upload(self, path): ...\n",
    C_SEND.key: "int send_bytes(int fd) {\n    return write(fd, 0, 0);\n}\n",
}


def _candidates() -> list[Candidate]:
    return [
        Candidate(UPLOAD, 0.9, 0.6, 1, 20.0, 2, test=False),
        Candidate(BACKOFF, 1.2, 0.5, 2, 40.0, 1),
        Candidate(UPLOADER_CLASS, 0.4, 0.4, 3, None, None),
        Candidate(C_SEND, 0.3, None, None, 10.0, 3),
    ]


def _facts(query: str) -> QueryFacts:
    return QueryFacts(words=query_words(query), best_cosine=0.6, best_bm25=40.0, coverage=0.5)


def _rows(candidates: list[Candidate], query: str = "retry a failed upload with backoff") -> dict[str, list[float]]:
    best = graph_candidates(candidates)
    graph = candidate_graph(best, TEXTS)
    matrix = feature_matrix(candidates, _facts(query), graph)
    return {c.node.key: [float(v) for v in row] for c, row in zip(candidates, matrix, strict=True)}


def test_features_of_a_tiny_fixture() -> None:
    rows = _rows(_candidates())
    upload, backoff, cls, c_send = (rows[n.key] for n in (UPLOAD, BACKOFF, UPLOADER_CLASS, C_SEND))
    assert backoff[_COL["convex"]] == 1.0 and upload[_COL["convex"]] == pytest.approx(0.75)
    assert upload[_COL["vector"]] == pytest.approx(0.6) and upload[_COL["vector_rel"]] == pytest.approx(1.0)
    assert backoff[_COL["keyword"]] == 1.0 and backoff[_COL["keyword_abs"]] == 1.0
    assert upload[_COL["keyword"]] == pytest.approx(0.5) and upload[_COL["keyword_rr"]] == pytest.approx(0.5)
    assert upload[_COL["keyword_cov"]] == pytest.approx(0.25)
    assert cls[_COL["keyword"]] == 0.0 and cls[_COL["both"]] == 0.0 and upload[_COL["both"]] == 1.0
    # Query words: retry, failed, upload, backoff (a, with are stop words).
    assert backoff[_COL["name_words"]] == pytest.approx(1 / 4), "`backoff` of backoff_send"
    assert upload[_COL["name_words"]] == pytest.approx(1 / 4) and upload[_COL["path_words"]] == pytest.approx(1 / 4)
    assert upload[_COL["callable"]] == 1.0 and cls[_COL["type"]] == 1.0 and cls[_COL["callable"]] == 0.0
    assert c_send[_COL["c_family"]] == 1.0 and c_send[_COL["c_keyword"]] == pytest.approx(0.25)
    assert upload[_COL["c_family"]] == 0.0 and c_send[_COL["c_vector"]] == 0.0
    # The graph: upload calls backoff_send; Uploader contains both methods.
    assert backoff[_COL["callers"]] == pytest.approx(1 - numpy.exp(-0.75))
    assert upload[_COL["callees"]] == pytest.approx(1 - numpy.exp(-1.0))
    assert upload[_COL["family"]] == backoff[_COL["family"]] == cls[_COL["family"]] == 1.0
    assert c_send[_COL["family"]] == 0.0 and c_send[_COL["near_top"]] == 0.0 and c_send[_COL["pagerank"]] == 0.0
    assert upload[_COL["near_top"]] == 1.0
    assert max(upload[_COL["pagerank"]], backoff[_COL["pagerank"]], cls[_COL["pagerank"]]) == pytest.approx(1.0)
    for row in rows.values():
        assert all(-1.0 <= v <= 1.0 for v in row)


def test_a_headers_prototype_of_a_candidate_defined_elsewhere_is_a_declaration() -> None:
    prototype = _node("send_bytes", "src/net/send.h", 12)
    inline = _node("send_all", "src/net/send.hpp", 20)
    candidates = [
        *_candidates(),
        Candidate(prototype, 0.8, None, None, 30.0, 1),
        Candidate(inline, 0.2, 0.3, 4, None, None),
    ]
    rows = _rows(candidates)
    assert rows[prototype.key][_COL["header"]] == 1.0 and rows[prototype.key][_COL["declaration"]] == 1.0
    assert rows[inline.key][_COL["header"]] == 1.0 and rows[inline.key][_COL["declaration"]] == 0.0, "no definition"
    assert rows[C_SEND.key][_COL["header"]] == 0.0 and rows[C_SEND.key][_COL["declaration"]] == 0.0
    assert rows[UPLOAD.key][_COL["header"]] == 0.0


def test_same_candidates_in_any_order_give_the_same_rows() -> None:
    forward = _rows(_candidates())
    backward = _rows(list(reversed(_candidates())))
    assert forward == backward
    graph = candidate_graph(graph_candidates(_candidates()), TEXTS)
    assert graph == candidate_graph(graph_candidates(list(reversed(_candidates()))), TEXTS)
    assert graph.calls == ((UPLOAD.key, BACKOFF.key),)


def test_a_call_to_a_name_two_candidates_share_is_no_edge() -> None:
    twin = _node("backoff_send", "pkg/other.py", 3)
    candidates = [*_candidates(), Candidate(twin, 0.2, 0.3, 5, None, None)]
    graph = candidate_graph(graph_candidates(candidates), TEXTS)
    assert graph.calls == ()


def test_the_model_scores_rows_linearly_and_round_trips() -> None:
    model = RankerModel.of({"convex": 1.0, "name_words": 0.5}, trained_on=["a", "b"])
    matrix = feature_matrix(_candidates(), _facts("upload"), candidate_graph([], {}))
    expected = matrix[:, _COL["convex"]] + 0.5 * matrix[:, _COL["name_words"]]
    assert numpy.allclose(model.score(matrix), expected)
    assert RankerModel.loads(model.dumps()) == model
    with pytest.raises(RankerWeightsError, match="unknown ranker features"):
        RankerModel.of({"no_such_feature": 1.0})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"weights": {"convex": 1.0', "not JSON"),
        ("[1, 2]", "no `weights` table"),
        ('{"weights": {"convex": "1.0"}}', "finite numbers"),
        ('{"weights": {"convex": NaN}}', "finite numbers"),
        ('{"weights": {"pagerank": 1, "colour": 2}}', "unknown ranker features: \\['colour'\\]"),
    ],
)
def test_a_corrupt_weights_file_is_a_clear_error_and_search_falls_back_to_the_fusion(
    text: str, reason: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(RankerWeightsError, match=reason):
        RankerModel.loads(text)
    path = tmp_path / "ranker_weights.json"
    path.write_text(text)
    with caplog.at_level("ERROR", logger="lensmux.graph.search.ranker"):
        model = load_weights(path.read_text, str(path))
    assert model == FUSION_ALONE
    assert f"{path} is unusable" in caplog.text and "fusion alone" in caplog.text
    missing = load_weights((tmp_path / "absent.json").read_text, "absent.json")
    assert missing == FUSION_ALONE


@pytest.mark.anyio
async def test_search_with_a_corrupt_shipped_file_ranks_as_with_the_stage_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ranker_weights.json").write_text('{"weights": {"convex": 1.0, "pagerank": ')
    monkeypatch.setattr(ranker_module, "resources", SimpleNamespace(files=lambda package: tmp_path))
    shipped_model.cache_clear()
    request = SearchRequest(query="how are uploads retried with backoff", top_k=10)
    try:
        assert shipped_model() == FUSION_ALONE
        async with indexed(tmp_path / "project", UPLOADER) as ix:
            on = await _engine(ix, SearchConfig(learned_ranker=True)).search(request, ix)
            off = await _engine(ix, SearchConfig()).search(request, ix)
    finally:
        shipped_model.cache_clear()
    assert [s.id for s in on.ranked_symbols] == [s.id for s in off.ranked_symbols]
    assert [s.score for s in on.ranked_symbols] == pytest.approx([s.score for s in off.ranked_symbols])


def test_the_shipped_weights_name_only_known_features() -> None:
    text = (Path(__file__).parents[3] / "graph" / "search" / "ranker_weights.json").read_text()
    assert set(json.loads(text)["weights"]) <= set(FEATURES)
    assert shipped_model() == RankerModel.loads(text)


def _hits() -> _SourceHits:
    hits = _SourceHits(demote_tests=True)
    hits.nodes = {n.key: n for n in (UPLOAD, BACKOFF, UPLOADER_CLASS)}
    hits.vector = [(UPLOAD.key, 0.6), (BACKOFF.key, 0.5), (UPLOADER_CLASS.key, 0.4)]
    hits.keyword = [BACKOFF.key, UPLOAD.key]
    hits.keyword_score = {BACKOFF.key: 40.0, UPLOAD.key: 20.0}
    return hits


def test_anchors_stay_above_whatever_the_model_prefers() -> None:
    anchors = AnchorSet()
    anchors.add_group([UPLOADER_CLASS])
    anchors.add(UPLOADER_CLASS, TIER_SYMBOL, "anchor:explicit_symbol")

    def favour_upload(fused: dict[str, float]) -> dict[str, float]:
        return {key: (100.0 if key == UPLOAD.key else -5.0) for key in fused}

    seeds = _fuse(_hits(), anchors, SearchConfig(), favour_upload)
    assert [s.node.key for s in seeds][:2] == [UPLOADER_CLASS.key, UPLOAD.key]
    assert seeds[0].relevance == 1.0 and seeds[1].relevance == 1.0, "the model's best seed has relevance 1"
    assert all(0.0 <= s.relevance <= 1.0 for s in seeds)


def _engine(ix: SearchedIndex, config: SearchConfig) -> HybridSearchEngine:
    return HybridSearchEngine(FakeGateway(ix.root), embed_query=FakeEmbedder().embed_query, config=config)


LEARNED = SearchConfig(
    learned_ranker=True,
    ranker_model=RankerModel.of({"convex": 1.0, "name_words": 2.0, "callers": 0.5, "pagerank": 0.5}),
)


@pytest.mark.anyio
async def test_the_learned_stage_is_deterministic_keeps_anchors_and_expansion_only_raises(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        request = SearchRequest(query="how are uploads retried with backoff", top_k=10)
        first = await _engine(ix, LEARNED).search(request, ix)
        second = await _engine(ix, LEARNED).search(request, ix)
        named = await _engine(ix, LEARNED).search(
            SearchRequest(query="object storage put and get of objects, also `read_file`", top_k=3), ix
        )
        flat = dataclasses.replace(LEARNED, max_graph_depth=0)
        seeds_only = await _engine(ix, flat).search(request, ix)
    assert [(s.id, s.score) for s in first.ranked_symbols] == [(s.id, s.score) for s in second.ranked_symbols]
    assert named.ranked_symbols[0].id == "pkg/uploader.py:read_file:29"
    assert named.ranked_symbols[0].reasons[0] == "anchor:explicit_symbol"
    # The best seed scores w1 + w2 + w3 and nothing found only by expansion comes near it.
    w = LEARNED.weights
    assert first.ranked_symbols[0].score == pytest.approx(w.w1 + w.w2 + w.w3, abs=1e-4)
    before = {s.id: s.score for s in seeds_only.ranked_symbols}
    for s in first.ranked_symbols:
        if s.id in before:
            assert s.score >= before[s.id] - 1e-4, f"{s.id}: expansion lowered a seed's score"
        else:
            assert s.score <= w.w2 + w.w3 / 2 + 1e-4


def test_the_fusion_keeps_half_of_a_headers_declaration_when_the_definition_is_a_candidate() -> None:
    prototype = _node("send_bytes", "src/net/send.h", 12)
    lonely = _node("recv_bytes", "src/net/send.h", 14)
    hits = _SourceHits(demote_tests=True)
    hits.nodes = {n.key: n for n in (prototype, C_SEND, lonely)}
    hits.vector = [(C_SEND.key, 0.5), (prototype.key, 0.45), (lonely.key, 0.45)]
    hits.keyword = [prototype.key, lonely.key, C_SEND.key]
    hits.keyword_score = {prototype.key: 40.0, lonely.key: 40.0, C_SEND.key: 30.0}
    as_main = SearchConfig(fusion=dataclasses.replace(SearchConfig().fusion, declaration=1.0))
    assert [s.node.key for s in _fuse(hits, AnchorSet(), as_main)][:2] == [lonely.key, prototype.key]
    ranked = [s.node.key for s in _fuse(hits, AnchorSet(), SearchConfig())]
    assert ranked == [lonely.key, C_SEND.key, prototype.key], "the prototype drops below its definition"


def test_the_shipped_model_ranks_a_held_out_answer_above_the_decoy_the_fusion_puts_first() -> None:
    """A project no model was trained on: both sources put a class first, the asked method second."""
    model = shipped_model()
    assert model != FUSION_ALONE and len(model.trained_on) >= 10, "the shipped weights are trained"
    assert "uploader" not in model.trained_on
    policy = _node("RetryPolicy", "pkg/policy.py", 3, kind="class")
    answer = _node("upload_with_backoff", "pkg/uploader.py", 40, kind="method", parent=24)
    candidates = [Candidate(policy, 1.05, 0.55, 1, 40.0, 1), Candidate(answer, 0.875, 0.5, 2, 30.0, 2)]
    query = "upload a file again with backoff when it fails"
    matrix = feature_matrix(candidates, _facts(query), candidate_graph([], {}))
    fusion, learned = FUSION_ALONE.score(matrix), model.score(matrix)
    assert fusion[0] > fusion[1], "the fusion alone puts the class first"
    assert learned[1] > learned[0], "the trained model puts the method whose name holds the query's words first"
    hits = _SourceHits(demote_tests=True)
    hits.nodes = {policy.key: policy, answer.key: answer}
    hits.vector = [(policy.key, 0.55), (answer.key, 0.5)]
    hits.keyword = [policy.key, answer.key]
    hits.keyword_score = {policy.key: 40.0, answer.key: 30.0}
    scores = {c.node.key: float(s) for c, s in zip(candidates, learned, strict=True)}
    off = _fuse(hits, AnchorSet(), SearchConfig(learned_ranker=False))
    on = _fuse(hits, AnchorSet(), SearchConfig(), lambda fused: scores)
    assert [s.node.key for s in off] == [policy.key, answer.key]
    assert [s.node.key for s in on] == [answer.key, policy.key]
