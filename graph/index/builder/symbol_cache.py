"""documentSymbol answers by content, shared by every root of a user: key -> the server's answer.

A second worktree or a re-clone asks the language server about the same texts again, and
for pyright that is most of what indexing a root costs beside the model (issue 23). Where
a server's answer is a function of the file's text and of things the daemon can name (the
server's version, its settings, the root's configuration: the adapter's `symbols_by_text`),
the indexer's symbol source asks this cache first with a key made of those and the text's
sha256, and stores what the server answered. What makes a key exact is the adapter's
business (adapters/pyright.py says why pyright's is, and clangd has none); this module
only keeps bytes under keys.

One SQLite file per user (`$XDG_STATE_HOME/lensmux/symbol-cache.sqlite`, WAL, each write
one transaction), bounded in bytes: past `max_bytes` the least recently used answers go
until it holds 90% of it. It is only a cache: an error in it is logged and costs its hits,
never an index run; a file SQLite calls corrupt is deleted and started again.
Thread safety: every method may be called from any thread (one connection, one lock).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from lensmux.graph.index.location import state_home

log = logging.getLogger(__name__)

FILE_NAME = "symbol-cache.sqlite"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What a row costs beyond its packed answer (key, LRU stamp, b-tree), counted against max_bytes.
ROW_OVERHEAD = 64
EVICT_TO = 0.9

_DDL = """
CREATE TABLE IF NOT EXISTS answers (key BLOB PRIMARY KEY, answer BLOB NOT NULL, used INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS answers_by_use ON answers(used);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('bytes', 0), ('clock', 0), ('entries', 0);
"""


def default_cache_path() -> Path:
    """`$XDG_STATE_HOME/lensmux/symbol-cache.sqlite`."""
    return state_home() / "lensmux" / FILE_NAME


@dataclass(frozen=True, slots=True)
class SymbolCacheStats:
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


class SymbolCache:
    """The user's documentSymbol answers by key; open with SymbolCache.open, close with close()."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = self.misses = self.evicted = self.rebuilt = 0
        # As of this process's last read or write: stats() reads no file (status runs on the event loop).
        self._bytes = self._entries = 0

    @classmethod
    def open(cls, path: Path | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> SymbolCache:
        """Open (or create) the cache file; a corrupt file is started again, an unusable one leaves the cache off."""
        cache = cls(path or default_cache_path(), max_bytes)
        with cache._lock:
            cache._connect()
        return cache

    def _connect(self) -> None:
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
                try:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                    conn.executescript(_DDL)
                    counts = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('bytes', 'entries')"))
                except sqlite3.Error:
                    conn.close()
                    raise
            except sqlite3.OperationalError as exc:
                # Locked, read-only, no space: not the file's fault; no cache this time.
                log.warning("symbol cache %s unavailable (%s); asking the servers", self.path, exc)
                return
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    log.error("symbol cache %s unusable after a rebuild (%s); asking the servers", self.path, exc)
                    return
                self._discard(exc)
                continue
            except OSError as exc:
                log.warning("symbol cache %s unavailable (%s); asking the servers", self.path, exc)
                return
            self._conn = conn
            self._bytes, self._entries = int(counts["bytes"]), int(counts["entries"])
            return

    def _discard(self, exc: BaseException) -> None:
        """Delete a file SQLite says is corrupt: it holds nothing a server cannot answer again."""
        log.error("symbol cache %s is corrupt (%s); starting it again", self.path, exc)
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
                log.warning("symbol cache %s: %s failed (%s)", self.path, what, exc)
                if self._conn is not None and self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
            except sqlite3.DatabaseError as exc:
                self._discard(exc)
                self._connect()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def get(self, key: bytes) -> Any | None:
        """The answer stored under `key` (now the most recently used), or None."""
        found: Any | None = None
        with self._using("reading an answer") as conn:
            if conn is None:
                return None
            row = conn.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            if row is not None:
                try:
                    found = msgspec.json.decode(zlib.decompress(row[0]))
                except (zlib.error, msgspec.DecodeError) as exc:
                    # A damaged row is a miss; the server's answer replaces it.
                    log.warning("symbol cache %s: unreadable answer dropped (%s)", self.path, exc)
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("DELETE FROM answers WHERE key = ?", (key,))
                    self._bytes, self._entries = _add(conn, -(len(row[0]) + ROW_OVERHEAD), -1)
                    conn.execute("COMMIT")
                else:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("UPDATE answers SET used = ? WHERE key = ?", (_tick(conn), key))
                    conn.execute("COMMIT")
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: bytes, answer: Any) -> None:
        """Store a server's answer under `key`; past max_bytes the least recently used go."""
        if self.max_bytes <= 0:
            return
        packed = zlib.compress(msgspec.json.encode(answer), 6)
        with self._using("storing an answer") as conn:
            if conn is None:
                return
            conn.execute("BEGIN IMMEDIATE")
            old = conn.execute("SELECT length(answer) FROM answers WHERE key = ?", (key,)).fetchone()
            conn.execute(
                "INSERT OR REPLACE INTO answers(key, answer, used) VALUES (?, ?, ?)", (key, packed, _tick(conn))
            )
            delta = len(packed) + ROW_OVERHEAD - (int(old[0]) + ROW_OVERHEAD if old else 0)
            total, entries = _add(conn, delta, 0 if old else 1)
            if total > self.max_bytes:
                total, entries, gone = _evict(conn, total - int(self.max_bytes * EVICT_TO))
                self.evicted += gone
            conn.execute("COMMIT")
            self._bytes, self._entries = total, entries

    def stats(self) -> SymbolCacheStats:
        """Entries, bytes and this process's hits, misses, evictions and rebuilds (without reading the file)."""
        on = self._conn is not None
        return SymbolCacheStats(
            str(self.path),
            self._entries if on else 0,
            self._bytes if on else 0,
            self.max_bytes,
            self.hits,
            self.misses,
            self.evicted,
            self.rebuilt,
        )


def _tick(conn: sqlite3.Connection) -> int:
    """The next LRU stamp: a counter, so uses order the same however fast they come."""
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'clock'")
    return int(conn.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()[0])


def _add(conn: sqlite3.Connection, delta_bytes: int, delta_entries: int) -> tuple[int, int]:
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'bytes'", (delta_bytes,))
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'entries'", (delta_entries,))
    counts = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('bytes', 'entries')"))
    return int(counts["bytes"]), int(counts["entries"])


def _evict(conn: sqlite3.Connection, excess: int) -> tuple[int, int, int]:
    """Delete the least recently used answers until `excess` bytes are gone.

    Returns the bytes and entries left, and how many went.
    """
    gone = freed = 0
    while freed < excess:
        rows = conn.execute("SELECT key, length(answer) FROM answers ORDER BY used LIMIT 256").fetchall()
        if not rows:
            break
        take = []
        for key, length in rows:
            take.append((key,))
            freed += int(length) + ROW_OVERHEAD
            if freed >= excess:
                break
        conn.executemany("DELETE FROM answers WHERE key = ?", take)
        gone += len(take)
    total, entries = _add(conn, -freed, -gone)
    return total, entries, gone
