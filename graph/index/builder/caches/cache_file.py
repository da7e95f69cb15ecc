"""The SQLite file a per-user cache lives in (vector_cache.py, symbol_cache.py): never its caller's failure.

A cache holds nothing that cannot be made again, so: a file SQLite calls corrupt is deleted
and started again (once; the cache stays off if that fails too), one that is locked, read-only
or on a full disk leaves the cache off for now, and an error in a read or write is logged and
costs that call its hits. One connection and one lock: every method may be called from any
thread. Subclasses create their tables and read their counts in `_prepare`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from lensmux.graph.index.location import state_home

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What `lensmux status` shows of a cache."""

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


class CacheFile:
    """One cache's connection and counters.

    `file_name` is its file under `$XDG_STATE_HOME/lensmux/`, `label` names it in log lines,
    `without` says what its users do while it is off.
    """

    file_name = "cache.sqlite"
    default_max_bytes = 64 * 1024 * 1024
    label = "cache"
    without = "going on without it"

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = self.misses = self.evicted = self.rebuilt = 0

    @classmethod
    def default_path(cls) -> Path:
        """`$XDG_STATE_HOME/lensmux/<file_name>`."""
        return state_home() / "lensmux" / cls.file_name

    @classmethod
    def open(cls, path: Path | None = None, *, max_bytes: int | None = None) -> Self:
        """Open (or create) the cache file; a corrupt one is started again, an unusable one leaves the cache off."""
        cache = cls(path or cls.default_path(), cls.default_max_bytes if max_bytes is None else max_bytes)
        with cache._lock:
            cache._connect()
        return cache

    def _stats(self, entries: int, size: int) -> CacheStats:
        on = self._conn is not None
        return CacheStats(
            str(self.path),
            entries if on else 0,
            size if on else 0,
            self.max_bytes,
            self.hits,
            self.misses,
            self.evicted,
            self.rebuilt,
        )

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Set the file up on a new connection (pragmas, tables, counts); raise sqlite3.Error if it cannot be."""
        raise NotImplementedError

    def _connect(self) -> None:
        """Open the file, and start it again once if SQLite cannot read it; the cache stays off if that fails too."""
        for attempt in (1, 2):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
                try:
                    self._prepare(conn)
                except sqlite3.Error:
                    conn.close()
                    raise
            except sqlite3.OperationalError as exc:
                # Locked, read-only, no space: not the file's fault; no cache this time.
                log.warning("%s %s unavailable (%s); %s", self.label, self.path, exc, self.without)
                return
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    log.error("%s %s unusable after a rebuild (%s); %s", self.label, self.path, exc, self.without)
                    return
                self._discard(exc)
                continue
            except OSError as exc:
                log.warning("%s %s unavailable (%s); %s", self.label, self.path, exc, self.without)
                return
            self._conn = conn
            return

    def _discard(self, exc: BaseException) -> None:
        """Delete a file SQLite says is corrupt."""
        log.error("%s %s is corrupt (%s); starting it again", self.label, self.path, exc)
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
                log.warning("%s %s: %s failed (%s)", self.label, self.path, what, exc)
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


def evict_least_used(conn: sqlite3.Connection, select: str, delete: str, excess: int, overhead: int) -> tuple[int, int]:
    """Delete rows, least recently used first, until `excess` bytes are freed; returns (rows, bytes) freed.

    `select` gives a batch of the oldest rows, their key columns then their length; `delete`
    takes the key columns. Each row counts its length plus `overhead` (the row's own bytes).
    """
    gone = freed = 0
    while freed < excess:
        rows = conn.execute(select).fetchall()
        if not rows:
            break
        take = []
        for *key, length in rows:
            take.append(tuple(key))
            freed += int(length) + overhead
            if freed >= excess:
                break
        conn.executemany(delete, take)
        gone += len(take)
    return gone, freed


def tick(conn: sqlite3.Connection) -> int:
    """The next LRU stamp: a counter in `meta`, not the clock, so uses order the same however fast they come."""
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'clock'")
    return int(conn.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()[0])


def _rollback(conn: sqlite3.Connection | None) -> None:
    if conn is not None and conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.warning("cache: rollback failed (%s)", exc)
