"""One file's rows in the SQLite index: written, rewritten in place, deleted.

A file written again (an edit, a save, a file event) keeps the rows of its chunks whose
text, kind and name did not change: their FTS5 entries and their vectors stay as they
are, and only their lines and symbol are updated. Deleting every row and inserting them
all again cost an edit of a large file the whole file's FTS5 entries and vectors: 216
chunks of tornado's web.py, about 110 ms of SQLite and 90 ms of hnswlib (re-adding
vectors it already held under new ids) per keystroke burst, for one changed function.
Symbols are cheap rows with no FTS5 entry; they are replaced, and the learned relations
go with them as before (learned.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections import defaultdict
from collections.abc import Sequence

from lensmux.graph.index.identifiers import fts_document, fts_names
from lensmux.graph.index.records import FileWrite
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.chunk_text import pack
from lensmux.graph.index.sqlite.schema import META_CHUNKS, META_FILES, META_FTS_DELETED, META_SYMBOLS

__all__ = ["Delta", "delete_file", "write_file"]

# What makes a stored chunk row reusable for a new chunk: its FTS5 entry (names, body) and
# its vector depend on nothing else (the path is the file's, which a rewrite keeps).
_ChunkKey = tuple[str, str | None, bool, bytes]


class Delta:
    """Rows a transaction adds and deletes, applied to the meta counts before it commits.

    The counts used to be recounted (three count(*) over whole tables) by every write, so a
    full run cost time quadratic in the root's size (bench/index/counts.py); a write now
    pays for the rows it touches only, and the counts still change with the rows they count.
    """

    __slots__ = ("chunks", "files", "fts_deleted", "learnable", "learned", "symbols")

    def __init__(self) -> None:
        self.files = self.symbols = self.chunks = 0
        # Of the learned graph's counts (learned.py): learned and learnable symbols.
        self.learned = self.learnable = 0
        self.fts_deleted = 0

    def add(self, files: int, symbols: int, chunks: int) -> None:
        self.files += files
        self.symbols += symbols
        self.chunks += chunks

    def apply(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?",
            [
                (self.files, META_FILES),
                (self.symbols, META_SYMBOLS),
                (self.chunks, META_CHUNKS),
                (self.fts_deleted, META_FTS_DELETED),
            ],
        )
        learned.add_counts(conn, self.learned, self.learnable)


def _insert(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> int:
    rowid = conn.execute(sql, params).lastrowid
    assert rowid is not None  # an INSERT always sets it
    return rowid


def _file_id(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


def _drop_chunks(conn: sqlite3.Connection, file_id: int, ids: Sequence[int], delta: Delta, *, every: bool) -> None:
    """Delete chunk rows of the file and their FTS5 entries (before its symbols go: the entries name them).

    `every`: `ids` are all of the file's chunks, deleted with one statement each, not one per row.
    """
    if not ids:
        return
    where, args = ("file_id = ?", [(file_id,)]) if every else ("id = ?", [(i,) for i in ids])
    # External content: FTS5 forgets a row only when told the values it indexed, which
    # the view derives from the rows about to be deleted (schema.FTS_DDL).
    conn.executemany(
        "INSERT INTO chunks_fts(chunks_fts, rowid, names, path, body)"
        f" SELECT 'delete', id, names, path, body FROM chunks_fts_source WHERE {where}",
        args,
    )
    conn.executemany(f"DELETE FROM chunks WHERE {where}", args)
    delta.add(0, 0, -len(ids))
    delta.fts_deleted += len(ids)


def _drop_symbols(conn: sqlite3.Connection, file_id: int, delta: Delta) -> None:
    """Delete a file's symbols, and the learned relations that go with them."""
    symbols = conn.execute("SELECT count(*) FROM symbols WHERE file_id = ?", (file_id,)).fetchone()[0]
    delta.add(0, -symbols, 0)
    learned.forget_related(conn, file_id)
    # What learned.file_counts finds now goes with the symbols below (the cascade counts nothing).
    gone_learned, gone_learnable = learned.file_counts(conn, file_id)
    delta.learned -= gone_learned
    delta.learnable -= gone_learnable
    conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))


def delete_file(conn: sqlite3.Connection, path: str, delta: Delta) -> list[int]:
    """Delete a file's rows; returns its chunk ids."""
    file_id = _file_id(conn, path)
    if file_id is None:
        return []
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE file_id = ?", (file_id,))]
    _drop_chunks(conn, file_id, ids, delta, every=True)
    _drop_symbols(conn, file_id, delta)
    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    delta.add(-1, 0, 0)
    return ids


