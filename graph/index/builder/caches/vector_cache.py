"""Vectors by content, shared by every root of a user: (model id, sha256 of a chunk's text) -> float32.

A second worktree of a repository, a re-clone, a vendored copy: their chunks are mostly
the texts of chunks some other root already embedded. The embedding model is the largest
cost of indexing, so before it runs, the indexer asks this cache, and after, stores what
the model made. It is exact because of an Architecture Invariant: the same text embeds
to bit-identical vectors whatever it is batched with; the model id (model, precision,
builder, chunk text version) is part of the key, so another model never answers.

One SQLite file per user (`$XDG_STATE_HOME/lensmux/vector-cache.sqlite`, WAL, so several
roots and daemons read while one writes), bounded in bytes: past `max_bytes`, the
least recently used vectors go until it holds 90% of it. It is only a cache: any error
in it is logged and costs the hits, never an index run; a file SQLite calls corrupt is
deleted and started again.

Layout: a rowid table in 8 KiB pages, so a row (a 1,536 B vector plus its key) lies in its
page. The first layout was a WITHOUT ROWID table, an index b-tree whose rows hold at most
about 1 KiB in the page: every vector spilled its rest into an overflow page of its own,
and the file took 4.7 KiB a vector (docs/benchmarks.md, "Monorepo"). A file of that layout
is converted on open (`_convert_layout`), keeping every vector.
Thread safety: every method may be called from any thread (one connection, one lock).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy
import numpy.typing as npt

from lensmux.graph.index.builder.caches.cache_file import CacheFile, CacheStats, evict_least_used, tick

log = logging.getLogger(__name__)

FILE_NAME = "vector-cache.sqlite"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
# What a row costs beyond its vector (key, model, LRU stamp, b-tree, the page's unused end),
# counted against max_bytes: 8 KiB pages hold 5 rows of 384 float32 (1,702 B a row measured).
ROW_OVERHEAD = 192
PAGE_SIZE = 8192
# Eviction brings the cache down to this share of max_bytes, so it does not run on every put.
EVICT_TO = 0.9

_DDL = """
CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY,
    model INTEGER NOT NULL,
    digest BLOB NOT NULL,
    vector BLOB NOT NULL,
    used INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS vectors_by_key ON vectors(model, digest);
