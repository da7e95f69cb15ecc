"""Stage 1: vector and keyword candidates fused by their scores, with the query's anchors in front.

Fusion (FusionWeights.method "convex", the default): score(node) = share(node) *
(vector * cosine + keyword * coverage^c * strength * BM25 / the query's best BM25), each
source counting a node's best chunk; share is 1 except for unstructured text and test code
(FusionWeights.prose, .tests; tests keep 1 when the query is about tests), C and C++
chunks use keyword_c, and coverage is the share of the query's words the best keyword
hits contain (coverage.py) and strength is min(1, the query's best BM25 / FusionWeights.strength):
a keyword list whose best hit matched only common words counts for less. "rrf" adds
weight / (rrf_k + rank) per source instead.
The weights were chosen by leave-one-project-out cross-validation over nine projects
(docs/benchmarks.md, "Hybrid search"). Both lists are at least min_list_chunks deep
whatever top_k is, so a candidate both sources rank fairly well collects both terms and
the order does not change with top_k; the best seeds_kept * top_k go on to expansion,
anchors always. Text relevance rescales the fused score min-max over the candidates:
the best has 1, the weakest 0, so a long tail of weak vector hits does not become strong
PageRank restart points. Anchors form tiers above every fused candidate (seed 001:
semantic never outranks explicit); an explicitly named symbol has relevance 1, a
symbol of a named file at least 0.5.

Keyword side: the query's words, their inflections and (SearchConfig.vocabulary) the
words code writes for them, query_text.py. Vector side: with FusionWeights.feedback > 0
the query vector moves towards its first fused candidates and asks the index again
(feedback.py), so a function the keyword side found lends its neighbourhood to the
vector side.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
import numpy
import numpy.typing as npt

from lensmux.graph.search.anchors import (
    REASON_MENTION,
    TIER_FILE,
    TIER_NONE,
    AnchorSet,
    extract_mentions,
    resolve_mentions,
    resolve_with_workspace_symbols,
)
from lensmux.graph.search.catalog import Node
from lensmux.graph.search.config import QueryContext, SearchConfig
from lensmux.graph.search.coverage import coverage
from lensmux.graph.search.feedback import feedback_vector
from lensmux.graph.search.query_text import (
    STOP_WORDS,
    keyword_expression,
    query_terms,
    query_words,
    related_expression,
)

log = logging.getLogger(__name__)

__all__ = [
    "STOP_WORDS",
    "Seed",
    "SeedSet",
    "collect_seeds",
    "is_test_path",
    "keyword_expression",
    "query_terms",
    "query_words",
]

_FILE_ANCHOR_FLOOR = 0.5
# Keyword hits whose text is compared with the query's words (FusionWeights.coverage).
_COVERAGE_HITS = 10
# The kind of chunk the index makes of text no language server structures.
PROSE_KIND = "file"


_WORD = re.compile(r"\w+")
# C and C++ sources: the embedding model reads their code worse than Python's, so their
# keyword side has a weight of its own (FusionWeights.keyword_c).
_C_FAMILY = (".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx")
_TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "e2e"})
# A query with one of these is about tests: test code keeps its full share then.
_TEST_WORDS = frozenset(
    {"test", "tests", "testing", "tested", "spec", "specs", "fixture", "fixtures", "pytest", "unittest"}
)


@dataclass(slots=True)
class Seed:
    """A stage-1 candidate: relevance in [0, 1], tier > 0 for anchors, and why it is here."""

    node: Node
    relevance: float
    fused: float
    tier: int
    reasons: list[str]


@dataclass(slots=True)
class SeedSet:
    """Stage 1's answer, best first (tier, then fused score, then id)."""

    seeds: list[Seed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    vector_missing: bool = False


@dataclass(slots=True)
class _SourceHits:
    demote_tests: bool
    nodes: dict[str, Node] = field(default_factory=dict)
    vector: list[tuple[str, float]] = field(default_factory=list)  # (node key, best similarity), best first
    keyword: list[str] = field(default_factory=list)  # node keys, best first
    keyword_score: dict[str, float] = field(default_factory=dict)  # node key -> its best chunk's BM25
    keyword_coverage: float = 1.0  # share of the query's words the best keyword hits contain
    chunk_of: dict[str, int] = field(default_factory=dict)  # node key -> its best chunk of either source


def _collapse(pairs: Sequence[tuple[int, Node]], nodes: dict[str, Node]) -> list[str]:
    keys: list[str] = []
    for _, node in pairs:
        nodes.setdefault(node.key, node)
        if node.key not in keys:
            keys.append(node.key)
    return keys


def is_test_path(path: str) -> bool:
    """Whether a root-relative path is test code (a test folder, or a test file by its name)."""
    *folders, name = path.lower().split("/")
    if any(folder in _TEST_FOLDERS for folder in folders):
        return True
    stem = name.rsplit(".", 1)[0]
    return stem.startswith("test_") or stem.endswith(("_test", "_tests", ".test", ".spec")) or stem == "conftest"


def _asks_for_tests(query: str) -> bool:
    return any(word.lower() in _TEST_WORDS for word in _WORD.findall(query))


def _vector_scale(vector: list[tuple[str, float]], how: str) -> Callable[[float], float]:
    """The vector term of one similarity: as it is, relative to the best, or min-max over the list."""
    top = max((similarity for _, similarity in vector), default=0.0)
    low = min((similarity for _, similarity in vector), default=0.0)
    if how == "relative" and top > 0:
        return lambda similarity: similarity / top
    if how == "minmax" and top > low:
        return lambda similarity: (similarity - low) / (top - low)
    return lambda similarity: similarity


def _scores(hits: _SourceHits, config: SearchConfig) -> tuple[dict[str, float], dict[str, list[str]]]:
    """The two sources' fused score per node (convex or RRF), and the reasons of each."""
    fused: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    fusion = config.fusion

    def share(key: str) -> float:
        node = hits.nodes[key]
        if node.kind == PROSE_KIND:
            return fusion.prose
        return fusion.tests if hits.demote_tests and is_test_path(node.path) else 1.0

    convex = fusion.method == "convex"
    top_bm25 = max(hits.keyword_score.values(), default=0.0)
    # How strong the keyword side's best hit is in absolute terms (BM25 sums the idf of the
    # query words it matched): a query whose best hit matched only common words keeps less weight.
    strength = min(1.0, top_bm25 / fusion.strength) if fusion.strength > 0 else 1.0
    scale = _vector_scale(hits.vector, fusion.vector_scale)
    for rank, (key, similarity) in enumerate(hits.vector, 1):
        term = max(0.0, scale(similarity)) if convex else 1.0 / (config.rrf_k + rank)
        fused[key] = fused.get(key, 0.0) + share(key) * fusion.vector * term
        reasons.setdefault(key, []).append(f"seed:vector:{similarity:.2f}")
    for rank, key in enumerate(hits.keyword, 1):
        weight = fusion.keyword_c if hits.nodes[key].path.endswith(_C_FAMILY) else fusion.keyword
        if fusion.coverage > 0:
            weight *= hits.keyword_coverage**fusion.coverage
        weight *= strength
        if convex:
            # BM25 has no fixed scale: the query's best keyword hit counts 1, like a perfect cosine.
            term = hits.keyword_score.get(key, 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        else:
            term = 1.0 / (config.rrf_k + rank)
        fused[key] = fused.get(key, 0.0) + share(key) * weight * term
        reasons.setdefault(key, []).append(f"seed:keyword:{rank}")
    return fused, reasons


def _fuse(hits: _SourceHits, anchors: AnchorSet, config: SearchConfig) -> list[Seed]:
    """The sources fused (convex or RRF), anchors in their tiers; ordered best first."""
    fused, reasons = _scores(hits, config)
    fusion = config.fusion
    for key in anchors.weak if fusion.mention > 0 else ():
        # A weak mention counts like a first place in one more source.
        fused[key] = fused.get(key, 0.0) + fusion.mention / (config.rrf_k + 1)
        reasons.setdefault(key, []).insert(0, REASON_MENTION)
    tiers = _anchor_tiers(anchors, fused, config)
    best = max(fused.values(), default=0.0)
    worst = min(fused.values(), default=0.0)
    seeds: list[Seed] = []
    for key in set(fused) | set(tiers):
        node = anchors.nodes.get(key) or hits.nodes[key]
        score = fused.get(key, 0.0)
        relevance = (score - worst) / (best - worst) if best > worst else (1.0 if score > 0 else 0.0)
        tier = tiers.get(key, 0)
        if tier > TIER_FILE:
            relevance = 1.0
        elif tier == TIER_FILE:
            relevance = max(relevance, _FILE_ANCHOR_FLOOR)
        why = (anchors.reasons.get(key, []) if tier else []) + reasons.get(key, [])
        seeds.append(Seed(node, relevance, score, tier, why))
    seeds.sort(key=lambda s: (-s.tier, -s.fused, s.node.key))
    return seeds


def _anchor_tiers(anchors: AnchorSet, fused: dict[str, float], config: SearchConfig) -> dict[str, int]:
    """Per named symbol its best max_symbol_anchors definitions, per named file its best max_file_anchors.

    Best is by fused score, then in the order the index or server listed them: a name
    defined in many places anchors the definitions the rest of the query points at.
    """
    chosen: set[str] = set()
    limits = ((anchors.symbol_groups, config.max_symbol_anchors), (anchors.file_groups, config.max_file_anchors))
    for groups, limit in limits:
        for group in groups:
            ranked = sorted(enumerate(group), key=lambda item: (-fused.get(item[1], 0.0), item[0]))
            chosen.update(key for _, key in ranked[:limit])
    return {key: anchors.tiers[key] for key in chosen if anchors.tiers[key] > TIER_NONE}


def _list_depth(depth: float, top_k: int, config: SearchConfig) -> int:
    """Chunks asked of one source: at least min_list_chunks, so the first answers never depend on top_k."""
    return max(config.min_list_chunks, round(depth * top_k))


def _vector_side(hits: _SourceHits, ctx: QueryContext, vector: npt.NDArray[numpy.float32], depth: int) -> None:
    """The vector list for one query vector: per node its best similarity (and that chunk), best first."""
    found = ctx.vectors.search(vector, depth)
    similarity = dict(found)
    best: dict[str, float] = {}
    for chunk_id, node in ctx.catalog.nodes_of_chunks(cid for cid, _ in found):
        hits.nodes.setdefault(node.key, node)
        if similarity[chunk_id] > best.get(node.key, -2.0):
            best[node.key] = similarity[chunk_id]
            hits.chunk_of[node.key] = chunk_id
    hits.vector = [(key, best[key]) for key in dict.fromkeys(best)]


def _with_feedback(hits: _SourceHits, ctx: QueryContext, vector: npt.NDArray[numpy.float32], depth: int) -> None:
    """Ask the vector index again with the query moved towards its first fused candidates."""
    fusion = ctx.config.fusion
    if fusion.feedback_from == "vector":
        first = [key for key, _ in hits.vector[: fusion.feedback_depth]]
    else:
        fused, _ = _scores(hits, ctx.config)
        first = sorted(fused, key=lambda key: (-fused[key], key))[: fusion.feedback_depth]
    stored = ctx.vectors.vectors(hits.chunk_of[key] for key in first if key in hits.chunk_of)
    if stored:
        _vector_side(hits, ctx, feedback_vector(vector, list(stored.values()), fusion.feedback), depth)


def _keyword_hits(ctx: QueryContext, depth: int) -> list[tuple[int, float]]:
    """BM25 of the query's own words, plus vocabulary_weight times that of their related words."""
    config = ctx.config
    expression = keyword_expression(ctx.query)
    if expression is None:
        return []
    found = ctx.store.fts_search(expression, depth, config.keyword_columns)
    related = related_expression(ctx.query, config.vocabulary) if config.vocabulary_weight > 0 else None
    if related is None:
        return found
    scores = dict(found)
    for chunk_id, score in ctx.store.fts_search(related, depth, config.keyword_columns):
        scores[chunk_id] = scores.get(chunk_id, 0.0) + config.vocabulary_weight * score
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:depth]


def _index_side(ctx: QueryContext, out: SeedSet) -> tuple[_SourceHits, AnchorSet]:
    """Everything stage 1 asks the index (blocking: runs in a worker thread)."""
    query, top_k, catalog, config = ctx.query, ctx.settings.top_k, ctx.catalog, ctx.config
    embed_query, vectors = ctx.embed_query, ctx.vectors
    hits = _SourceHits(demote_tests=not _asks_for_tests(query))
    anchors = resolve_mentions(extract_mentions(query), catalog, max_symbols=config.max_symbol_anchors)
    keyword = _keyword_hits(ctx, _list_depth(config.keyword_depth, top_k, config))
    if keyword:
        bm25 = dict(keyword)
        pairs = catalog.nodes_of_chunks(cid for cid, _ in keyword)
        hits.keyword = _collapse(pairs, hits.nodes)
        for chunk_id, node in pairs:
            hits.keyword_score[node.key] = max(hits.keyword_score.get(node.key, 0.0), bm25[chunk_id])
            hits.chunk_of.setdefault(node.key, chunk_id)
        if config.fusion.coverage > 0:
            top_hits = ctx.store.chunks(cid for cid, _ in keyword[:_COVERAGE_HITS])
            words = query_words(query, config.vocabulary)
            hits.keyword_coverage = coverage(words, (chunk.text for chunk in top_hits))
    if embed_query is None:
        out.vector_missing = True
        out.warnings.append("vector search unavailable: no embedding model loaded; keyword and anchors only")
    elif len(vectors) == 0:
        out.vector_missing = True
        out.warnings.append("vector search unavailable: no vectors in the index yet; keyword and anchors only")
    else:
        depth = _list_depth(config.vector_depth, top_k, config)
        try:
            vector = embed_query(query)
            _vector_side(hits, ctx, vector, depth)
            if config.fusion.feedback > 0 and config.fusion.feedback_depth > 0:
                _with_feedback(hits, ctx, vector, depth)
        except Exception as exc:  # the model or index may be broken; keyword search still answers
            log.warning("vector search failed", exc_info=True)
            out.vector_missing = True
            out.warnings.append(f"vector search failed ({type(exc).__name__}: {exc}); keyword and anchors only")
    return hits, anchors


async def collect_seeds(ctx: QueryContext) -> SeedSet:
    """Stage 1: anchors, keyword and vector candidates, fused."""
    out = SeedSet()
    hits, anchors = await anyio.to_thread.run_sync(_index_side, ctx, out)
    catalog, config = ctx.catalog, ctx.config
    if anchors.unresolved:
        keys = list(hits.nodes) + list(anchors.nodes)
        nodes = {**hits.nodes, **anchors.nodes}
        # Languages of the symbols found so far: text no server structures (README, reST)
        # has no server to ask, and asking would only mark the answer degraded.
        symbols = [nodes[key] for key in keys if nodes[key].expandable]
        languages = await anyio.to_thread.run_sync(
            lambda: {lang for node in symbols if (lang := catalog.language(node.path)) is not None}
        )
        with anyio.move_on_after(config.anchor_timeout_s):
            await resolve_with_workspace_symbols(
                anchors, catalog, ctx.lsp, languages, max_symbols=config.max_symbol_anchors
            )
        for mention in anchors.unresolved:
            if mention.explicit or mention.kind == "file":
                out.warnings.append(
                    f"`{mention.text}` names no indexed {'file' if mention.kind == 'file' else 'symbol'}"
                )
    fused = _fuse(hits, anchors, config)
    # The lists are deep so that fusion sees both ranks of a candidate; the graph only needs
    # the best of them (anchors always stay).
    keep = max(1, round(config.seeds_kept * ctx.settings.top_k))
    out.seeds = [seed for i, seed in enumerate(fused) if i < keep or seed.tier > TIER_NONE]
    return out