def _old_chunks(conn: sqlite3.Connection, file_id: int) -> dict[_ChunkKey, list[int]]:
    """The file's stored chunk ids by what makes them reusable, lowest id first."""
    rows = conn.execute(
        "SELECT id, kind, name, symbol_id IS NOT NULL, text FROM chunks WHERE file_id = ? ORDER BY id", (file_id,)
    )
    out: dict[_ChunkKey, list[int]] = defaultdict(list)
    for chunk_id, kind, name, has_symbol, text in rows:
        out[(kind, name, bool(has_symbol), bytes(text))].append(chunk_id)
    return out


def write_file(conn: sqlite3.Connection, f: FileWrite, delta: Delta) -> tuple[list[int], list[int], list[int]]:
    """Write one file's rows, keeping the stored chunks a new chunk equals.

    Returns (the file's chunk ids in chunk order, those of them kept, the chunk ids dropped).
    """
    packed = [pack(chunk.text) for chunk in f.chunks]
    file_id = _file_id(conn, f.path)
    now = time.time()
    # Per new chunk, the stored row it keeps (None: a new row).
    reused: list[int | None] = [None] * len(packed)
    dropped: list[int] = []
    if file_id is None:
        file_id = _insert(
            conn,
            "INSERT INTO files(path, language, sha256, mtime_ns, size, structure, indexed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (f.path, f.language, f.sha256, f.mtime_ns, f.size, f.structure, now),
        )
        delta.add(1, 0, 0)
    else:
        old = _old_chunks(conn, file_id)
        keys: list[_ChunkKey] = [
            (c.kind, c.name, c.symbol is not None, blob) for c, blob in zip(f.chunks, packed, strict=True)
        ]
        reused = [old[key].pop(0) if old.get(key) else None for key in keys]
        dropped = sorted(i for ids in old.values() for i in ids)
        _drop_chunks(conn, file_id, dropped, delta, every=all(i is None for i in reused))
        _drop_symbols(conn, file_id, delta)
        conn.execute(
            "UPDATE files SET language = ?, sha256 = ?, mtime_ns = ?, size = ?, structure = ?, indexed_at = ?"
            " WHERE id = ?",
            (f.language, f.sha256, f.mtime_ns, f.size, f.structure, now, file_id),
        )
    symbol_ids: list[int] = []
    for s in f.symbols:
        parent_id = symbol_ids[s.parent] if s.parent is not None else None
        r, sel = s.range, s.selection_range
        symbol_ids.append(
            _insert(
                conn,
                "INSERT INTO symbols(file_id, parent_id, name, qualified_name, kind,"
                " detail, container, depth, start_line, start_char, end_line, end_char,"
                " sel_start_line, sel_start_char, sel_end_line, sel_end_char)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (file_id, parent_id, s.name, s.qualified_name, s.kind, s.detail,
                 s.container, s.depth, r.start_line, r.start_char, r.end_line,
                 r.end_char, sel.start_line, sel.start_char, sel.end_line,
                 sel.end_char),
            )
        )  # fmt: skip
    ids: list[int] = []
    path_terms = fts_names([f.path])
    for chunk, tokens, blob, same in zip(f.chunks, f.tokens, packed, reused, strict=True):
        symbol_id = symbol_ids[chunk.symbol] if chunk.symbol is not None else None
        if same is not None:
            chunk_id = same
            conn.execute(
                "UPDATE chunks SET symbol_id = ?, start_line = ?, end_line = ?, tokens = ? WHERE id = ?",
                (symbol_id, chunk.start_line, chunk.end_line, tokens, chunk_id),
            )
        else:
            chunk_id = _insert(
                conn,
                "INSERT INTO chunks(file_id, symbol_id, kind, name, start_line, end_line,"
                " text, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (file_id, symbol_id, chunk.kind, chunk.name, chunk.start_line, chunk.end_line, blob, tokens),
            )  # fmt: skip
            # The values schema.chunks_fts_source yields for this row (chunk_text.py).
            names = fts_names([chunk.name]) if chunk.symbol is not None else ""
            conn.execute(
                "INSERT INTO chunks_fts(rowid, names, path, body) VALUES (?, ?, ?, ?)",
                (chunk_id, names, path_terms, fts_document(chunk.text)),
            )
            delta.add(0, 0, 1)
        ids.append(chunk_id)
    delta.add(0, len(symbol_ids), 0)
    delta.learnable += sum(1 for sym in f.symbols if learned.learnable(sym.kind))
    return ids, [i for i in reused if i is not None], dropped