CREATE INDEX IF NOT EXISTS vectors_by_use ON vectors(used);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('bytes', 0), ('clock', 0);
"""

Vector = npt.NDArray[numpy.float32]


def text_digest(text: str) -> bytes:
    """The key of a chunk text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache(CacheFile):
    """The user's content-addressed vectors; open with VectorCache.open, close with close()."""

    file_name = FILE_NAME
    default_max_bytes = DEFAULT_MAX_BYTES
    label = "vector cache"
    without = "embedding without it"

    def __init__(self, path: Path, max_bytes: int) -> None:
        super().__init__(path, max_bytes)
        self._models: dict[str, int] = {}
        # As of this process's last read or write of the file: stats() takes neither the lock
        # nor the file, because `lensmux status` runs on the daemon's event loop.
        self._bytes = 0
        self._row_bytes = 0

    # -- the file ---------------------------------------------------------------------

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # Takes effect only in a new, empty file (before WAL and the first table).
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        _convert_layout(conn)
        conn.executescript(_DDL)
        size = int(conn.execute("SELECT value FROM meta WHERE key = 'bytes'").fetchone()[0])
        row = conn.execute("SELECT length(vector) FROM vectors LIMIT 1").fetchone()
        self._models = {}
        self._bytes = size
        self._row_bytes = int(row[0]) + ROW_OVERHEAD if row else 0

    def _model(self, conn: sqlite3.Connection, model_id: str) -> int:
        known = self._models.get(model_id)
        if known is None:
            conn.execute("INSERT OR IGNORE INTO models(name) VALUES (?)", (model_id,))
            known = int(conn.execute("SELECT id FROM models WHERE name = ?", (model_id,)).fetchone()[0])
            self._models[model_id] = known
        return known

    # -- reads and writes -----------------------------------------------------------------

    def get(self, model_id: str, texts: Sequence[str], dim: int) -> dict[str, Vector]:
        """The cached vectors of those texts the cache holds (they become the most recently used)."""
        wanted = {text_digest(t): t for t in dict.fromkeys(texts)}
        found: dict[str, Vector] = {}
        with self._using("reading vectors") as conn:
            if conn is None or not wanted:
                return found
            conn.execute("BEGIN IMMEDIATE")
            model = self._model(conn, model_id)
            digests = list(wanted)
            hit: list[bytes] = []
            for start in range(0, len(digests), 500):
                part = digests[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})", [model, *part]
                )
                for digest, blob in rows:
                    if len(blob) != dim * 4:
                        continue  # another dimension under the same model id: not this model's vector
                    found[wanted[digest]] = numpy.frombuffer(blob, dtype=numpy.float32).copy()
                    hit.append(digest)
            if hit:
                clock = tick(conn)
                conn.executemany(
                    "UPDATE vectors SET used = ? WHERE model = ? AND digest = ?", [(clock, model, d) for d in hit]
                )
            conn.execute("COMMIT")
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        if found:
            self._row_bytes = dim * 4 + ROW_OVERHEAD
        return found

    def put(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        """Store what the model made for these texts; past max_bytes, the least recently used go."""
        if not vectors or self.max_bytes <= 0:
            return
        with self._using("storing vectors") as conn:
            if conn is None:
                return
            conn.execute("BEGIN IMMEDIATE")
            model = self._model(conn, model_id)
            clock = tick(conn)
            rows = [
                (model, text_digest(t), numpy.ascontiguousarray(v, dtype=numpy.float32).tobytes(), clock)
                for t, v in vectors.items()
            ]
            insert = "INSERT OR IGNORE INTO vectors(model, digest, vector, used) VALUES (?, ?, ?, ?)"
            cursor = conn.executemany(insert, rows)
            self._row_bytes = len(rows[0][2]) + ROW_OVERHEAD
            total = _add_bytes(conn, cursor.rowcount * self._row_bytes)
            if total > self.max_bytes:
                evicted, total = _evict(conn, total - int(self.max_bytes * EVICT_TO))
                self.evicted += evicted
            conn.execute("COMMIT")
            self._bytes = total

    def stats(self) -> CacheStats:
        """Entries, bytes and this process's hits, misses, evictions and rebuilds (without reading the file)."""
        return self._stats(self._bytes // self._row_bytes if self._row_bytes else 0, self._bytes)


def _convert_layout(conn: sqlite3.Connection) -> None:
    """Move the vectors of a WITHOUT ROWID file (the first layout) into the rowid table, in one transaction.

    A process killed in the middle leaves the old table as it was. The byte count is
    recomputed with today's ROW_OVERHEAD. VACUUM then gives the freed pages back; when
    another process is using the file it cannot run, and SQLite reuses the pages instead.
    """
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'vectors'").fetchone()
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return
    conn.executescript(
        "BEGIN IMMEDIATE;"
        " DROP INDEX IF EXISTS vectors_by_use;"
        " ALTER TABLE vectors RENAME TO vectors_without_rowid;"
        + _DDL
        + " INSERT INTO vectors(model, digest, vector, used)"
        " SELECT model, digest, vector, used FROM vectors_without_rowid ORDER BY used;"
        " DROP TABLE vectors_without_rowid;"
        f" UPDATE meta SET value = (SELECT coalesce(sum(length(vector)), 0) + count(*) * {ROW_OVERHEAD}"
        " FROM vectors) WHERE key = 'bytes';"
    )
    conn.execute("COMMIT")
    log.info("vector cache: converted to the rowid layout")
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError as exc:
        log.info("vector cache: VACUUM after the conversion deferred (%s)", exc)


def _add_bytes(conn: sqlite3.Connection, delta: int) -> int:
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'bytes'", (delta,))
    return int(conn.execute("SELECT value FROM meta WHERE key = 'bytes'").fetchone()[0])


def _evict(conn: sqlite3.Connection, excess: int) -> tuple[int, int]:
    """Delete the least recently used rows until `excess` bytes are gone; returns how many rows, and the bytes left."""
    gone, freed = evict_least_used(
        conn,
        "SELECT model, digest, length(vector) FROM vectors ORDER BY used LIMIT 256",
        "DELETE FROM vectors WHERE model = ? AND digest = ?",
        excess,
        ROW_OVERHEAD,
    )
    return gone, _add_bytes(conn, -freed)
