"""Requests: what the socket, HTTP and CLI accept, and the reasons they give for what they refuse."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from lensmux.graph.search import (
    BadSearchRequest,
    Overrides,
    RankingWeights,
    RootNotReady,
    SearchRequest,
    UnknownRoot,
    parse_request,
    select_root,
)
from lensmux.graph.search.config import QuerySettings, SearchConfig, Weights


def test_full_request_decodes_and_overrides_merge_over_defaults() -> None:
    req = parse_request(
        b'{"query": "retry uploads", "root": "/r", "top_k": 5,'
        b' "config_overrides": {"ranking_weights": {"w1": 0.6}, "max_graph_depth": 1, "clustering_resolution": 0.5}}'
    )
    assert req.query == "retry uploads" and req.root == "/r" and req.top_k == 5
    settings = QuerySettings.of(req, SearchConfig())
    assert settings.weights == Weights(0.6, 0.35, 0.25), "omitted weights keep their defaults"
    assert (settings.max_graph_depth, settings.clustering_resolution, settings.top_k) == (1, 0.5, 5)


def test_minimal_request_takes_defaults_from_a_dict_too() -> None:
    req = parse_request({"query": "x"})
    assert req == SearchRequest(query="x")
    assert QuerySettings.of(req, SearchConfig()).max_graph_depth == 2


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (b'{"query": "   "}', "query", "empty"),
        (b'{"query": "x", "top_k": 0}', "top_k", "between 1 and 100"),
        (b'{"query": "x", "top_k": 101}', "top_k", "between 1 and 100"),
        (b'{"query": "x", "top_k": "10"}', "top_k", "Expected `int`"),
        (b'{"query": "x", "top_k": true}', "top_k", "Expected `int`"),
        (b'{"query": 3}', "query", "Expected `str`"),
        (b'{"top_k": 3}', None, "missing required field `query`"),
        (b'{"query": "x", "topk": 3}', None, "unknown field `topk`"),
        (b'{"query": "x", "root": ""}', "root", "empty"),
        (b'{"query": "x", "config_overrides": {"max_graph_depth": 4}}', "config_overrides.max_graph_depth", "0 and 3"),
        (
            b'{"query": "x", "config_overrides": {"clustering_resolution": 0}}',
            "config_overrides.clustering_resolution",
            "> 0",
        ),
        (
            b'{"query": "x", "config_overrides": {"ranking_weights": {"w2": -1}}}',
            "config_overrides.ranking_weights.w2",
            ">= 0",
        ),
        (
            b'{"query": "x", "config_overrides": {"ranking_weights": {"w1": 0, "w2": 0, "w3": 0}}}',
            "config_overrides.ranking_weights",
            "> 0",
        ),
        (b'{"query": "x"', None, "malformed JSON"),
        (b"[1, 2]", None, "Expected `object`"),
    ],
)
def test_bad_requests_name_the_field_and_the_reason(body: bytes, field: str | None, words: str) -> None:
    with pytest.raises(BadSearchRequest) as info:
        parse_request(body)
    assert info.value.field == field
    assert words in info.value.reason
    assert info.value.http_status == 400
    assert info.value.as_dict()["reason"] == info.value.reason


def test_requests_built_in_code_are_checked_like_decoded_ones() -> None:
    with pytest.raises(BadSearchRequest) as info:
        SearchRequest(query="x", top_k=1000)
    assert info.value.field == "top_k"
    with pytest.raises(BadSearchRequest):
        Overrides(max_graph_depth=-1)
    with pytest.raises(BadSearchRequest):
        RankingWeights(w3=float("nan"))


def test_request_round_trips_through_json() -> None:
    req = SearchRequest(query="q", top_k=3, config_overrides=Overrides(ranking_weights=RankingWeights(w1=1.0)))
    assert parse_request(msgspec.json.encode(req)) == req


def test_root_is_optional_only_when_exactly_one_root_is_indexed(tmp_path: Path) -> None:
    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    assert select_root(None, {a: "A"}) == (a, "A")
    with pytest.raises(BadSearchRequest) as several:
        select_root(None, {a: "A", b: "B"})
    assert several.value.field == "root" and str(a) in several.value.reason
    with pytest.raises(UnknownRoot) as none:
        select_root(None, {})
    assert none.value.http_status == 404
    with pytest.raises(RootNotReady) as pending:
        select_root(None, {}, pending=[a])
    assert pending.value.http_status == 409


def test_root_inside_an_indexed_root_selects_the_deepest_one(tmp_path: Path) -> None:
    outer, inner = tmp_path.resolve(), (tmp_path / "inner").resolve()
    (inner / "src").mkdir(parents=True)
    indexed = {outer: "outer", inner: "inner"}
    assert select_root(str(inner / "src"), indexed) == (inner, "inner")
    assert select_root(str(outer), indexed) == (outer, "outer")
    with pytest.raises(UnknownRoot):
        select_root("/definitely/not/indexed", indexed)
    with pytest.raises(BadSearchRequest) as relative:
        select_root("relative/dir", indexed)
    assert "absolute" in relative.value.reason


def test_known_root_without_an_index_is_not_ready_rather_than_unknown(tmp_path: Path) -> None:
    indexed_root, waiting = (tmp_path / "ready").resolve(), (tmp_path / "waiting").resolve()
    with pytest.raises(RootNotReady):
        select_root(str(waiting), {indexed_root: 1}, pending=[waiting])
