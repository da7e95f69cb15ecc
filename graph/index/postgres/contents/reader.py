"""What search reads from one snapshot (repository, commit) of the team store.

The same questions, orders and tie-breaks as graph/index/sqlite/queries.py, over rows
filtered by snapshot; row-level security limits them further to the repositories the
connected role was granted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS
from lensmux.graph.index.identifiers import mentions
from lensmux.graph.index.interface import Learned, free_text_search
from lensmux.graph.index.location import relative_to_root
from lensmux.graph.index.postgres.contents import keyword, learned
from lensmux.graph.index.postgres.contents.cache import Lru, missing
from lensmux.graph.index.postgres.database.connection import Connection
from lensmux.graph.index.records import ChunkRecord, FileRecord, SymbolRecord
from lensmux.graph.index.rows import CHUNK_COLUMNS, FILE_COLUMNS, SYMBOL_COLUMNS, like_escape, symbol_from_row

_SYMBOL_COLUMNS, _CHUNK_COLUMNS, _FILE_COLUMNS = SYMBOL_COLUMNS, CHUNK_COLUMNS, FILE_COLUMNS
_CHUNKS = f"SELECT {_CHUNK_COLUMNS} FROM lensmux.chunks c JOIN lensmux.files f ON f.id = c.file_id"
_SYMBOLS = f"SELECT {_SYMBOL_COLUMNS} FROM lensmux.symbols s JOIN lensmux.files f ON f.id = s.file_id"
_DEFINITION_KINDS = sorted(CHUNKED_KINDS)


def chunk_record(row: tuple[Any, ...]) -> ChunkRecord:
    return ChunkRecord(*row)


@dataclass(slots=True)
class Mask:
    """Files a consumer's working tree changed: left out of every answer of the shared snapshot."""

    paths: list[str] = field(default_factory=list)
    chunk_ids: list[int] = field(default_factory=list)


