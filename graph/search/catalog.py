"""Graph nodes, and one query's memoised view of the index they come from.

A node is an indexed symbol, or, for text no server structured (a module outline, a
README window), the chunk itself. Every lookup the pipeline repeats (a file's language
and text, the symbol enclosing a line) is asked of SQLite once per query. All methods
may be called from worker threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlparse

from lensmux.graph.index import ChunkRecord, FileRecord, IndexReader, LspRange, SymbolRecord
from lensmux.graph.index.builder.preparing.chunking import split_lines
from lensmux.graph.index.builder.preparing.document_symbols import TYPE_KINDS

log = logging.getLogger(__name__)

__all__ = ["Catalog", "Node", "node_key"]

K = TypeVar("K")
V = TypeVar("V")


def node_key(path: str, qualified_name: str, line: int) -> str:
    """The deterministic id of a node: `<path>:<qualified name>:<0-based start line>`."""
    return f"{path}:{qualified_name}:{line}"


@dataclass(frozen=True, slots=True)
class Node:
    """A symbol (symbol_id set) or a structure-less chunk (chunk_id set) in the search graph."""

    key: str
    name: str
    qualified_name: str
    kind: str
    path: str
    range: LspRange
    selection: LspRange
    symbol_id: int | None = None
    parent_id: int | None = None
    chunk_id: int | None = None

    @property
    def expandable(self) -> bool:
        """Only symbols have a position a language server can answer about."""
        return self.symbol_id is not None


def symbol_node(sym: SymbolRecord) -> Node:
    """The node of an indexed symbol."""
    return Node(
        key=node_key(sym.path, sym.qualified_name, sym.range.start_line),
        name=sym.name,
        qualified_name=sym.qualified_name,
        kind=sym.kind,
        path=sym.path,
        range=sym.range,
        selection=sym.selection_range,
        symbol_id=sym.id,
        parent_id=sym.parent_id,
    )


def chunk_node(chunk: ChunkRecord) -> Node:
    """The node of a chunk that belongs to no symbol (whole lines, end exclusive)."""
    return Node(
        key=node_key(chunk.path, chunk.name, chunk.start_line),
        name=chunk.name,
        qualified_name=chunk.name,
        kind=chunk.kind,
        path=chunk.path,
        range=LspRange(chunk.start_line, 0, chunk.end_line + 1, 0),
        selection=LspRange(chunk.start_line, 0, chunk.start_line, 0),
        chunk_id=chunk.id,
    )


class Catalog:
    """Per-query memo over one root's index."""

    def __init__(self, store: IndexReader, root: Path) -> None:
        self.store = store
        self.root = root
        self._lock = threading.Lock()
        self._files: dict[str, FileRecord | None] = {}
        self._lines: dict[str, list[str] | None] = {}
        self._symbols: dict[int, SymbolRecord | None] = {}
        self._enclosing: dict[tuple[str, int], Node | None] = {}

    def _memo(self, table: dict[K, V], key: K, compute: Callable[[], V]) -> V:
        with self._lock:
            if key in table:
                return table[key]
        value = compute()
        with self._lock:
            return table.setdefault(key, value)

    # -- nodes ----------------------------------------------------------------------------

    def symbol(self, symbol_id: int) -> SymbolRecord | None:
        """One symbol by id."""
        return self._memo(self._symbols, symbol_id, lambda: self.store.symbol(symbol_id))

    def nodes_of_chunks(self, chunk_ids: Iterable[int]) -> list[tuple[int, Node]]:
        """(chunk id, node) for each chunk that still exists, in the order given."""
        out: list[tuple[int, Node]] = []
        for chunk in self.store.chunks(chunk_ids):
            sym = self.symbol(chunk.symbol_id) if chunk.symbol_id is not None else None
            out.append((chunk.id, symbol_node(sym) if sym is not None else chunk_node(chunk)))
        return out

    def symbol_at(self, path: str, line: int) -> Node | None:
        """The node of the innermost indexed symbol holding the 0-based line."""

        def compute() -> Node | None:
            sym = self.store.enclosing_symbol(path, line)
            return symbol_node(sym) if sym is not None else None

        return self._memo(self._enclosing, (path, line), compute)

    def parent_node(self, node: Node) -> Node | None:
        """The node of the symbol's parent (class of a method, ...)."""
        if node.parent_id is None:
            return None
        parent = self.symbol(node.parent_id)
        return symbol_node(parent) if parent is not None else None

    # -- files ------------------------------------------------------------------------------

    def file(self, path: str) -> FileRecord | None:
        """The indexed file, or None."""
        return self._memo(self._files, path, lambda: self.store.file(path))

    def language(self, path: str) -> str | None:
        """The file's LSP languageId, or None when it is not indexed."""
        record = self.file(path)
        return record.language if record is not None else None

    def path_of_uri(self, uri: object) -> str | None:
        """The root-relative path of an indexed file:// URI, or None."""
        if not isinstance(uri, str):
            return None
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return None
        rel = self.store.relative(Path(unquote(parsed.path)))
        if rel is None or self.file(rel) is None:
            return None
        return rel

    def lines(self, path: str) -> list[str] | None:
        """The file's lines as indexed, or None when it changed since (positions would be off)."""
        return self._memo(self._lines, path, lambda: self._read_lines(path))

    def _read_lines(self, path: str) -> list[str] | None:
        record = self.file(path)
        if record is None:
            return None
        full = self.root / path
        try:
            stat = full.stat()
            if (stat.st_mtime_ns, stat.st_size) != (record.mtime_ns, record.size):
                return None
            data = full.read_bytes()
        except OSError as exc:
            log.debug("cannot read %s: %s", full, exc)
            return None
        return split_lines(data.decode("utf-8", errors="replace"))

    def raw_code(self, node: Node, max_lines: int) -> str:
        """The node's source: class outline from the index, else the file's lines, else the chunks."""
        if node.chunk_id is not None:
            chunk = self.store.chunk(node.chunk_id)
            return chunk.code if chunk is not None else ""
        chunks = self.store.chunks_for_symbol(node.symbol_id) if node.symbol_id is not None else []
        if node.kind in TYPE_KINDS and len(chunks) == 1:
            return chunks[0].code  # the outline: header, fields, member signatures
        lines = self.lines(node.path)
        if lines is not None and node.range.start_line < len(lines):
            last = min(node.range.last_line, len(lines) - 1, node.range.start_line + max_lines - 1)
            return "\n".join(lines[node.range.start_line : last + 1])
        return "\n".join(c.code for c in chunks)
