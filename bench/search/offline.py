"""The single strategies, in process over the index the daemon built (after the daemon has stopped).

- keyword: the FTS5 expression the search itself issues (graph.search.candidates.seeds.keyword_expression)
  through Store.fts_search, BM25 with the index's column weights;
- vector: the query's MiniLM embedding through the index's hnswlib file;
- stage 1: HybridSearchEngine with no language server and depth 0, i.e. the fused seeds
  (anchors, keyword, vector) as the daemon would rank them before expansion. This is what
  the fusion weights are tuned on, because it needs no daemon restart per setting.

Chunks are collapsed to the symbols that own them (first occurrence wins), as stage 1
does, then cut at 10.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from lensmux.graph.embedding.embedder import Embedder
from lensmux.graph.index import HnswParams, Store, VectorIndex
from lensmux.graph.index.builder.preparing.chunking import CHUNK_TEXT_VERSION
from lensmux.graph.index.sqlite.persistence import IndexFiles
from lensmux.graph.search import GatewayError, HybridSearchEngine, Overrides, SearchConfig, SearchRequest
from lensmux.graph.search.candidates.seeds import keyword_expression
from lensmux.graph.search.catalog import Catalog, Node

__all__ = ["NullGateway", "OfflineIndex", "model_id"]

CUTOFF = 10
# Chunks asked per single-strategy query: enough that 10 distinct symbols survive collapsing.
CHUNKS = 60


class NullGateway:
    """No language server at all: stage 1 only."""

    def unavailable_reason(self, root: Path, language: str) -> str | None:
        """Always unavailable."""
        return "offline evaluation: no language server"

    def answers_settled(self, root: Path, language: str) -> bool:
        """Nothing is asked, so nothing is learned."""
        return False

    async def capabilities(self, root: Path, language: str) -> Mapping[str, Any]:
        """Never reached (unavailable)."""
        raise GatewayError("offline evaluation: no language server")

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        """Never reached (unavailable)."""
        raise GatewayError("offline evaluation: no language server")


def _ranked(nodes: Sequence[tuple[int, Node]]) -> list[tuple[str, int]]:
    seen: dict[str, tuple[str, int]] = {}
    for _, node in nodes:
        seen.setdefault(node.key, (node.path, node.range.start_line))
        if len(seen) == CUTOFF:
            break
    return list(seen.values())


def model_id(embedder: Embedder) -> str:
    """The model id the daemon stores its index under (name, precision, builder): another one rebuilds it."""
    info = embedder.info()
    if info.manifest is None:
        return f"{info.name} chunks {CHUNK_TEXT_VERSION}"
    return f"{info.name} {info.precision} builder {info.manifest.builder_version} chunks {CHUNK_TEXT_VERSION}"


def stored_model_id(store_dir: Path) -> str | None:
    """The model id an index was built under (None if there is none yet).

    The offline reader opens an index under the id it has, never a newer one: a
    mismatch would make the store start over, wiping the index a daemon built.
    """
    path = store_dir / "index.sqlite"
    if not path.is_file():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'model_id'").fetchone()
    return None if row is None else str(row[0])


class OfflineIndex:
    """One root's index opened read-mostly in this process."""

    def __init__(self, store_dir: Path, root: Path, embedder: Embedder) -> None:
        self.root = root.resolve()
        self.embedder = embedder
        self._files = IndexFiles.open(
            store_dir,
            self.root,
            model_id=stored_model_id(store_dir) or model_id(embedder),
            dim=embedder.dim,
            hnsw=HnswParams(),
            note=lambda message: None,
        )
        self.vector_ms: list[float] = []

    @property
    def store(self) -> Store:
        """The SQLite side."""
        return self._files.store

    @property
    def vectors(self) -> VectorIndex:
        """The hnswlib side."""
        return self._files.vectors

    def close(self) -> None:
        """Close the database."""
        self._files.close()

    def keyword(self, query: str) -> list[tuple[str, int]]:
        """Keyword-only ranking."""
        expression = keyword_expression(query)
        if expression is None:
            return []
        hits = self.store.fts_search(expression, CHUNKS)
        return _ranked(Catalog(self.store, self.root).nodes_of_chunks(cid for cid, _ in hits))

    def vector(self, query: str) -> list[tuple[str, int]]:
        """Vector-only ranking; the embed + hnswlib time is kept in vector_ms."""
        started = time.perf_counter()
        found = self.vectors.search(self.embedder.embed_query(query), CHUNKS)
        self.vector_ms.append((time.perf_counter() - started) * 1000)
        return _ranked(Catalog(self.store, self.root).nodes_of_chunks(cid for cid, _ in found))

    def stage1(self, queries: Sequence[str], config: SearchConfig) -> list[list[tuple[str, int]]]:
        """The fused seeds (depth 0, no server) for each query, with `config`."""
        engine = HybridSearchEngine(NullGateway(), embed_query=self.embedder.embed_query, config=config)
        overrides = Overrides(max_graph_depth=0)

        async def run() -> list[list[tuple[str, int]]]:
            out: list[list[tuple[str, int]]] = []
            for query in queries:
                request = SearchRequest(query=query, top_k=CUTOFF, config_overrides=overrides)
                response = await engine.search(request, self)
                out.append([(s.file_path, s.range.start.line) for s in response.ranked_symbols][:CUTOFF])
            return out

        return anyio.run(run)
