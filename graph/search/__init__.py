"""Hybrid search pipeline: seeds, live expansion, graph, clusters, rerank, context.

The daemon's entry points:

- ``parse_request(json_bytes_or_dict) -> SearchRequest`` (BadSearchRequest with .field/.reason)
- ``select_root(request.root, indexed, pending=...) -> (root, index)``
- ``HybridSearchEngine(gateway, embed_query=..., config=...).search(request, index) -> SearchResponse``
- ``assemble_context(response.ranked_symbols, budget_tokens=..., count_tokens=..., fmt=...)``
- ``learn_round(index, gateway, config, after=..., limit=...) -> LearnRound`` (when servers are quiet)

Importing the package, or one of its modules (the command line's `search_view` imports
`answer.reasons`), loads none of the pipeline: each name of `__all__` is imported when first used
(`__getattr__`), so `lensmux search` does not load numpy, networkx and the index builder
before it asks the daemon.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lensmux.graph.search.answer.context import (
        AssembledContext,
        ContextFormat,
        ContextSource,
        assemble_context,
    )
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
    from lensmux.graph.search.config import (
        EdgeWeights,
        EmbedQuery,
        FusionWeights,
        SearchConfig,
        Weights,
    )
    from lensmux.graph.search.engine import (
        HybridSearchEngine,
        SearchIndex,
    )
    from lensmux.graph.search.errors import (
        BadSearchRequest,
        GatewayError,
        RootNotReady,
        SearchError,
        SearchFailed,
        UnknownRoot,
    )
    from lensmux.graph.search.gateway import (
        LspGateway,
        NoServer,
    )
    from lensmux.graph.search.learn import (
        LearnRound,
        learn_round,
    )

# Where each name of __all__ is defined.
_HOMES = {
    "AssembledContext": "lensmux.graph.search.answer.context",
    "ContextFormat": "lensmux.graph.search.answer.context",
    "ContextSource": "lensmux.graph.search.answer.context",
    "assemble_context": "lensmux.graph.search.answer.context",
    "ClusterResult": "lensmux.graph.search.api",
    "Overrides": "lensmux.graph.search.api",
    "Position": "lensmux.graph.search.api",
    "Range": "lensmux.graph.search.api",
    "RankingWeights": "lensmux.graph.search.api",
    "SearchRequest": "lensmux.graph.search.api",
    "SearchResponse": "lensmux.graph.search.api",
    "StageTiming": "lensmux.graph.search.api",
    "SymbolResult": "lensmux.graph.search.api",
    "parse_request": "lensmux.graph.search.api",
    "select_root": "lensmux.graph.search.api",
    "EdgeWeights": "lensmux.graph.search.config",
    "EmbedQuery": "lensmux.graph.search.config",
    "FusionWeights": "lensmux.graph.search.config",
    "SearchConfig": "lensmux.graph.search.config",
    "Weights": "lensmux.graph.search.config",
    "HybridSearchEngine": "lensmux.graph.search.engine",
    "SearchIndex": "lensmux.graph.search.engine",
    "BadSearchRequest": "lensmux.graph.search.errors",
    "GatewayError": "lensmux.graph.search.errors",
    "RootNotReady": "lensmux.graph.search.errors",
    "SearchError": "lensmux.graph.search.errors",
    "SearchFailed": "lensmux.graph.search.errors",
    "UnknownRoot": "lensmux.graph.search.errors",
    "LspGateway": "lensmux.graph.search.gateway",
    "NoServer": "lensmux.graph.search.gateway",
    "LearnRound": "lensmux.graph.search.learn",
    "learn_round": "lensmux.graph.search.learn",
}


def __getattr__(name: str) -> Any:
    """A name of __all__, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


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
