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
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy
import numpy.typing as npt

from lensmux.graph.index.location import state_home

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


def default_cache_path() -> Path:
    """`$XDG_STATE_HOME/lensmux/vector-cache.sqlite`."""
    return state_home() / "lensmux" / FILE_NAME


def text_digest(text: str) -> bytes:
    """The key of a chunk text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class VectorCacheStats:
    """What `lensmux status` shows of the cache."""

    path: str
    entries: int
    bytes: int
    max_bytes: int
    hits: int
    misses: int
    evicted: int
    rebuilt: int

    def as_dict(self) -> dict[str, object]:
        """For JSON."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class VectorCache:
    """The user's content-addressed vectors; open with VectorCache.open, close with close()."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._models: dict[str, int] = {}
        self.hits = self.misses = self.evicted = self.rebuilt = 0
        # As of this process's last read or write of the file: stats() takes neither the lock
        # nor the file, because `lensmux status` runs on the daemon's event loop.
        self._bytes = 0
        self._row_bytes = 0

    @classmethod
    def open(cls, path: Path | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> VectorCache:
        """Open (or create) the cache file; a file that cannot be used is started again, or the cache stays off."""
        cache = cls(path or default_cache_path(), max_bytes)
        with cache._lock:
            cache._connect()
        return cache

    # -- the file ---------------------------------------------------------------------

    def _connect(self) -> None:
        """Open the file, and start it again once if SQLite cannot read it; None (off) if that fails too."""
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
                try:
                    # Takes effect only in a new, empty file (before WAL and the first table).
                    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                    _convert_layout(conn)
                    conn.executescript(_DDL)
                    size = int(conn.execute("SELECT value FROM meta WHERE key = 'bytes'").fetchone()[0])
                    row = conn.execute("SELECT length(vector) FROM vectors LIMIT 1").fetchone()
                except sqlite3.Error:
                    conn.close()
                    raise
            except sqlite3.OperationalError as exc:
                # Locked, read-only, no space: not the file's fault; no cache this time.
                log.warning("vector cache %s unavailable (%s); embedding without it", self.path, exc)
                return
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    log.error("vector cache %s unusable after a rebuild (%s); embedding without it", self.path, exc)
                    return
                self._discard(exc)
                continue
            except OSError as exc:
                log.warning("vector cache %s unavailable (%s); embedding without it", self.path, exc)
                return
            self._conn = conn
            self._models = {}
            self._bytes = size
            self._row_bytes = int(row[0]) + ROW_OVERHEAD if row else 0
            return

    def _discard(self, exc: BaseException) -> None:
        """Delete a file SQLite says is corrupt (a cache holds nothing that cannot be made again)."""
        log.error("vector cache %s is corrupt (%s); starting it again", self.path, exc)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            except OSError as unlink_exc:
                log.warning("cannot remove %s%s: %s", self.path, suffix, unlink_exc)
        self.rebuilt += 1

    @contextmanager
    def _using(self, what: str) -> Iterator[sqlite3.Connection | None]:
        """The connection (None when the cache is off); errors are logged and a corrupt file rebuilt."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.OperationalError as exc:
                log.warning("vector cache %s: %s failed (%s)", self.path, what, exc)
                _rollback(self._conn)
            except sqlite3.DatabaseError as exc:
                self._discard(exc)
                self._connect()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

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
                clock = _tick(conn)
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
            clock = _tick(conn)
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

    def stats(self) -> VectorCacheStats:
        """Entries, bytes and this process's hits, misses, evictions and rebuilds (without reading the file)."""
        size = self._bytes if self._conn is not None else 0
        entries = size // self._row_bytes if self._row_bytes else 0
        return VectorCacheStats(
            str(self.path), entries, size, self.max_bytes, self.hits, self.misses, self.evicted, self.rebuilt
        )


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


def _rollback(conn: sqlite3.Connection | None) -> None:
    if conn is not None and conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.warning("vector cache: rollback failed (%s)", exc)


def _tick(conn: sqlite3.Connection) -> int:
    """The next LRU stamp: a counter, not the clock, so uses order the same however fast they come."""
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'clock'")
    return int(conn.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()[0])


def _add_bytes(conn: sqlite3.Connection, delta: int) -> int:
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'bytes'", (delta,))
    return int(conn.execute("SELECT value FROM meta WHERE key = 'bytes'").fetchone()[0])


def _evict(conn: sqlite3.Connection, excess: int) -> tuple[int, int]:
    """Delete the least recently used rows until `excess` bytes are gone; returns how many rows, and the bytes left."""
    gone = freed = 0
    while freed < excess:
        rows = conn.execute("SELECT model, digest, length(vector) FROM vectors ORDER BY used LIMIT 256").fetchall()
        if not rows:
            break
        take = []
        for model, digest, length in rows:
            take.append((model, digest))
            freed += length + ROW_OVERHEAD
            if freed >= excess:
                break
        conn.executemany("DELETE FROM vectors WHERE model = ? AND digest = ?", take)
        gone += len(take)
    return gone, _add_bytes(conn, -freed)
