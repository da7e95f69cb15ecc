"""Tunables of the search pipeline, the per-call settings after a request's overrides, and the query context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy
import numpy.typing as npt

from lensmux.graph.index import IndexReader, VectorReader
from lensmux.graph.search.api import SearchRequest
from lensmux.graph.search.catalog import Catalog
from lensmux.graph.search.gateway import LspCalls
from lensmux.graph.search.ranker import RankerModel

__all__ = [
    "DEFAULT_GENERIC_NAMES",
    "EdgeWeights",
    "EmbedQuery",
    "FusionWeights",
    "QueryContext",
    "QuerySettings",
    "SearchConfig",
    "Weights",
]

# Names so common that a node carrying one links everything to everything; they are
# never reached by expansion and dropped from clusters unless the query itself found them.
DEFAULT_GENERIC_NAMES = frozenset(
    {
        "__init__", "__repr__", "__str__", "__eq__", "__hash__", "__call__", "__enter__", "__exit__",
        "__post_init__", "__len__", "__iter__", "__getitem__", "__setitem__", "__contains__",
        "init", "main", "log", "logger", "print", "printf", "fprintf", "puts", "debug", "info", "warn",
        "warning", "error", "get", "set", "put", "len", "size", "str", "repr", "tostring", "equals",
        "hashcode", "format", "append", "close", "open", "read", "write", "run", "new", "delete",
        "free", "malloc", "assert", "require", "check", "self", "this", "value", "values", "items",
        "keys", "update", "copy", "clear",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Weights:
    """Rerank weights: text relevance, personalised-PageRank centrality, proximity to the seeds."""

    w1: float = 0.4
    w2: float = 0.35
    w3: float = 0.25


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """How stage 1 fuses its sources, and the share some kinds of text keep.

    `method` "convex" (the default) adds the sources' scores: vector * cosine +
    keyword * BM25 / the query's best BM25, so a source that is sure of its first answer
    counts more than one that merely ranks it first; "rrf" adds weight / (rrf_k + rank).
    C and C++ chunks use `keyword_c` for their keyword side: the embedding model reads
    their code worse than Python's, where identifiers carry most of the meaning.
    The keyword side is also scaled by the share of the query's words its best hits
    contain (to the power `coverage`): a web-style question that shares one word with
    the code gets first places from BM25 that mean little.

    `prose` scales both contributions of a chunk no language server structured (README,
    reST, plain text windows): such a chunk matches English queries on its words alone
    and has no symbol to expand, so at equal rank a function should win over it. `tests`
    does the same for test code unless the query asks about tests: test functions exercise
    the code a question is about and repeat its words, but are rarely what is asked for.

    method, vector: chosen by leave-one-project-out cross-validation over nine projects
    (bench/search/crossval.py; docs/benchmarks.md, "Hybrid search"); coverage: the same
    (1 on 7 of 9 folds). keyword (with keyword_c at 5x it, as the C cross-validation chose)
    and strength: the same over the nine projects and CoSQA, among the settings that keep
    the hybrid at or above its own best single strategy on every one (`--floor`): keyword
    0.5 and strength 40 on 8 of the 10 folds; without that floor the nine choose strength
    30, which leaves CoSQA below its vector-only ranking. `tests`
    and `prose` are set by judgement (the benchmark's answers are all library code, so it
    would drive the test share to 0) and their effect is reported separately.
    """

    method: str = "convex"
    vector: float = 1.0
    keyword: float = 0.5
    keyword_c: float = 2.5
    # The keyword side is scaled by (share of the query's words its best hits contain) ** coverage;
    # 0 turns this off (graph/search/candidates/coverage.py).
    coverage: float = 1.0
    # The keyword side is scaled by min(1, the query's best BM25 / strength): a best keyword
    # hit that matched only common words (a low BM25 in absolute terms) counts for less than
    # one that matched rare ones. 0 turns this off.
    strength: float = 40.0
    prose: float = 0.5
    tests: float = 0.5
    # Share kept by a C/C++ header's symbol whose name a candidate outside the headers also
    # has (a prototype beside its definition): chosen leaving each of seven C/C++ projects
    # out (bench/search/c_fusion.py; 0.25 or 0.5 on every fold, within 0.001 of each other).
    declaration: float = 0.5
    # Bonus of a class a weak mention (a capitalised word) names, in first places of a source;
    # 0 (tuned): such words name projects and products as often as classes.
    mention: float = 0.0


@dataclass(frozen=True, slots=True)
class EdgeWeights:
    """Weight of each edge type in the graph (used by clustering and PageRank)."""

    calls: float = 1.0
    inherits: float = 1.0
    references: float = 0.6
    contains: float = 0.4

    def of(self, kind: str) -> float:
        """The weight of one edge type."""
        return float(getattr(self, kind))


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Engine-wide defaults; a request may override ranking weights, depth and resolution."""

    rrf_k: int = 60
    fusion: FusionWeights = field(default_factory=FusionWeights)
    # Stage 1 scores its fused candidates with the learned linear ranker (ranker.py) instead of
    # the fusion's sum alone; ranker_model None is the shipped ranker_weights.json.
    learned_ranker: bool = True
    ranker_model: RankerModel | None = None
    # Chunks asked of each source per query, as a multiple of top_k (before collapsing to
    # symbols; tuned on flask): deeper lists let a candidate both sources rank fairly well
    # collect both contributions.
    keyword_depth: float = 3.0
    vector_depth: float = 5.0
    # Floor of both lists in chunks: with top_k up to min_list_chunks / depth the lists, and so
    # the fused order, are the same whatever top_k is (a request for 100 starts like one for 10).
    min_list_chunks: int = 100
    # Fused candidates that go on to expansion and rerank, as a multiple of top_k (anchors always do).
    seeds_kept: float = 3.0
    weights: Weights = field(default_factory=Weights)
    # Expansion defaults are seed 003's; the daemon ships tuned ones ([daemon.search] in
    # daemon/config.py: depth 1, 5 seeds, 0.5 s), see docs/benchmarks.md.
    max_graph_depth: int = 2
    max_nodes: int = 100
    max_in_flight: int = 10
    request_timeout_s: float = 2.0
    # The whole expansion stage stops after this long and keeps what it has.
    expansion_budget_s: float = 1.0
    # workspace/symbol for identifiers the index does not know; part of stage 1.
    anchor_timeout_s: float = 1.0
    # Seeds expanded besides the explicitly named symbols (always expanded), best first.
    expand_seeds: int = 10
    # Graph neighbours (same-file siblings, callers, callees) of the first neighbour_from ranked
    # functions fill every other place of the answer after its first neighbour_protect
    # (neighbours.py); only when the graph stages run (depth > 0). neighbour_from 0 turns it off.
    # Off by default: at 10 (set by judgement: stage 1's misses on the localization benchmark
    # sat in files of its first 20) it brought 4 changed functions into the first 20 and pushed
    # 7 out over 59 commits, recall@20 -0.003 (docs/benchmarks.md, "Graph neighbours in the answer").
    neighbour_from: int = 0
    neighbour_protect: int = 10
    # Neighbours kept per relation of one node (references, callers, callees), after sorting.
    max_neighbors: int = 25
    # Ask references for functions too (their callers already come from the call hierarchy).
    callable_references: bool = False
    # Call sites looked at when outgoing calls are derived from a symbol's text.
    max_derived_calls: int = 20
    # Read and store what expansion learns in the index (graph/index/sqlite/learned.py), and let
    # the daemon learn ahead once no editor has sent anything for learn_quiet_s.
    learn_graph: bool = True
    learn_quiet_s: float = 5.0
    # After a client spoke while learning was under way (and so may have waited behind a
    # learning request), the quiet waited for doubles, up to this; it falls back to
    # learn_quiet_s with a half-life of ten minutes (daemon/search/graph_learning.py).
    learn_quiet_max_s: float = 300.0
    # Learning's requests in flight at once at each server (the learner has a lane per server).
    # A server answers one request at a time, so every one of them queued ahead of a client's
    # question delays it; one keeps the server as busy.
    learn_in_flight: int = 1
    # Bound on a search's wait for the index to take in the changes known before it (the
    # daemon's part; the engine itself never waits).
    fresh_wait_s: float = 1.0
    clustering_resolution: float = 1.0
    random_state: int = 42
    pagerank_alpha: float = 0.85
    # PageRank restarts at a seed with weight exp(-(1 - relevance) / T); see rerank.py.
    restart_temperature: float = 0.2
    edges: EdgeWeights = field(default_factory=EdgeWeights)
    generic_names: frozenset[str] = DEFAULT_GENERIC_NAMES
    # Symbols one identifier in the query may anchor, and symbols one named file may anchor.
    max_symbol_anchors: int = 5
    max_file_anchors: int = 20
    max_reasons: int = 8
    # raw_code of a symbol is cut after this many lines.
    max_code_lines: int = 400


