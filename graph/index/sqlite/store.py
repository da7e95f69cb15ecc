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
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from lensmux.graph.index.interface import Learned
from lensmux.graph.index.records import FileStamp, FileWrite, IndexCounts, VectorPointer, WriteResult
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.chunk_text import unpack
from lensmux.graph.index.sqlite.database import open_database, translate_errors
from lensmux.graph.index.sqlite.file_rows import Delta, delete_file, write_file
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
        """In one transaction: write files' rows, delete `remove`, set (mtime_ns, size) of `touch`.

        A file written again keeps the rows of its unchanged chunks (file_rows.py): their ids
        are in the result's `kept`, and their vectors stay.
        """
        removed: list[int] = []
        new: list[list[int]] = []
        kept: set[int] = set()
        delta = Delta()
        with self._transaction("write files") as conn:
            for path in remove:
                removed.extend(delete_file(conn, path, delta))
            conn.executemany(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                [(mtime, size, path) for path, mtime, size in touch],
            )
            for f in files:
                ids, same, dropped = write_file(conn, f, delta)
                new.append(ids)
                kept.update(same)
                removed.extend(dropped)
            learned.forget_mentioned(conn, frozenset().union(*(f.mentions for f in files)))
            delta.apply(conn)
            self.generation += 1
        return WriteResult(removed, new, kept)

    def remove_files(self, paths: Iterable[str], *, under: bool = False) -> list[int]:
        """Delete files (with under=True also every file below each path); returns chunk ids."""
        removed: list[int] = []
        delta = Delta()
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
                    removed.extend(delete_file(conn, target, delta))
            delta.apply(conn)
            self.generation += 1
        return removed
