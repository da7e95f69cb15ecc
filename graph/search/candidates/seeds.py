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
symbol of a named file at least 0.5. The query's words: query_text.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
import numpy
import numpy.typing as npt

from lensmux.graph.search.candidates.anchors import (
    REASON_MENTION,
    TIER_FILE,
    TIER_NONE,
    AnchorSet,
    extract_mentions,
    resolve_mentions,
    resolve_with_workspace_symbols,
)
from lensmux.graph.search.candidates.coverage import coverage
from lensmux.graph.search.candidates.query_text import STOP_WORDS, WORD, keyword_expression, query_terms, query_words
from lensmux.graph.search.catalog import Node
from lensmux.graph.search.config import QueryContext, SearchConfig
from lensmux.graph.search.ranker import (
    C_FAMILY,
    HEADERS,
    Candidate,
    QueryFacts,
    candidate_graph,
    feature_matrix,
    graph_candidates,
    shipped_model,
)

log = logging.getLogger(__name__)

__all__ = [
    "STOP_WORDS",
    "LearningRows",
    "Seed",
    "SeedSet",
    "collect_seeds",
    "is_test_path",
    "keyword_expression",
    "learning_rows",
    "query_terms",
    "query_words",
]

_FILE_ANCHOR_FLOOR = 0.5
# Keyword hits whose text is compared with the query's words (FusionWeights.coverage).
_COVERAGE_HITS = 10
# The kind of chunk the index makes of text no language server structures.
PROSE_KIND = "file"


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
    chunk_of: dict[str, int] = field(default_factory=dict)  # node key -> its best chunk (keyword side first)


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
    return any(word.lower() in _TEST_WORDS for word in WORD.findall(query))