@dataclass(frozen=True, slots=True)
class QuerySettings:
    """The knobs one search runs with: the config with the request's overrides applied."""

    top_k: int
    weights: Weights
    max_graph_depth: int
    clustering_resolution: float
    neighbour_from: int

    @classmethod
    def of(cls, request: SearchRequest, config: SearchConfig) -> QuerySettings:
        """Merge a request's overrides over the config."""
        weights = config.weights
        depth = config.max_graph_depth
        resolution = config.clustering_resolution
        neighbours = config.neighbour_from
        overrides = request.config_overrides
        if overrides is not None:
            given = overrides.ranking_weights
            if given is not None:
                weights = Weights(
                    weights.w1 if given.w1 is None else given.w1,
                    weights.w2 if given.w2 is None else given.w2,
                    weights.w3 if given.w3 is None else given.w3,
                )
            depth = depth if overrides.max_graph_depth is None else overrides.max_graph_depth
            if overrides.clustering_resolution is not None:
                resolution = overrides.clustering_resolution
            if overrides.neighbour_from is not None:
                neighbours = overrides.neighbour_from
        return cls(request.top_k, weights, depth, resolution, neighbours)


EmbedQuery = Callable[[str], npt.NDArray[numpy.float32]]


@dataclass(frozen=True, slots=True)
class QueryContext:
    """One query's index, servers, memo and settings."""

    query: str
    store: IndexReader
    vectors: VectorReader
    catalog: Catalog
    lsp: LspCalls
    embed_query: EmbedQuery | None
    config: SearchConfig
    settings: QuerySettings
