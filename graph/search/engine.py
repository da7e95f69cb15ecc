"""The hybrid search: seeds, live expansion, graph, clusters, rerank; one call per query.

Architecture Invariant: search() never fails because of a language server. A missing
server, an open breaker, a failed or slow request, or the expansion budget running out
put the reason in `warnings`; the answer then rests on what stage 1 (and any partial
expansion) found. It is `degraded: true` only when a server that should answer was
unavailable or answered nothing (or vectors are missing), not for a file type no server
is configured for, nor for a budget that ran out while servers answered. Only a bad
request or an unreadable index raise.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio.to_thread

from lensmux.graph.index import IndexReader, IndexStoreError, RootNotIndexed, VectorReader
from lensmux.graph.search.answer.context import qualified_name
from lensmux.graph.search.answer.neighbours import fill
from lensmux.graph.search.answer.rerank import Scores, rerank
from lensmux.graph.search.api import (
    ClusterResult,
    Position,
    Range,
    SearchRequest,
    SearchResponse,
    StageTiming,
    SymbolResult,
)
from lensmux.graph.search.candidates.anchors import TIER_SYMBOL
from lensmux.graph.search.candidates.seeds import SeedSet, collect_seeds
from lensmux.graph.search.catalog import Catalog, Node
from lensmux.graph.search.config import EmbedQuery, QueryContext, QuerySettings, SearchConfig
from lensmux.graph.search.errors import RootNotReady, SearchFailed
from lensmux.graph.search.expansion.expand import Expansion, expand
from lensmux.graph.search.expansion.graph import Clustering, build_graph, cluster, containment
from lensmux.graph.search.expansion.memory import GraphMemory
from lensmux.graph.search.gateway import LspCalls, LspGateway

log = logging.getLogger(__name__)

__all__ = ["HybridSearchEngine", "SearchIndex"]


class SearchIndex(Protocol):
    """One root's index as the search reads it; lensmux.graph.index.Indexer is one."""

    @property
    def store(self) -> IndexReader:
        """Chunks, symbols, keywords and the learned graph (RootNotIndexed when closed)."""
        ...

    @property
    def vectors(self) -> VectorReader:
        """The chunks' vectors (RootNotIndexed when closed)."""
        ...


@dataclass(slots=True)
class _Ranked:
    order: list[str]
    scores: dict[str, Scores]
    clustering: Clustering
    # Graph neighbours the answer took in (neighbours.py): their nodes, reasons and communities.
    added: dict[str, Node] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)


