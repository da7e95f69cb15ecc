"""A keyword list whose best hit matched only common words counts for less (FusionWeights.strength)."""

from __future__ import annotations

import dataclasses

from lensmux.graph.index import LspRange
from lensmux.graph.search import FusionWeights, SearchConfig
from lensmux.graph.search.candidates.anchors import AnchorSet
from lensmux.graph.search.candidates.seeds import _fuse, _SourceHits
from lensmux.graph.search.catalog import Node

_SPAN = LspRange(0, 0, 3, 0)


def _node(name: str) -> Node:
    return Node(
        key=name, name=name, qualified_name=name, kind="function", path="pkg/m.py", range=_SPAN, selection=_SPAN
    )


def _hits(best_bm25: float) -> _SourceHits:
    """The vector side ranks `is_readable` first; the keyword side ranks `load_file` first (matched on `file`)."""
    hits = _SourceHits(demote_tests=True)
    hits.nodes = {n: _node(n) for n in ("is_readable", "load_file")}
    hits.vector = [("is_readable", 0.62), ("load_file", 0.55)]
    hits.keyword = ["load_file"]
    hits.keyword_score = {"load_file": best_bm25}
    return hits


def _first(hits: _SourceHits, strength: float) -> str:
    config = SearchConfig(fusion=dataclasses.replace(FusionWeights(), coverage=0.0, strength=strength))
    return _fuse(hits, AnchorSet(), config)[0].node.key


def test_a_weak_best_keyword_hit_no_longer_outranks_the_vector_answer() -> None:
    assert _first(_hits(best_bm25=3.0), strength=0.0) == "load_file", "off: the best keyword hit counts 1"
    assert _first(_hits(best_bm25=3.0), strength=25.0) == "is_readable"


def test_a_strong_best_keyword_hit_keeps_its_full_weight() -> None:
    assert _first(_hits(best_bm25=30.0), strength=25.0) == "load_file"
