"""Persistent per-root index behind one interface (interface.py); the embedded store is SQLite + hnswlib (sqlite/)."""

from lensmux.graph.index.builder.indexer import Indexer
from lensmux.graph.index.builder.preparing.chunking import ChunkConfig, ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol
from lensmux.graph.index.config import IndexConfig
from lensmux.graph.index.errors import (
    EmbeddingFailed,
    IndexCorrupt,
    IndexLocked,
    IndexSchemaMismatch,
    IndexStoreError,
    RootNotIndexed,
)
from lensmux.graph.index.interface import IndexReader, IndexWriter, VectorReader, VectorWriter
from lensmux.graph.index.location import default_store_dir
from lensmux.graph.index.progress import IndexStatus, ProgressSnapshot
from lensmux.graph.index.protocols import Embedder, SymbolSource
from lensmux.graph.index.records import ChunkRecord, FileRecord, IndexCounts, SymbolRecord
from lensmux.graph.index.sqlite.store import Store
from lensmux.graph.index.sqlite.vectors import HnswParams, VectorIndex

__all__ = [
    "ChunkConfig",
    "ChunkDraft",
    "ChunkRecord",
    "Embedder",
    "EmbeddingFailed",
    "FileRecord",
    "HnswParams",
    "IndexConfig",
    "IndexCorrupt",
    "IndexCounts",
    "IndexLocked",
    "IndexReader",
    "IndexSchemaMismatch",
    "IndexStatus",
    "IndexStoreError",
    "IndexWriter",
    "Indexer",
    "LspRange",
    "ParsedSymbol",
    "ProgressSnapshot",
    "RootNotIndexed",
    "Store",
    "SymbolRecord",
    "SymbolSource",
    "VectorIndex",
    "VectorReader",
    "VectorWriter",
    "default_store_dir",
]