class HybridSearchEngine:
    """Answers SearchRequests against one root's index and the daemon's language servers."""

    def __init__(
        self, gateway: LspGateway, *, embed_query: EmbedQuery | None = None, config: SearchConfig | None = None
    ) -> None:
        self.gateway = gateway
        self.embed_query = embed_query
        self.config = config or SearchConfig()

    async def search(
        self,
        request: SearchRequest,
        index: SearchIndex,
        *,
        indexing_in_progress: bool = False,
        coverage: float = 1.0,
        asked_live: Callable[[Sequence[int]], None] | None = None,
    ) -> SearchResponse:
        """Run the five stages; RootNotReady if the index is closed, SearchFailed if it cannot be read.

        `coverage` is the share of the root's files the index holds (the response says it);
        `asked_live` is given the symbols expansion had to ask the servers about, if any.
        """
        try:
            store, vectors = index.store, index.vectors
        except RootNotIndexed as exc:
            raise RootNotReady("root", str(exc)) from exc
        try:
            return await self._search(request, store, vectors, indexing_in_progress, coverage, asked_live=asked_live)
        except RootNotIndexed as exc:
            raise RootNotReady("root", str(exc)) from exc
        except IndexStoreError as exc:
            raise SearchFailed(f"reading the index of {store.root} failed: {exc}") from exc

    async def _search(
        self,
        request: SearchRequest,
        store: IndexReader,
        vectors: VectorReader,
        indexing: bool,
        coverage: float,
        *,
        asked_live: Callable[[Sequence[int]], None] | None,
    ) -> SearchResponse:
        started = time.perf_counter()
        config = self.config
        settings = QuerySettings.of(request, config)
        root = store.root
        lsp = LspCalls(self.gateway, root, max_in_flight=config.max_in_flight, timeout=config.request_timeout_s)
        ctx = QueryContext(request.query, store, vectors, Catalog(store, root), lsp, self.embed_query, config, settings)
        clock = _Clock()

        seeds = await collect_seeds(ctx)
        clock.lap("seeds")
        expansion = await self._expand(ctx, seeds)
        clock.lap("expansion")
        if asked_live is not None and expansion.asked_live:
            asked_live(expansion.asked_live)
        nodes = expansion.nodes
        relations = [*expansion.relations, *await anyio.to_thread.run_sync(containment, nodes, ctx.catalog)]
        graph = await anyio.to_thread.run_sync(build_graph, nodes, relations, config.edges)
        clock.lap("graph")
        seed_keys = {s.node.key for s in seeds.seeds}
        clustering = await anyio.to_thread.run_sync(
            lambda: cluster(
                graph,
                seeds=seed_keys,
                names={k: n.name for k, n in nodes.items()},
                generic=config.generic_names,
                resolution=settings.clustering_resolution,
                random_state=config.random_state,
            )
        )
        clock.lap("clustering")
        ranked = await anyio.to_thread.run_sync(self._rank, ctx, seeds, expansion, clustering)
        symbols = await anyio.to_thread.run_sync(self._symbols, ctx, seeds, expansion, ranked)
        clusters = _clusters(symbols, ranked)
        clock.lap("rerank")

        log.debug(
            "search %r in %s: %d seeds, %d nodes, %d relations, %d requests, %d clusters; %s",
            request.query, root, len(seeds.seeds), len(nodes), len(relations), lsp.requests_sent,
            len(clusters), clock.timing(),
        )  # fmt: skip
        warnings = list(seeds.warnings)
        if indexing:
            warnings.insert(
                0,
                f"{root} is still being indexed; results cover the {int(coverage * 100)}% of its files indexed so far",
            )
        warnings += expansion.warnings + lsp.warnings()
        if not seeds.seeds:
            warnings.append("nothing in the index matches the query")
        return SearchResponse(
            query_id="hs-" + uuid.uuid4().hex[:16],
            execution_time_ms=round((time.perf_counter() - started) * 1000, 2),
            timing=clock.timing(),
            # A budget that ran out while servers answered is a warning; silence is in lsp.degraded.
            degraded=lsp.degraded or seeds.vector_missing,
            warnings=warnings,
            results=clusters,
            ranked_symbols=symbols,
            root=str(root),
            coverage=coverage,
        )

    async def _expand(self, ctx: QueryContext, seeds: SeedSet) -> Expansion:
        nodes = [s.node for s in seeds.seeds]
        if ctx.settings.max_graph_depth == 0 or not nodes:
            return Expansion(nodes={n.key: n for n in nodes})
        generic = ctx.config.generic_names
        # Named symbols always; then the best expand_seeds others (a named file's symbols first).
        named = [s.node for s in seeds.seeds if s.tier >= TIER_SYMBOL]
        others = [s.node for s in seeds.seeds if s.tier < TIER_SYMBOL and s.node.name.lower() not in generic]
        return await expand(
            nodes,
            named + others[: ctx.config.expand_seeds],
            ctx.catalog,
            ctx.lsp,
            max_depth=ctx.settings.max_graph_depth,
            max_nodes=max(ctx.config.max_nodes, len(nodes)),
            max_neighbors=ctx.config.max_neighbors,
            max_derived=ctx.config.max_derived_calls,
            callable_references=ctx.config.callable_references,
            budget_s=ctx.config.expansion_budget_s,
            generic=generic,
            memory=GraphMemory(ctx.store, ctx.catalog, ctx.config.max_neighbors) if ctx.config.learn_graph else None,
        )

    @staticmethod
    def _rank(ctx: QueryContext, seeds: SeedSet, expansion: Expansion, clustering: Clustering) -> _Ranked:
        relevance = {s.node.key: s.relevance for s in seeds.seeds}
        tiers = {s.node.key: s.tier for s in seeds.seeds}
        scores = rerank(
            clustering.graph,
            clustering.usage,
            relevance,
            set(relevance),
            ctx.settings.weights,
            alpha=ctx.config.pagerank_alpha,
            temperature=ctx.config.restart_temperature,
        )
        # Anchors first (seed 001), then by score; the id breaks ties so the order is total.
        order = sorted(scores, key=lambda k: (-tiers.get(k, 0), -scores[k].score, k))
        explicit = sum(1 for k in order if tiers.get(k, 0) >= TIER_SYMBOL)
        settings = ctx.settings
        if settings.max_graph_depth == 0 or settings.neighbour_from == 0:
            return _Ranked(order[: max(settings.top_k, explicit)], scores, clustering)
        filled = fill(
            order,
            expansion.nodes,
            ctx.catalog,
            expansion.relations,
            relevance,
            top_k=settings.top_k,
            protect=ctx.config.neighbour_protect,
            from_top=settings.neighbour_from,
            anchored={k for k in order if tiers.get(k, 0) >= TIER_SYMBOL},
            generic=ctx.config.generic_names,
        )
        # A neighbour takes the place after a direct hit and shows that hit's score (so the
        # scores still read best first); its own factors stay in `scores` when it is in the graph.
        shown = dict(scores)
        for i, key in enumerate(filled.order):
            if key in filled.added:
                above = shown[filled.order[i - 1]].score if i else 0.0
                own = scores.get(key, Scores(relevance.get(key, 0.0), 0.0, 0.0, 0.0))
                shown[key] = Scores(own.text, own.centrality, own.proximity, above)
                if key not in clustering.community_of:
                    clustering.community_of[key] = clustering.community_of[filled.origin[key]]
        return _Ranked(filled.order, shown, clustering, filled.added, filled.reasons)

    @staticmethod
    def _symbols(ctx: QueryContext, seeds: SeedSet, expansion: Expansion, ranked: _Ranked) -> list[SymbolResult]:
        seed_reasons = {s.node.key: s.reasons for s in seeds.seeds}
        out: list[SymbolResult] = []
        for key in ranked.order:
            node = expansion.nodes.get(key) or ranked.added[key]
            found = [*ranked.reasons.get(key, []), *seed_reasons.get(key, []), *expansion.reasons.get(key, [])]
            reasons = found[: ctx.config.max_reasons]
            out.append(_symbol_result(node, ranked.scores[key].score, reasons, ctx.catalog, ctx.config.max_code_lines))
        return out


