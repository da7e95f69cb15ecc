"""Plain records the store reads and writes."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import LspRange, ParsedSymbol


@dataclass(frozen=True, slots=True)
class FileRecord:
    """An indexed file; structure is 'lsp', 'none' (no server) or 'failed' (retried)."""

    id: int
    path: str
    language: str
    sha256: str
    mtime_ns: int
    size: int
    structure: str
    indexed_at: float


@dataclass(frozen=True, slots=True)
class SymbolRecord:
    """A stored symbol; lines and characters are 0-based LSP positions."""

    id: int
    path: str
    name: str
    qualified_name: str
    kind: str
    detail: str | None
    container: str | None
    parent_id: int | None
    depth: int
    range: LspRange
    selection_range: LspRange


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A stored chunk; its id is also its vector label; end_line is inclusive."""

    id: int
    path: str
    language: str
    symbol_id: int | None
    kind: str
    name: str
    start_line: int
    end_line: int
    text: str
    tokens: int

    @property
    def code(self) -> str:
        """The chunk text without its one-line header."""
        return self.text.split("\n", 1)[1] if "\n" in self.text else ""


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What the indexer compares to decide whether a file needs work."""

    sha256: str
    mtime_ns: int
    size: int
    structure: str


@dataclass(frozen=True, slots=True)
class FileWrite:
    """Everything stored for one file, replacing what was there."""

    path: str
    language: str
    sha256: str
    mtime_ns: int
    size: int
    structure: str
    symbols: Sequence[ParsedSymbol]
    chunks: Sequence[ChunkDraft]
    tokens: Sequence[int]
    # The identifiers the text spells: learned relations of symbols it names are forgotten.
    mentions: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class VectorPointer:
    """Which vector file belongs to this database, and how to check it."""

    file: str
    generation: int
    sha256: str
    size: int
    dim: int
    count: int


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """Row counts kept in the meta table."""

    files: int
    symbols: int
    chunks: int


class WriteResult:
    """Chunk ids dropped by a write, the chunk ids of each written file, and which of those it kept.

    A kept chunk is a row the write left in place (the embedded store keeps a rewritten
    file's unchanged chunks): its vector is already in the index under that id.
    """

    __slots__ = ("kept_chunk_ids", "new_chunk_ids", "removed_chunk_ids")

    def __init__(self, removed: list[int], new: list[list[int]], kept: Collection[int] = ()) -> None:
        self.removed_chunk_ids = removed
        self.new_chunk_ids = new
        self.kept_chunk_ids = frozenset(kept)
