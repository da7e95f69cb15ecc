"""Read-only questions the search pipeline asks the index."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from lensmux.graph.index.builder.preparing.document_symbols import CHUNKED_KINDS
from lensmux.graph.index.interface import free_text_search
from lensmux.graph.index.location import relative_to_root
from lensmux.graph.index.records import ChunkRecord, FileRecord, SymbolRecord
from lensmux.graph.index.rows import CHUNK_COLUMNS
from lensmux.graph.index.rows import FILE_COLUMNS as _FILE_COLUMNS
from lensmux.graph.index.rows import SYMBOL_COLUMNS as _SYMBOL_COLUMNS
from lensmux.graph.index.rows import like_escape as _like_escape
from lensmux.graph.index.rows import symbol_from_row as _symbol
from lensmux.graph.index.sqlite.database import translate_errors
from lensmux.graph.index.sqlite.schema import BM25_WEIGHTS

# The text is stored packed (chunk_text.py); the connection's lensmux_text() unpacks it.
_CHUNK_COLUMNS = CHUNK_COLUMNS.replace("c.text", "lensmux_text(c.text)")
_DEFINITION_KINDS = "(" + ",".join(f"'{k}'" for k in sorted(CHUNKED_KINDS)) + ")"


class StoreQueries:
    """Query half of Store; paths may be relative to the root or absolute under it."""

    def __init__(self, root: Path, reader: sqlite3.Connection) -> None:
        self.root = root
        self._reader = reader
        self._read_lock = threading.Lock()

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._read_lock, translate_errors("read index"):
            yield self._reader

    def relative(self, path: str | Path) -> str | None:
        """The POSIX path relative to the root, or None when path is outside it."""
        return relative_to_root(self.root, path)

    def keyword_search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """BM25 over chunk names, paths and text: (chunk_id, score), best (highest) first."""
        return free_text_search(self.fts_search, query, k)

    def fts_search(self, match: str, k: int = 20) -> list[tuple[int, float]]:
        """keyword_search with a ready FTS5 MATCH expression (callers build it from quoted terms)."""
        if k <= 0:
            return []
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT rowid, bm25(chunks_fts, {weights}) AS rank FROM chunks_fts"
                " WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                (match, k),
            ).fetchall()
        # FTS5's bm25() is lower-is-better; negate so every score in lensmux grows with relevance.
        return [(int(r[0]), -float(r[1])) for r in rows]

    def lookup_symbols(self, name: str, limit: int = 50) -> list[SymbolRecord]:
        """Symbols named name: exact, then case-insensitive, then qualified-suffix matches.

        `send`, `SEND` and `Uploader.send` all find `pkg.Uploader.send`; C++ `::` works as `.`.
        Order: whole qualified name equal, short name equal, either equal ignoring case, suffix.
        Definitions (functions, classes, ...) come before variables within each group.
        """
        wanted = name.strip().replace("::", ".")
        if not wanted:
            return []
        last = wanted.rsplit(".", 1)[-1]
        if "." in wanted:
            where = (
                "s.name = :last COLLATE NOCASE AND (s.qualified_name = :q COLLATE NOCASE"
                " OR s.qualified_name LIKE :suffix ESCAPE '\\')"
            )
        else:
            where = "s.name = :q COLLATE NOCASE"
        sql = (
            f"SELECT {_SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id"
            f" WHERE {where} ORDER BY"
            " CASE WHEN s.qualified_name = :q THEN 0 WHEN s.name = :q THEN 1"
            "      WHEN s.qualified_name = :q COLLATE NOCASE THEN 2 ELSE 3 END,"
            f" s.kind NOT IN {_DEFINITION_KINDS}, f.path, s.start_line LIMIT :limit"
        )
        params = {"q": wanted, "last": last, "suffix": "%." + _like_escape(wanted), "limit": limit}
        with self._read() as conn:
            return [_symbol(r) for r in conn.execute(sql, params)]

    def files_matching(self, path_fragment: str, limit: int = 50) -> list[FileRecord]:
        """Indexed files whose path contains the fragment (case-insensitive); exact names first."""
        fragment = path_fragment.strip().strip("/")
        if not fragment:
            return []
        sql = (
            f"SELECT {_FILE_COLUMNS} FROM files WHERE instr(lower(path), lower(:f)) > 0"
            " ORDER BY path = :f DESC, substr(path, -length(:f) - 1) = '/' || :f DESC,"
            " length(path), path LIMIT :limit"
        )
        with self._read() as conn:
            return [FileRecord(*r) for r in conn.execute(sql, {"f": fragment, "limit": limit})]

    def file(self, path: str | Path) -> FileRecord | None:
        """One indexed file."""
        rel = self.relative(path)
        with self._read() as conn:
            row = conn.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path = ?", (rel,)).fetchone()
        return FileRecord(*row) if row else None

    def chunk(self, chunk_id: int) -> ChunkRecord | None:
        """One chunk by id (= vector label)."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?",
                (chunk_id,),
            ).fetchone()
        return ChunkRecord(*row) if row else None

    def chunks(self, chunk_ids: Iterable[int]) -> list[ChunkRecord]:
        """Several chunks at once, in the order asked; ids that no longer exist are skipped."""
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[int, ChunkRecord] = {}
        with self._read() as conn:
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                rows = conn.execute(
                    f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id"
                    f" WHERE c.id IN ({','.join('?' * len(part))})",
                    part,
                )
                found.update((r[0], ChunkRecord(*r)) for r in rows)
        return [found[i] for i in wanted if i in found]

    def chunks_in_file(self, path: str | Path) -> list[ChunkRecord]:
        """A file's chunks in line order."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id"
                " WHERE f.path = ? ORDER BY c.start_line, c.id",
                (self.relative(path),),
            )
            return [ChunkRecord(*r) for r in rows]

    def chunks_for_symbol(self, symbol_id: int) -> list[ChunkRecord]:
        """The chunk(s) made from one symbol (several when it was split into windows)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id"
                " WHERE c.symbol_id = ? ORDER BY c.start_line",
                (symbol_id,),
            )
            return [ChunkRecord(*r) for r in rows]

    def symbol(self, symbol_id: int) -> SymbolRecord | None:
        """One symbol by id."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.id = ?",
                (symbol_id,),
            ).fetchone()
        return _symbol(row) if row else None

    def symbols_in_file(self, path: str | Path) -> list[SymbolRecord]:
        """A file's symbols in document order (parents before children)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id"
                " WHERE f.path = ? ORDER BY s.start_line, s.start_char, s.depth",
                (self.relative(path),),
            )
            return [_symbol(r) for r in rows]

    def enclosing_symbol(
        self, path: str | Path, line: int, kinds: Collection[str] | None = None
    ) -> SymbolRecord | None:
        """The innermost symbol whose range holds the 0-based line, optionally of given kinds."""
        kind_filter = ""
        params: list[object] = [self.relative(path), line, line, line]
        if kinds is not None:
            kind_filter = f" AND s.kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id"
                " WHERE f.path = ? AND s.start_line <= ?"
                " AND (s.end_line > ? OR (s.end_line = ? AND (s.end_char > 0 OR s.end_line = s.start_line)))"
                f"{kind_filter} ORDER BY s.depth DESC, s.end_line - s.start_line, s.start_line DESC"
                " LIMIT 1",
                params,
            ).fetchone()
        return _symbol(row) if row else None
