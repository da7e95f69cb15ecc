"""Hybrid search pipeline: seeds, live expansion, graph, clusters, rerank, context.

The daemon's entry points:

- ``parse_request(json_bytes_or_dict) -> SearchRequest`` (BadSearchRequest with .field/.reason)
- ``select_root(request.root, indexed, pending=...) -> (root, index)``
- ``HybridSearchEngine(gateway, embed_query=..., config=...).search(request, index) -> SearchResponse``
- ``assemble_context(response.ranked_symbols, budget_tokens=..., count_tokens=..., fmt=...)``
- ``learn_round(index, gateway, config, after=..., limit=...) -> LearnRound`` (when servers are quiet)
"""

from lensmux.graph.search.answer.context import AssembledContext, ContextFormat, ContextSource, assemble_context
from lensmux.graph.search.api import (
    ClusterResult,
    Overrides,
    Position,
    Range,
    RankingWeights,
    SearchRequest,
    SearchResponse,
    StageTiming,
    SymbolResult,
    parse_request,
    select_root,
)
from lensmux.graph.search.config import EdgeWeights, EmbedQuery, FusionWeights, SearchConfig, Weights
from lensmux.graph.search.engine import HybridSearchEngine, SearchIndex
from lensmux.graph.search.errors import (
    BadSearchRequest,
    GatewayError,
    RootNotReady,
    SearchError,
    SearchFailed,
    UnknownRoot,
)
from lensmux.graph.search.gateway import LspGateway, NoServer
from lensmux.graph.search.learn import LearnRound, learn_round

__all__ = [
    "AssembledContext",
    "BadSearchRequest",
    "ClusterResult",
    "ContextFormat",
    "ContextSource",
    "EdgeWeights",
    "EmbedQuery",
    "FusionWeights",
    "GatewayError",
    "HybridSearchEngine",
    "LearnRound",
    "LspGateway",
    "NoServer",
    "Overrides",
    "Position",
    "Range",
    "RankingWeights",
    "RootNotReady",
    "SearchConfig",
    "SearchError",
    "SearchFailed",
    "SearchIndex",
    "SearchRequest",
    "SearchResponse",
    "StageTiming",
    "SymbolResult",
    "UnknownRoot",
    "Weights",
    "assemble_context",
    "learn_round",
    "parse_request",
    "select_root",
]
