"""Writes of one snapshot of the team store: whole files per call, one transaction each.

Rows go in with COPY under ids taken from the tables' sequences beforehand (a publish of a
large tree is a few COPY streams, not a round trip per row); a chunk's vector may come with
its row (publishing) or later through vectors.py (the indexer's order: rows, then vectors).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy
import numpy.typing as npt
import psycopg
from psycopg import sql

from lensmux.graph.index.identifiers import fts_document, fts_names
from lensmux.graph.index.postgres.contents import learned
from lensmux.graph.index.postgres.contents.reader import SnapshotQueries
from lensmux.graph.index.postgres.contents.terms import postings
from lensmux.graph.index.postgres.contents.vectors import normalised, vector_text
from lensmux.graph.index.postgres.database.connection import Connection
from lensmux.graph.index.records import FileStamp, FileWrite, IndexCounts, WriteResult

__all__ = ["SnapshotStore"]


class SnapshotStore(SnapshotQueries):
    """One snapshot (repository, commit) as an IndexWriter; reads and writes on separate connections."""

    def __init__(self, root: Path, snapshot: int, repo: str, *, reader: Connection, writer: Connection) -> None:
        super().__init__(root, snapshot, reader)
        self.repo = repo
        self._writer = writer
        # Bumped by every write of files: learned relations computed before one are not stored.
        self.generation = 0

    # -- what the indexer reads -------------------------------------------------------

    def counts(self) -> IndexCounts:
        """Files, symbols and chunks as of the last commit."""
        row = self._rows(
            "count rows",
            "SELECT (SELECT count(*) FROM lensmux.files WHERE snapshot = %(s)s),"
            " (SELECT count(*) FROM lensmux.symbols WHERE snapshot = %(s)s),"
            " (SELECT count(*) FROM lensmux.chunks WHERE snapshot = %(s)s)",
            {"s": self.snapshot},
        )[0]
        return IndexCounts(int(row[0]), int(row[1]), int(row[2]))

    def file_stamps(self) -> dict[str, FileStamp]:
        """Every indexed file's hash, mtime, size and structure source."""
        rows = self._rows(
            "read file stamps",
            "SELECT path, sha256, mtime_ns, size, structure FROM lensmux.files WHERE snapshot = %s",
            (self.snapshot,),
        )
        return {r[0]: FileStamp(r[1], int(r[2]), int(r[3]), r[4]) for r in rows}

    def chunk_ids(self) -> set[int]:
        """Every chunk id (= every vector label that should exist)."""
        rows = self._rows("list chunk ids", "SELECT id FROM lensmux.chunks WHERE snapshot = %s", (self.snapshot,))
        return {int(r[0]) for r in rows}

    def chunk_texts(self, ids: Iterable[int]) -> list[tuple[int, str]]:
        """(id, text) of those chunks that still exist, in id order."""
        rows = self._rows(
            "read chunk texts",
            "SELECT id, text FROM lensmux.chunks WHERE snapshot = %s AND id = ANY(%s) ORDER BY id",
            (self.snapshot, sorted(set(ids))),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def chunk_ids_by_text(self, paths: Collection[str]) -> dict[str, int]:
        """For the given files, chunk text -> an existing chunk id (to reuse its vector)."""
        rows = self._rows(
            "read chunk ids by text",
            "SELECT c.text, c.id FROM lensmux.chunks c JOIN lensmux.files f ON f.id = c.file_id"
            " WHERE f.snapshot = %s AND f.path = ANY(%s) ORDER BY c.id",
            (self.snapshot, list(paths)),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    # -- the learned call graph --------------------------------------------------------

    def remember_learned(self, relations: Mapping[int, Sequence[tuple[str, int]]], generation: int) -> int:
        """Store learned relations unless a file was written since `generation`; returns subjects stored."""
        with self._writer.transaction("remember learned relations") as conn:
            if generation != self.generation:
                return 0
            return learned.remember(conn, self.snapshot, self.repo, relations)

    # -- writes -------------------------------------------------------------------------

    def write_files(
        self,
        files: Sequence[FileWrite],
        *,
        remove: Sequence[str] = (),
        touch: Sequence[tuple[str, int, int]] = (),
        vectors: Sequence[npt.NDArray[numpy.float32] | None] | None = None,
        symbol_ids: list[list[int]] | None = None,
    ) -> WriteResult:
        """In one transaction: replace files' rows, delete `remove`, set (mtime_ns, size) of `touch`.

        `vectors`, when given, holds per file a matrix of its chunks' vectors (or None), stored
        with the rows; `symbol_ids`, when given, receives per file its new symbol ids in order.
        """
        now = time.time()
        with self._writer.transaction("write files") as conn:
            removed = self._delete_files(conn, [*remove, *(f.path for f in files)])
            if touch:
                with conn.cursor() as cur:
                    cur.executemany(
                        "UPDATE lensmux.files SET mtime_ns = %s, size = %s WHERE snapshot = %s AND path = %s",
                        [(mtime, size, self.snapshot, path) for path, mtime, size in touch],
                    )
            new = self._insert(conn, files, vectors, now, symbol_ids if symbol_ids is not None else [])
            learned.forget_mentioned(conn, self.snapshot, frozenset().union(*(f.mentions for f in files)))
            self._refresh_stats(conn)
            self.generation += 1
        self.clear_caches()
        return WriteResult(removed, new)

    def remove_files(self, paths: Iterable[str], *, under: bool = False) -> list[int]:
        """Delete files (with under=True also every file below each path); returns chunk ids."""
        with self._writer.transaction("remove files") as conn:
            targets: list[str] = []
            for path in paths:
                targets.append(path)
                if under:
                    prefix = path.rstrip("/") + "/"
                    targets += [
                        r[0]
                        for r in conn.execute(
                            "SELECT path FROM lensmux.files WHERE snapshot = %s AND starts_with(path, %s)",
                            (self.snapshot, prefix),
                        )
                    ]
            removed = self._delete_files(conn, targets)
            self._refresh_stats(conn)
            self.generation += 1
        self.clear_caches()
        return removed

    def _delete_files(self, conn: psycopg.Connection[Any], paths: Sequence[str]) -> list[int]:
        if not paths:
            return []
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM lensmux.files WHERE snapshot = %s AND path = ANY(%s)", (self.snapshot, list(paths))
            )
        ]
        if not ids:
            return []
        for file_id in ids:
            learned.forget_related(conn, file_id)
        chunks = conn.execute("SELECT id FROM lensmux.chunks WHERE file_id = ANY(%s) ORDER BY id", (ids,)).fetchall()
        # Postings and chunks go first so their cascades do not run row by row from files.
        conn.execute("DELETE FROM lensmux.postings WHERE chunk_id IN (SELECT id FROM lensmux.chunks"
                     " WHERE file_id = ANY(%s))", (ids,))  # fmt: skip
        conn.execute("DELETE FROM lensmux.chunks WHERE file_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM lensmux.symbols WHERE file_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM lensmux.files WHERE id = ANY(%s)", (ids,))
        return [int(r[0]) for r in chunks]

    def _ids(self, conn: psycopg.Connection[Any], table: str, n: int) -> list[int]:
        if n == 0:
            return []
        rows = conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", (f"lensmux.{table}", n)
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _insert(
        self,
        conn: psycopg.Connection[Any],
        files: Sequence[FileWrite],
        vectors: Sequence[npt.NDArray[numpy.float32] | None] | None,
        now: float,
        symbol_ids_out: list[list[int]],
    ) -> list[list[int]]:
        file_ids = iter(self._ids(conn, "files", len(files)))
        symbol_ids = iter(self._ids(conn, "symbols", sum(len(f.symbols) for f in files)))
        chunk_ids = iter(self._ids(conn, "chunks", sum(len(f.chunks) for f in files)))
        s, repo = self.snapshot, self.repo
        file_rows: list[tuple[Any, ...]] = []
        symbol_rows: list[tuple[Any, ...]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        posting_rows: list[tuple[Any, ...]] = []
        new: list[list[int]] = []
        for n, f in enumerate(files):
            file_id = next(file_ids)
            file_rows.append((file_id, s, repo, f.path, f.language, f.sha256, f.mtime_ns, f.size, f.structure, now))
            ids = [next(symbol_ids) for _ in f.symbols]
            symbol_ids_out.append(ids)
            for sym, symbol_id in zip(f.symbols, ids, strict=True):
                r, sel = sym.range, sym.selection_range
                symbol_rows.append(
                    (symbol_id, s, repo, file_id, ids[sym.parent] if sym.parent is not None else None, sym.name,
                     sym.qualified_name, sym.kind, sym.detail, sym.container, sym.depth, r.start_line,
                     r.start_char, r.end_line, r.end_char, sel.start_line, sel.start_char, sel.end_line,
                     sel.end_char)
                )  # fmt: skip
            given = vectors[n] if vectors is not None else None
            matrix = normalised(given) if given is not None and len(f.chunks) else None
            path_terms = fts_names([f.path])
            written: list[int] = []
            for j, (chunk, tokens) in enumerate(zip(f.chunks, f.tokens, strict=True)):
                chunk_id = next(chunk_ids)
                names = fts_names([chunk.name]) if chunk.symbol is not None else ""
                length, terms = postings(names, path_terms, fts_document(chunk.text))
                embedding = vector_text(matrix[j]) if matrix is not None else None
                chunk_rows.append(
                    (chunk_id, s, repo, file_id, ids[chunk.symbol] if chunk.symbol is not None else None,
                     chunk.kind, chunk.name, chunk.start_line, chunk.end_line, chunk.text, tokens, length,
                     embedding)
                )  # fmt: skip
                posting_rows.extend((s, repo, p.term, chunk_id, p.names, p.path, p.body, p.length) for p in terms)
                written.append(chunk_id)
            new.append(written)
        _copy(
            conn,
            "files",
            "id, snapshot, repo, path, language, sha256, mtime_ns, size, structure, indexed_at",
            file_rows,
        )
        _copy(
            conn,
            "symbols",
            "id, snapshot, repo, file_id, parent_id, name, qualified_name, kind, detail,"
            " container, depth, start_line, start_char, end_line, end_char, sel_start_line, sel_start_char,"
            " sel_end_line, sel_end_char",
            symbol_rows,
        )
        _copy(
            conn,
            "chunks",
            "id, snapshot, repo, file_id, symbol_id, kind, name, start_line, end_line, text, tokens, terms, embedding",
            chunk_rows,
        )
        _copy(conn, "postings", "snapshot, repo, term, chunk_id, tf_names, tf_path, tf_body, terms", posting_rows)
        return new  # fmt: skip

    def _refresh_stats(self, conn: psycopg.Connection[Any]) -> None:
        # BM25's N and avgdl (keyword.py): FTS5 keeps these totals of its table the same way.
        conn.execute(
            "UPDATE lensmux.snapshots SET n_chunks = t.n, n_tokens = t.tokens FROM"
            " (SELECT count(*) AS n, coalesce(sum(terms), 0) AS tokens FROM lensmux.chunks WHERE snapshot = %s) t"
            " WHERE id = %s",
            (self.snapshot, self.snapshot),
        )


def _copy(conn: psycopg.Connection[Any], table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    """COPY rows into a session-private staging table, then INSERT them: PostgreSQL refuses COPY FROM
    into a table with row-level security, and the INSERT is where the writer's policy is checked."""
    if not rows:
        return
    stage = sql.Identifier(f"stage_{table}")
    conn.execute(
        sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS").format(
            stage, sql.Identifier("lensmux", table)
        )
    )
    names = sql.SQL(columns)
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(stage, names)) as copy:
        for row in rows:
            copy.write_row(row)
    conn.execute(
        sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(sql.Identifier("lensmux", table), names, names, stage)
    )
    conn.execute(sql.SQL("TRUNCATE {}").format(stage))
