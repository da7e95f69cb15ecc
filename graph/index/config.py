"""Tunables of the indexer, with defaults that suit a laptop-sized repository."""

from __future__ import annotations

from dataclasses import dataclass, field

from lensmux.graph.index.builder.files.walk import DEFAULT_MAX_FILE_BYTES
from lensmux.graph.index.builder.preparing.chunking import ChunkConfig
from lensmux.graph.index.builder.runs.order import FaultHold
from lensmux.graph.index.sqlite.vectors import HnswParams


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Everything the Indexer can be tuned with."""

    chunks: ChunkConfig = field(default_factory=ChunkConfig)
    hnsw: HnswParams = field(default_factory=HnswParams)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    # Directory names skipped in addition to .git, venvs, node_modules, caches.
    extra_skipped_dirs: frozenset[str] = frozenset()
    # Texts per embedder call; each call runs in a worker thread.
    embed_batch: int = 256
    # Embedder calls in flight at once during a full run: with two, one call's tokenising,
    # pooling and onnxruntime's serial stretches overlap the other's run, and embedding
    # goes on while a batch is written (docs/benchmarks.md, "Where the indexing pipeline idled").
    embed_concurrency: int = 2
    # documentSymbol requests (and file reads) in flight at once.
    symbol_concurrency: int = 8
    symbol_timeout_s: float = 30.0
    # A transaction holds at most this many files or (roughly) this many chunks.
    commit_files: int = 64
    commit_chunks: int = 512
    # During a full run the vector file is saved (whole) once the graph has gained save_growth
    # times the elements it held at the last save, at most every save_interval_s, and at the
    # end: each save is then paid for by the vectors added since the one before, so a run's
    # saves cost time linear in its length (a fixed interval made it quadratic: every minute
    # the whole, ever larger file). Vectors not saved when the process dies are embedded again
    # on the next open, from the vector cache. 0 and 0: every batch.
    save_interval_s: float = 60.0
    save_growth: float = 0.25
    # After single-file updates, vectors are saved once nothing changed for this long.
    save_debounce_s: float = 5.0
    # Rewrite the FTS5 index whole when the chunks deleted from it since the last time reach
    # this share of its chunks (Store.optimize_keywords), after a full run or quiet updates.
    keyword_optimize_share: float = 0.5
    # Rebuild the HNSW graph when more than this share of its elements is deleted.
    compact_fraction: float = 0.2
    compact_min_deleted: int = 64
    # watchfiles debounce (ms) and how often the watcher wakes up when idle (ms).
    watch_debounce_ms: int = 400
    watch_tick_ms: int = 500
    # Fault injection for tests only: hold full runs in the middle (order.FaultHold).
    fault_hold: FaultHold | None = None