class SnapshotQueries:
    """The read half of one snapshot's store; paths may be relative to the root or absolute under it."""

    def __init__(self, root: Path, snapshot: int, reader: Connection, mask: Mask | None = None) -> None:
        self.root = root
        self.snapshot = snapshot
        self._reader = reader
        # Shared with the snapshot's vectors (store.py), so both leave out the same chunks.
        self.mask = mask if mask is not None else Mask()
        # Records by id (cache.py): cleared by this store's writes (writer.py).
        self._symbol_cache: Lru[int, SymbolRecord | None] = Lru(32_768)
        self._chunk_cache: Lru[int, ChunkRecord] = Lru(8_192)
        self._symbol_chunk_cache: Lru[int, list[ChunkRecord]] = Lru(8_192)
        self._file_cache: Lru[str | None, FileRecord | None] = Lru(8_192)
        self._masked_words: frozenset[str] = frozenset()
        # What else keeps something of the snapshot's rows (its vectors' count and matrix, store.py).
        self._also_clear: list[Callable[[], None]] = []

    def clear_caches(self) -> None:
        """Forget every cached record (after a write), here and in whatever clear_also() named."""
        for cache in (self._symbol_cache, self._chunk_cache, self._symbol_chunk_cache, self._file_cache):
            cache.clear()
        for clear in self._also_clear:
            clear()

    def clear_also(self, clear: Callable[[], None]) -> None:
        """Call clear() whenever this store's caches are cleared: a write of files changes the vectors too."""
        self._also_clear.append(clear)

    def set_mask(self, paths: Collection[str]) -> None:
        """Answer from now on as if the files at these paths were not stored (graph/index/team/overlay.py)."""
        wanted = sorted(paths)
        rows = (
            self._rows(
                "mask files",
                "SELECT c.id, c.text FROM lensmux.chunks c JOIN lensmux.files f ON f.id = c.file_id"
                " WHERE f.snapshot = %s AND f.path = ANY(%s) ORDER BY c.id",
                (self.snapshot, wanted),
            )
            if wanted
            else []
        )
        self.mask.paths = wanted
        self.mask.chunk_ids = [int(r[0]) for r in rows]
        # What the masked files spelled here: a call the working tree removed is only in this text.
        self._masked_words = frozenset().union(*(mentions(str(r[1])) for r in rows))

    @property
    def masked_words(self) -> frozenset[str]:
        """The words the masked files' text spells here (overlay.py MaskedReader)."""
        return self._masked_words

    def relative(self, path: str | Path) -> str | None:
        """The POSIX path relative to the root, or None when path is outside it."""
        return relative_to_root(self.root, path)

    def _rows(self, what: str, query: str, params: Any) -> list[tuple[Any, ...]]:
        with self._reader.use(what) as conn:
            return conn.execute(query, params).fetchall()

    def keyword_search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """BM25 over chunk names, paths and text: (chunk_id, score), best (highest) first."""
        return free_text_search(self.fts_search, query, k)

    def fts_search(self, match: str, k: int = 20) -> list[tuple[int, float]]:
        """FTS5's bm25() over the postings (terms.py, keyword.py), highest first."""
        if k <= 0:
            return []
        with self._reader.use("keyword search") as conn:
            return keyword.bm25(conn, self.snapshot, match, k, self.mask.chunk_ids)

    def lookup_symbols(self, name: str, limit: int = 50) -> list[SymbolRecord]:
        """Symbols named name: exact, then case-insensitive, then qualified-suffix matches (as the embedded store)."""
        wanted = name.strip().replace("::", ".")
        if not wanted:
            return []
        last = wanted.rsplit(".", 1)[-1]
        params = {
            "s": self.snapshot,
            "q": wanted,
            "last": last,
            "suffix": "%." + like_escape(wanted),
            "limit": limit,
            "kinds": _DEFINITION_KINDS,
            "masked": self.mask.paths,
        }
        if "." in wanted:
            where = (
                "lower(s.name) = lower(%(last)s) AND (lower(s.qualified_name) = lower(%(q)s)"
                " OR s.qualified_name LIKE %(suffix)s)"
            )
        else:
            where = "lower(s.name) = lower(%(q)s)"
        query = (
            f"{_SYMBOLS} WHERE s.snapshot = %(s)s AND {where} AND NOT (f.path = ANY(%(masked)s)) ORDER BY"
            " CASE WHEN s.qualified_name = %(q)s THEN 0 WHEN s.name = %(q)s THEN 1"
            "      WHEN lower(s.qualified_name) = lower(%(q)s) THEN 2 ELSE 3 END,"
            ' s.kind <> ALL(%(kinds)s), f.path COLLATE "C", s.start_line LIMIT %(limit)s'
        )
        return [symbol_from_row(r) for r in self._rows("look up symbols", query, params)]

    def files_matching(self, path_fragment: str, limit: int = 50) -> list[FileRecord]:
        """Indexed files whose path contains the fragment (case-insensitive); exact names first."""
        fragment = path_fragment.strip().strip("/")
        if not fragment:
            return []
        query = (
            f"SELECT {_FILE_COLUMNS} FROM lensmux.files WHERE snapshot = %(s)s"
            " AND strpos(lower(path), lower(%(f)s)) > 0 AND NOT (path = ANY(%(masked)s))"
            " ORDER BY path = %(f)s DESC, right(path, length(%(f)s) + 1) = '/' || %(f)s DESC,"
            ' length(path), path COLLATE "C" LIMIT %(limit)s'
        )
        params = {"s": self.snapshot, "f": fragment, "limit": limit, "masked": self.mask.paths}
        rows = self._rows("match files", query, params)
        return [FileRecord(*r) for r in rows]

    def file(self, path: str | Path) -> FileRecord | None:
        """One indexed file."""
        rel = self.relative(path)

        def load() -> FileRecord | None:
            rows = self._rows(
                "read file",
                f"SELECT {_FILE_COLUMNS} FROM lensmux.files WHERE snapshot = %s AND path = %s",
                (self.snapshot, rel),
            )
            return FileRecord(*rows[0]) if rows else None

        return self._file_cache.through(rel, load)

    def chunk(self, chunk_id: int) -> ChunkRecord | None:
        """One chunk by id (= vector label)."""
        found = self.chunks([chunk_id])
        return found[0] if found else None

    def chunks(self, chunk_ids: Iterable[int]) -> list[ChunkRecord]:
        """Several chunks at once, in the order asked; ids that no longer exist are skipped."""
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[int, ChunkRecord] = {}
        for i in wanted:
            cached = self._chunk_cache.get(i)
            if not missing(cached):
                found[i] = cached  # type: ignore[assignment]
        asked = [i for i in wanted if i not in found]
        if asked:
            query = f"{_CHUNKS} WHERE c.snapshot = %s AND c.id = ANY(%s)"
            for row in self._rows("read chunks", query, (self.snapshot, asked)):
                record = chunk_record(row)
                found[record.id] = record
                self._chunk_cache.put(record.id, record)
        return [found[i] for i in wanted if i in found]

    def chunks_in_file(self, path: str | Path) -> list[ChunkRecord]:
        """A file's chunks in line order."""
        rows = self._rows(
            "read a file's chunks",
            f"{_CHUNKS} WHERE c.snapshot = %s AND f.path = %s ORDER BY c.start_line, c.id",
            (self.snapshot, self.relative(path)),
        )
        return [chunk_record(r) for r in rows]

    def chunks_for_symbol(self, symbol_id: int) -> list[ChunkRecord]:
        """The chunk(s) made from one symbol (several when it was split into windows)."""

        def load() -> list[ChunkRecord]:
            rows = self._rows(
                "read a symbol's chunks",
                f"{_CHUNKS} WHERE c.snapshot = %s AND c.symbol_id = %s ORDER BY c.start_line",
                (self.snapshot, symbol_id),
            )
            return [chunk_record(r) for r in rows]

        return list(self._symbol_chunk_cache.through(symbol_id, load))

    def symbol(self, symbol_id: int) -> SymbolRecord | None:
        """One symbol by id."""

        def load() -> SymbolRecord | None:
            query = f"{_SYMBOLS} WHERE s.snapshot = %s AND s.id = %s"
            rows = self._rows("read symbol", query, (self.snapshot, symbol_id))
            return symbol_from_row(rows[0]) if rows else None

        return self._symbol_cache.through(symbol_id, load)

    def symbols_in_file(self, path: str | Path) -> list[SymbolRecord]:
        """A file's symbols in document order (parents before children)."""
        rows = self._rows(
            "read a file's symbols",
            f"{_SYMBOLS} WHERE s.snapshot = %s AND f.path = %s ORDER BY s.start_line, s.start_char, s.depth",
            (self.snapshot, self.relative(path)),
        )
        return [symbol_from_row(r) for r in rows]

    def enclosing_symbol(
        self, path: str | Path, line: int, kinds: Collection[str] | None = None
    ) -> SymbolRecord | None:
        """The innermost symbol whose range holds the 0-based line, optionally of given kinds."""
        params: dict[str, Any] = {"s": self.snapshot, "p": self.relative(path), "l": line}
        kind_filter = ""
        if kinds is not None:
            kind_filter = " AND s.kind = ANY(%(kinds)s)"
            params["kinds"] = list(kinds)
        rows = self._rows(
            "find enclosing symbol",
            f"{_SYMBOLS} WHERE s.snapshot = %(s)s AND f.path = %(p)s AND s.start_line <= %(l)s"
            " AND (s.end_line > %(l)s OR (s.end_line = %(l)s AND (s.end_char > 0 OR s.end_line = s.start_line)))"
            f"{kind_filter} ORDER BY s.depth DESC, s.end_line - s.start_line, s.start_line DESC LIMIT 1",
            params,
        )
        return symbol_from_row(rows[0]) if rows else None

    # -- the learned call graph ------------------------------------------------------

    def recall_learned(self, symbol_ids: Iterable[int]) -> Learned:
        """The stored relations of those symbols that are learned."""
        with self._reader.use("recall learned relations") as conn:
            return learned.recall(conn, self.snapshot, symbol_ids)

    def stale_learned(self, words: Collection[str]) -> dict[int, str]:
        """Learned subjects (id -> kind) the masked files' changes may have made stale (overlay.py MaskedReader)."""
        with self._reader.use("find stale learned relations") as conn:
            return learned.stale(conn, self.snapshot, self._masked_words | frozenset(words), self.mask.paths)

    def unlearned_symbols(self, after_id: int, limit: int, languages: Collection[str] | None = None) -> list[int]:
        """Symbols a search expands whose relations are not learned yet, in id order (of files in `languages`)."""
        with self._reader.use("list unlearned symbols") as conn:
            return learned.unlearned(conn, self.snapshot, after_id, limit, languages)

    def learned_counts(self) -> tuple[int, int]:
        """(learned, learnable) symbols."""
        with self._reader.use("count learned symbols") as conn:
            return learned.counts(conn, self.snapshot)