def _convex(
    hits: _SourceHits, anchors: AnchorSet, config: SearchConfig
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """The sources fused (convex or RRF): node key -> score, and the reasons of each."""
    fused: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    fusion = config.fusion

    # Names some candidate outside the C/C++ headers defines: a header's symbol of such a name
    # is its declaration, and the definition is what is asked for (FusionWeights.declaration).
    defined = (
        {n.name for n in hits.nodes.values() if not n.path.endswith(HEADERS)} if fusion.declaration != 1 else set()
    )

    def share(key: str) -> float:
        node = hits.nodes[key]
        if node.kind == PROSE_KIND:
            kept = fusion.prose
        else:
            kept = fusion.tests if hits.demote_tests and is_test_path(node.path) else 1.0
        return kept * fusion.declaration if node.name in defined and node.path.endswith(HEADERS) else kept

    convex = fusion.method == "convex"
    top_bm25 = max(hits.keyword_score.values(), default=0.0)
    # How strong the keyword side's best hit is in absolute terms (BM25 sums the idf of the
    # query words it matched): a query whose best hit matched only common words keeps less weight.
    strength = min(1.0, top_bm25 / fusion.strength) if fusion.strength > 0 else 1.0
    for rank, (key, similarity) in enumerate(hits.vector, 1):
        term = max(0.0, similarity) if convex else 1.0 / (config.rrf_k + rank)
        fused[key] = fused.get(key, 0.0) + share(key) * fusion.vector * term
        reasons.setdefault(key, []).append(f"seed:vector:{similarity:.2f}")
    for rank, key in enumerate(hits.keyword, 1):
        weight = fusion.keyword_c if hits.nodes[key].path.endswith(C_FAMILY) else fusion.keyword
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
    for key in anchors.weak if fusion.mention > 0 else ():
        # A weak mention counts like a first place in one more source.
        fused[key] = fused.get(key, 0.0) + fusion.mention / (config.rrf_k + 1)
        reasons.setdefault(key, []).insert(0, REASON_MENTION)
    return fused, reasons


def _candidates(hits: _SourceHits, anchors: AnchorSet, fused: dict[str, float]) -> list[Candidate]:
    """What the learned ranker reads of each fused candidate, in key order."""
    cosine = dict(hits.vector)
    vector_rank = {key: rank for rank, (key, _) in enumerate(hits.vector, 1)}
    keyword_rank = {key: rank for rank, key in enumerate(hits.keyword, 1)}
    out: list[Candidate] = []
    for key in sorted(fused):
        node = hits.nodes.get(key) or anchors.nodes[key]
        out.append(
            Candidate(
                node,
                fused[key],
                cosine.get(key),
                vector_rank.get(key),
                hits.keyword_score.get(key),
                keyword_rank.get(key),
                mention=key in anchors.weak,
                test=hits.demote_tests and is_test_path(node.path),
            )
        )
    return out


def _facts(query: str, hits: _SourceHits) -> QueryFacts:
    return QueryFacts(
        words=query_words(query),
        best_cosine=max((max(0.0, c) for _, c in hits.vector), default=0.0),
        best_bm25=max(hits.keyword_score.values(), default=0.0),
        coverage=hits.keyword_coverage,
    )


def _learned_rows(ctx: QueryContext, hits: _SourceHits, anchors: AnchorSet, fused: dict[str, float]) -> LearningRows:
    candidates = _candidates(hits, anchors, fused)
    best = graph_candidates([c for c in candidates if c.node.key in hits.chunk_of])
    chunks = {chunk.id: chunk.text for chunk in ctx.store.chunks(hits.chunk_of[c.node.key] for c in best)}
    texts = {c.node.key: chunks.get(hits.chunk_of[c.node.key], "") for c in best}
    graph = candidate_graph(best, texts)
    return LearningRows(candidates, feature_matrix(candidates, _facts(ctx.query, hits), graph))


def _learned(ctx: QueryContext, hits: _SourceHits, anchors: AnchorSet, fused: dict[str, float]) -> dict[str, float]:
    """The learned ranker's scores, shifted so the weakest candidate has 0 (like a missing source)."""
    rows = _learned_rows(ctx, hits, anchors, fused)
    if not rows.candidates:
        return fused
    model = ctx.config.ranker_model or shipped_model()
    scores = model.score(rows.matrix)
    low = float(scores.min())
    return {c.node.key: float(score) - low for c, score in zip(rows.candidates, scores, strict=True)}


def _fuse(
    hits: _SourceHits,
    anchors: AnchorSet,
    config: SearchConfig,
    rescore: Callable[[dict[str, float]], dict[str, float]] | None = None,
) -> list[Seed]:
    """The sources fused (convex or RRF, then `rescore`: the learned ranker), anchors in their tiers; best first."""
    fused, reasons = _convex(hits, anchors, config)
    if rescore is not None:
        fused = rescore(fused)
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


@dataclass(frozen=True, slots=True)
class LearningRows:
    """One query's fused candidates and their feature rows (graph/search/ranker.py)."""

    candidates: list[Candidate]
    matrix: npt.NDArray[numpy.float64]


def learning_rows(ctx: QueryContext) -> LearningRows:
    """The learned ranker's input for one query, as stage 1 builds it (blocking; no language server).

    For training (bench/search/train_ranker.py): the same candidates and features the
    search scores, from the index alone (names the index does not know stay unresolved).
    """
    hits, anchors = _index_side(ctx, SeedSet())
    fused, _ = _convex(hits, anchors, ctx.config)
    return _learned_rows(ctx, hits, anchors, fused)


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


def _index_side(ctx: QueryContext, out: SeedSet) -> tuple[_SourceHits, AnchorSet]:
    """Everything stage 1 asks the index (blocking: runs in a worker thread)."""
    query, top_k, catalog, config = ctx.query, ctx.settings.top_k, ctx.catalog, ctx.config
    embed_query, vectors = ctx.embed_query, ctx.vectors
    hits = _SourceHits(demote_tests=not _asks_for_tests(query))
    anchors = resolve_mentions(extract_mentions(query), catalog, max_symbols=config.max_symbol_anchors)
    expression = keyword_expression(query)
    if expression is not None:
        keyword = ctx.store.fts_search(expression, _list_depth(config.keyword_depth, top_k, config))
        bm25 = dict(keyword)
        pairs = catalog.nodes_of_chunks(cid for cid, _ in keyword)
        hits.keyword = _collapse(pairs, hits.nodes)
        for chunk_id, node in pairs:
            if bm25[chunk_id] > hits.keyword_score.get(node.key, float("-inf")):
                hits.keyword_score[node.key] = bm25[chunk_id]
                hits.chunk_of[node.key] = chunk_id
        if config.fusion.coverage > 0:
            top_hits = ctx.store.chunks(cid for cid, _ in keyword[:_COVERAGE_HITS])
            hits.keyword_coverage = coverage(query_words(query), (chunk.text for chunk in top_hits))
    if embed_query is None:
        out.vector_missing = True
        out.warnings.append("vector search unavailable: no embedding model loaded; keyword and anchors only")
    elif len(vectors) == 0:
        out.vector_missing = True
        out.warnings.append("vector search unavailable: no vectors in the index yet; keyword and anchors only")
    else:
        try:
            found = vectors.search(embed_query(query), _list_depth(config.vector_depth, top_k, config))
        except Exception as exc:  # the model or index may be broken; keyword search still answers
            log.warning("vector search failed", exc_info=True)
            out.vector_missing = True
            out.warnings.append(f"vector search failed ({type(exc).__name__}: {exc}); keyword and anchors only")
        else:
            similarity = dict(found)
            best: dict[str, float] = {}
            for chunk_id, node in catalog.nodes_of_chunks(cid for cid, _ in found):
                hits.nodes.setdefault(node.key, node)
                if similarity[chunk_id] > best.get(node.key, -2.0):
                    best[node.key] = similarity[chunk_id]
                    if node.key not in hits.keyword_score:
                        hits.chunk_of[node.key] = chunk_id
            hits.vector = [(key, best[key]) for key in dict.fromkeys(best)]
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
    rescore = (lambda fused: _learned(ctx, hits, anchors, fused)) if config.learned_ranker else None
    fused = await anyio.to_thread.run_sync(_fuse, hits, anchors, config, rescore)
    # The lists are deep so that fusion sees both ranks of a candidate; the graph only needs
    # the best of them (anchors always stay).
    keep = max(1, round(config.seeds_kept * ctx.settings.top_k))
    out.seeds = [seed for i, seed in enumerate(fused) if i < keep or seed.tier > TIER_NONE]
    return out