def _symbol_result(node: Node, score: float, reasons: list[str], catalog: Catalog, max_lines: int) -> SymbolResult:
    r = node.range
    return SymbolResult(
        id=node.key,
        name=node.name,
        kind=node.kind,
        file_path=node.path,
        range=Range(Position(r.start_line, r.start_char), Position(r.end_line, r.end_char)),
        score=round(score, 4),
        raw_code=catalog.raw_code(node, max_lines),
        reasons=reasons,
    )


def _clusters(symbols: Sequence[SymbolResult], ranked: _Ranked) -> list[ClusterResult]:
    """The returned symbols grouped by community, communities in order of their best member."""
    groups: dict[int, list[SymbolResult]] = {}
    for symbol in symbols:
        groups.setdefault(ranked.clustering.community_of[symbol.id], []).append(symbol)
    out: list[ClusterResult] = []
    for number, members in enumerate(groups.values()):
        out.append(ClusterResult(f"cluster_{number}", max(s.score for s in members), _title(members), members))
    return out


def _title(members: Sequence[SymbolResult]) -> str:
    best = members[0]
    name = qualified_name(best)
    files = sorted({s.file_path for s in members})
    if len(members) == 1:
        return f"{name} ({best.file_path})"
    if len(files) == 1:
        return f"{name} and {len(members) - 1} related in {best.file_path}"
    return f"{name} and {len(members) - 1} related in {len(files)} files"


class _Clock:
    """Milliseconds per stage."""

    def __init__(self) -> None:
        self._last = time.perf_counter()
        self._laps: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self._laps[stage] = round((now - self._last) * 1000, 2)
        self._last = now

    def timing(self) -> StageTiming:
        laps: Mapping[str, float] = self._laps
        return StageTiming(**{stage: laps.get(stage, 0.0) for stage in StageTiming.__struct_fields__})
