"""Opening a root's SQLite file: lock, integrity check, schema check, recovery.

A corrupt file is moved aside (`index.sqlite.corrupt-<ts>`), one written for another schema
version is kept whole for the lensmux that reads it (set_aside.py; taken back by that
version), and one written for another model or root is deleted; in each case a fresh empty
index takes its place, because the index can be rebuilt from the working tree (all but the
learned call graph, which is why another version's index is kept).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lensmux.graph.index.errors import (
    IndexCorrupt,
    IndexLocked,
    IndexOtherSchema,
    IndexSchemaMismatch,
    IndexStoreError,
    RootNotIndexed,
)
from lensmux.graph.index.sqlite import learned
from lensmux.graph.index.sqlite.chunk_text import register_functions
from lensmux.graph.index.sqlite.migrate import MIGRATABLE_VERSION, migrate
from lensmux.graph.index.sqlite.schema import (
    DDL,
    LEARNED_DDL,
    META_CHUNKS,
    META_CREATED_AT,
    META_DIM,
    META_FILES,
    META_FTS_DELETED,
    META_MODEL_ID,
    META_ROOT,
    META_SCHEMA_VERSION,
    META_SYMBOLS,
    SCHEMA_VERSION,
)
from lensmux.graph.index.sqlite.set_aside import DB_NAME, finish_interrupted, set_aside, take_back

log = logging.getLogger(__name__)

LOCK_NAME = "lock"


@dataclass(slots=True)
class OpenedDatabase:
    """The writer and reader connections plus what recovery had to do, if anything."""

    writer: sqlite3.Connection
    reader: sqlite3.Connection
    lock_fd: int
    recovery_note: str | None


def _connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    # isolation_level=None: transactions are opened explicitly with BEGIN IMMEDIATE.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    register_functions(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Bounded page cache per connection (2 MiB; two connections per root), no memory-mapped I/O:
    # the daemon's memory must not grow with the size of the indexes it holds.
    conn.execute("PRAGMA cache_size = -2048")
    conn.execute("PRAGMA mmap_size = 0")
    if read_only:
        conn.execute("PRAGMA query_only = ON")
    return conn


def _lock(directory: Path) -> int:
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise IndexLocked(f"another process has the index in {directory} open") from None
    return fd


def _check(conn: sqlite3.Connection, root: Path, model_id: str, dim: int) -> bool:
    """True when the file is a usable index, False when it is empty; raises otherwise.

    An index of schema MIGRATABLE_VERSION is converted in place first (migrate.py).
    """
    try:
        result = conn.execute("PRAGMA quick_check").fetchall()
        if result != [("ok",)]:
            raise IndexCorrupt(f"integrity check failed: {result[:3]}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return False
        if "meta" not in tables:
            raise IndexSchemaMismatch("database has no meta table")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise IndexCorrupt(f"cannot read database: {exc}") from exc
    expected = {
        META_SCHEMA_VERSION: str(SCHEMA_VERSION),
        META_MODEL_ID: model_id,
        META_DIM: str(dim),
        META_ROOT: str(root),
    }
    if meta.get(META_SCHEMA_VERSION) == MIGRATABLE_VERSION and all(
        meta.get(key) == want for key, want in expected.items() if key != META_SCHEMA_VERSION
    ):
        try:
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise IndexSchemaMismatch(f"cannot convert schema {MIGRATABLE_VERSION}: {exc}") from exc
        return True
    found = meta.get(META_SCHEMA_VERSION)
    if found != str(SCHEMA_VERSION):
        raise IndexOtherSchema(f"written for schema {found}, this lensmux reads {SCHEMA_VERSION}", str(found))
    for key, want in expected.items():
        if meta.get(key) != want:
            raise IndexSchemaMismatch(f"{key} is {meta.get(key)!r}, expected {want!r}")
    return True


def _open_checked(db: Path, root: Path, model_id: str, dim: int) -> tuple[sqlite3.Connection, bool]:
    try:
        conn = _connect(db)
    except sqlite3.DatabaseError as exc:
        raise IndexCorrupt(f"cannot open database: {exc}") from exc
    try:
        return conn, _check(conn, root, model_id, dim)
    except BaseException:
        conn.close()
        raise


def _create(conn: sqlite3.Connection, root: Path, model_id: str, dim: int) -> None:
    # The script leaves its transaction open so the meta rows commit with the tables.
    conn.executescript("BEGIN IMMEDIATE;\n" + DDL)
    values = {
        META_SCHEMA_VERSION: str(SCHEMA_VERSION),
        META_MODEL_ID: model_id,
        META_DIM: str(dim),
        META_ROOT: str(root),
        META_CREATED_AT: str(time.time()),
        META_FILES: "0",
        META_SYMBOLS: "0",
        META_CHUNKS: "0",
    }
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", values.items())
    conn.execute("COMMIT")


def _set_aside(db: Path, how: str) -> Path | None:
    """Move (how='corrupt') or delete (how='stale': another model or root) the database and its WAL files."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    moved: Path | None = None
    for suffix in ("", "-wal", "-shm"):
        path = db.with_name(db.name + suffix)
        if not path.exists():
            continue
        if how == "corrupt" and suffix != "-shm":
            target = path.with_name(f"{path.name}.corrupt-{stamp}")
            os.replace(path, target)
            moved = moved or target
        else:
            path.unlink()
    return moved


def open_database(directory: Path, root: Path, model_id: str, dim: int, create: bool = True) -> OpenedDatabase:
    """Lock and open directory/index.sqlite, recovering from corruption or a stale schema."""
    db = directory / DB_NAME
    if not create and not db.exists():
        raise RootNotIndexed(f"no index for {root} in {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    lock_fd = _lock(directory)
    try:
        finish_interrupted(directory)
        note = take_back(directory, str(SCHEMA_VERSION))
        try:
            writer, usable = _open_checked(db, root, model_id, dim)
        except (IndexCorrupt, IndexSchemaMismatch) as exc:
            if isinstance(exc, IndexOtherSchema):
                kept = set_aside(directory, exc.version)
                note = f"index database was {exc}; kept in {kept} for that version; rebuilding"
                log.warning("%s: %s", db, note)
            elif isinstance(exc, IndexCorrupt):
                moved = _set_aside(db, "corrupt")
                note = f"index database was corrupt ({exc}); moved aside to {moved}; rebuilding"
                log.error("%s: %s", db, note)
            else:
                _set_aside(db, "stale")
                note = f"index database does not match ({exc}); rebuilding"
                log.warning("%s: %s", db, note)
            writer = _connect(db)
            usable = False
        try:
            # WAL keeps readers (searches) going while a batch is being written.
            writer.execute("PRAGMA journal_mode = WAL")
            if not usable:
                _create(writer, root, model_id, dim)
            writer.executescript(LEARNED_DDL)
            learned.ensure_counts(writer)
            # Added after schema 2's first files: an index without it has deleted nothing since.
            writer.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, '0')", (META_FTS_DELETED,))
            reader = _connect(db, read_only=True)
        except sqlite3.DatabaseError as exc:
            writer.close()
            raise IndexCorrupt(f"cannot initialise {db}: {exc}") from exc
    except BaseException:
        os.close(lock_fd)
        raise
    return OpenedDatabase(writer, reader, lock_fd, note)


@contextlib.contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Map sqlite3 errors to the index's own error types."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise IndexStoreError(f"{what}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise IndexCorrupt(f"{what}: {exc}") from exc
