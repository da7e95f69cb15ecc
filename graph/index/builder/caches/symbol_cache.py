"""documentSymbol answers by content, shared by every root of a user: key -> the server's answer.

A second worktree or a re-clone asks the language server about the same texts again, and
for pyright that is most of what indexing a root costs beside the model (issue 23). Where
a server's answer is a function of the file's text and of things the daemon can name (the
server's version, its settings, the root's configuration: the adapter's `symbols_by_text`),
the indexer's symbol source asks this cache first with a key made of those and the text's
sha256, and stores what the server answered. What makes a key exact is the adapter's
business (adapters/pyright/pyright_symbols.py says why pyright's is, adapters/clangd/clangd_symbols.py
why clangd's is: its flags, configuration and the root's header epoch); this module only keeps
bytes under keys.

One SQLite file per user (`$XDG_STATE_HOME/lensmux/symbol-cache.sqlite`, WAL, each write
one transaction), bounded in bytes: past `max_bytes` the least recently used answers go
until it holds 90% of it. It is only a cache: an error in it is logged and costs its hits,
never an index run; a file SQLite calls corrupt is deleted and started again (cache_file.py).
"""

from __future__ import annotations

import logging
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import msgspec

from lensmux.graph.index.builder.caches.cache_file import CacheFile, CacheStats, evict_least_used, tick

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


class SymbolCache(CacheFile):
    """The user's documentSymbol answers by key; open with SymbolCache.open, close with close()."""

    file_name = FILE_NAME
    default_max_bytes = DEFAULT_MAX_BYTES
    label = "symbol cache"
    without = "asking the servers"

    def __init__(self, path: Path, max_bytes: int) -> None:
        super().__init__(path, max_bytes)
        # As of this process's last read or write: stats() reads no file (status runs on the event loop).
        self._bytes = self._entries = 0

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(_DDL)
        counts = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('bytes', 'entries')"))
        self._bytes, self._entries = int(counts["bytes"]), int(counts["entries"])

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
                    conn.execute("UPDATE answers SET used = ? WHERE key = ?", (tick(conn), key))
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
                "INSERT OR REPLACE INTO answers(key, answer, used) VALUES (?, ?, ?)", (key, packed, tick(conn))
            )
            delta = len(packed) + ROW_OVERHEAD - (int(old[0]) + ROW_OVERHEAD if old else 0)
            total, entries = _add(conn, delta, 0 if old else 1)
            if total > self.max_bytes:
                total, entries, gone = _evict(conn, total - int(self.max_bytes * EVICT_TO))
                self.evicted += gone
            conn.execute("COMMIT")
            self._bytes, self._entries = total, entries

    def stats(self) -> CacheStats:
        """Entries, bytes and this process's hits, misses, evictions and rebuilds (without reading the file)."""
        return self._stats(self._entries, self._bytes)


def _add(conn: sqlite3.Connection, delta_bytes: int, delta_entries: int) -> tuple[int, int]:
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'bytes'", (delta_bytes,))
    conn.execute("UPDATE meta SET value = value + ? WHERE key = 'entries'", (delta_entries,))
    counts = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('bytes', 'entries')"))
    return int(counts["bytes"]), int(counts["entries"])


def _evict(conn: sqlite3.Connection, excess: int) -> tuple[int, int, int]:
    """Delete the least recently used answers until `excess` bytes are gone.

    Returns the bytes and entries left, and how many went.
    """
    gone, freed = evict_least_used(
        conn,
        "SELECT key, length(answer) FROM answers ORDER BY used LIMIT 256",
        "DELETE FROM answers WHERE key = ?",
        excess,
        ROW_OVERHEAD,
    )
    total, entries = _add(conn, -freed, -gone)
    return total, entries, gone
