"""The SQLite side of a root's index: files, symbols, chunks, FTS5, meta.

Architecture Invariant: the database is the truth. The vector file may lag behind it
(it is saved with a debounce) and is reconciled against it on open.
Thread safety: every method may be called from any thread; writes are serialised on
one connection, reads use a second connection and see only committed data (WAL).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from lensmux.graph.index.identifiers import fts_document, fts_names
from lensmux.graph.index.interface import Learned
from lensmux.graph.index.records import FileStamp, FileWrite, IndexCounts, VectorPointer, WriteResult
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.chunk_text import pack, unpack
from lensmux.graph.index.sqlite.database import open_database, translate_errors
from lensmux.graph.index.sqlite.queries import StoreQueries
from lensmux.graph.index.sqlite.schema import (
    META_CHUNKS,
    META_FILES,
    META_FTS_DELETED,
    META_SYMBOLS,
    META_VECTORS,
)
from lensmux.graph.index.sqlite.set_aside import DB_NAME

__all__ = ["Store"]


class Store(StoreQueries):
    """One root's SQLite index; open with Store.open, close with close()."""

    def __init__(
        self,
        directory: Path,
        root: Path,
        *,
        writer: sqlite3.Connection,
        reader: sqlite3.Connection,
        lock_fd: int,
        recovery_note: str | None,
    ) -> None:
        super().__init__(root, reader)
        self.directory = directory
        self.recovery_note = recovery_note
        self._writer = writer
        self._write_lock = threading.Lock()
        self._lock_fd: int | None = lock_fd
        # Bumped by every write of files: learned relations computed before one are not stored.
        self.generation = 0

    @classmethod
    def open(cls, directory: Path, root: Path, *, model_id: str, dim: int, create: bool = True) -> Store:
        """Open (or create) the index in directory; see database.open_database for recovery."""
        root = root.resolve()
        opened = open_database(directory, root, model_id, dim, create)
        return cls(
            directory,
            root,
            writer=opened.writer,
            reader=opened.reader,
            lock_fd=opened.lock_fd,
            recovery_note=opened.recovery_note,
        )

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self.directory / DB_NAME

    def close(self) -> None:
        """Close both connections and release the directory lock."""
        with self._write_lock, self._read_lock:
            self._writer.close()
            self._reader.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._write_lock, translate_errors(what):
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- meta -----------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        """The whole meta table."""
        with self._read() as conn:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())

    def counts(self) -> IndexCounts:
        """Files, symbols and chunks as of the last commit."""
        meta = self.meta()
        return IndexCounts(int(meta[META_FILES]), int(meta[META_SYMBOLS]), int(meta[META_CHUNKS]))

    def vector_pointer(self) -> VectorPointer | None:
        """The vector file that belongs to this database, if one was ever saved."""
        raw = self.meta().get(META_VECTORS)
        return VectorPointer(**json.loads(raw)) if raw else None

    def set_vector_pointer(self, pointer: VectorPointer | None) -> None:
        """Record (or forget) the vector file; call only after that file is durable."""
        with self._transaction("set vector pointer") as conn:
            if pointer is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (META_VECTORS,))
            else:
                value = json.dumps({k: getattr(pointer, k) for k in VectorPointer.__dataclass_fields__})
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (META_VECTORS, value))

    # -- what the indexer reads -------------------------------------------------

    def file_stamps(self) -> dict[str, FileStamp]:
        """Every indexed file's hash, mtime, size and structure source."""
        with self._read() as conn:
            rows = conn.execute("SELECT path, sha256, mtime_ns, size, structure FROM files")
            return {r[0]: FileStamp(r[1], r[2], r[3], r[4]) for r in rows}

    def chunk_ids(self) -> set[int]:
        """Every chunk id (= every vector label that should exist)."""
        with self._read() as conn:
            return {r[0] for r in conn.execute("SELECT id FROM chunks")}

    def chunk_texts(self, ids: Iterable[int]) -> list[tuple[int, str]]:
        """(id, text) of those chunks that still exist, in id order."""
        wanted = sorted(set(ids))
        out: list[tuple[int, str]] = []
        with self._read() as conn:
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks}) ORDER BY id", part)
                out.extend((chunk_id, unpack(blob)) for chunk_id, blob in rows)
        return out

    def chunk_ids_by_text(self, paths: Collection[str]) -> dict[str, int]:
        """For the given files, chunk text -> an existing chunk id (to reuse its vector)."""
        out: dict[str, int] = {}
        with self._read() as conn:
            for path in paths:
                rows = conn.execute(
                    "SELECT c.text, c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?",
                    (path,),
                )
                out.update((unpack(blob), chunk_id) for blob, chunk_id in rows)
        return out

    # -- the learned call graph (learned.py) ------------------------------------------

    def recall_learned(self, symbol_ids: Iterable[int]) -> Learned:
        """The stored relations of those symbols that are learned."""
        with self._read() as conn:
            return learned.recall(conn, symbol_ids)

    def remember_learned(self, relations: Mapping[int, Sequence[tuple[str, int]]], generation: int) -> int:
        """Store learned relations unless a file was written since `generation`; returns subjects stored."""
        with self._transaction("remember learned relations") as conn:
            return learned.remember(conn, relations) if generation == self.generation else 0

    def unlearned_symbols(self, after_id: int, limit: int, languages: Collection[str] | None = None) -> list[int]:
        """Symbols a search expands whose relations are not learned yet, in id order (of files in `languages`)."""
        with self._read() as conn:
            return learned.unlearned(conn, after_id, limit, languages)

    def learned_counts(self) -> tuple[int, int]:
        """(learned, learnable) symbols."""
        with self._read() as conn:
            return learned.counts(conn)

    # -- writes ---------------------------------------------------------------------

    def optimize_keywords(self, share: float) -> bool:
        """Rewrite the FTS5 index whole once the chunks deleted from it reach `share` of its chunks.

        FTS5 deletes by adding tombstones to new segments; the deleted entries stay in the
        older, larger segments until a merge reaches them, which automerge rarely does for
        the largest. An index re-indexed again and again grew to 5 times its size (flask:
        2,378 B a chunk against 489 B rewritten; docs/benchmarks.md, "Monorepo"). The rewrite
        reads and writes the index once, after as many deletions as `share` of its chunks,
        so its cost stays in proportion to the writes. Scores do not change: bm25() reads the
        same postings and lengths however they are segmented.
        """
        meta = self.meta()
        deleted, chunks = int(meta.get(META_FTS_DELETED, "0")), int(meta[META_CHUNKS])
        if deleted == 0 or deleted < share * chunks:
            return False
        with self._transaction("optimize the keyword index") as conn:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
            conn.execute("UPDATE meta SET value = '0' WHERE key = ?", (META_FTS_DELETED,))
        return True

    def write_files(
        self,
        files: Sequence[FileWrite],
        *,
        remove: Sequence[str] = (),
        touch: Sequence[tuple[str, int, int]] = (),
    ) -> WriteResult:
        """In one transaction: replace files' rows, delete `remove`, set (mtime_ns, size) of `touch`."""
        removed: list[int] = []
        new: list[list[int]] = []
        now = time.time()
        delta = _Delta()
        with self._transaction("write files") as conn:
            for path in remove:
                removed.extend(self._delete_file(conn, path, delta))
            conn.executemany(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                [(mtime, size, path) for path, mtime, size in touch],
            )
            for f in files:
                removed.extend(self._delete_file(conn, f.path, delta))
                file_id = _insert(
                    conn,
                    "INSERT INTO files(path, language, sha256, mtime_ns, size, structure, indexed_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (f.path, f.language, f.sha256, f.mtime_ns, f.size, f.structure, now),
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
                for chunk, tokens in zip(f.chunks, f.tokens, strict=True):
                    symbol_id = symbol_ids[chunk.symbol] if chunk.symbol is not None else None
                    chunk_id = _insert(
                        conn,
                        "INSERT INTO chunks(file_id, symbol_id, kind, name, start_line, end_line,"
                        " text, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (file_id, symbol_id, chunk.kind, chunk.name, chunk.start_line,
                         chunk.end_line, pack(chunk.text), tokens),
                    )  # fmt: skip
                    # The values schema.chunks_fts_source yields for this row (chunk_text.py).
                    names = fts_names([chunk.name]) if chunk.symbol is not None else ""
                    conn.execute(
                        "INSERT INTO chunks_fts(rowid, names, path, body) VALUES (?, ?, ?, ?)",
                        (chunk_id, names, path_terms, fts_document(chunk.text)),
                    )
                    ids.append(chunk_id)
                new.append(ids)
                delta.add(1, len(symbol_ids), len(ids))
                delta.learnable += sum(1 for sym in f.symbols if learned.learnable(sym.kind))
            learned.forget_mentioned(conn, frozenset().union(*(f.mentions for f in files)))
            delta.apply(conn)
            self.generation += 1
        return WriteResult(removed, new)

    def remove_files(self, paths: Iterable[str], *, under: bool = False) -> list[int]:
        """Delete files (with under=True also every file below each path); returns chunk ids."""
        removed: list[int] = []
        delta = _Delta()
        with self._transaction("remove files") as conn:
            for path in paths:
                targets = [path]
                if under:
                    # A range over the unique index on path: the files below, not a scan of all.
                    prefix = path.rstrip("/") + "/"
                    targets += [
                        r[0]
                        for r in conn.execute(
                            "SELECT path FROM files WHERE path >= ? AND path < ?",
                            (prefix, prefix[:-1] + chr(ord("/") + 1)),
                        )
                    ]
                for target in targets:
                    removed.extend(self._delete_file(conn, target, delta))
            delta.apply(conn)
            self.generation += 1
        return removed

    @staticmethod
    def _delete_file(conn: sqlite3.Connection, path: str, delta: _Delta) -> list[int]:
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return []
        file_id = row[0]
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE file_id = ?", (file_id,))]
        symbols = conn.execute("SELECT count(*) FROM symbols WHERE file_id = ?", (file_id,)).fetchone()[0]
        delta.add(-1, -symbols, -len(ids))
        delta.fts_deleted += len(ids)
        learned.forget_related(conn, file_id)
        # What learned.file_counts finds now goes with the symbols below (the cascade counts nothing).
        gone_learned, gone_learnable = learned.file_counts(conn, file_id)
        delta.learned -= gone_learned
        delta.learnable -= gone_learnable
        # External content: FTS5 forgets a row only when told the values it indexed, which
        # the view derives from the rows about to be deleted (schema.FTS_DDL).
        conn.execute(
            "INSERT INTO chunks_fts(chunks_fts, rowid, names, path, body)"
            " SELECT 'delete', id, names, path, body FROM chunks_fts_source WHERE file_id = ?",
            (file_id,),
        )
        conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
        conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
        return ids


def _insert(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> int:
    rowid = conn.execute(sql, params).lastrowid
    assert rowid is not None  # an INSERT always sets it
    return rowid


class _Delta:
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
