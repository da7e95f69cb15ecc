"""The team store as a whole: its connections, and one snapshot's store and vectors opened on them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lensmux.graph.index.errors import IndexSchemaMismatch
from lensmux.graph.index.postgres.contents.vectors import SnapshotVectors
from lensmux.graph.index.postgres.contents.writer import SnapshotStore
from lensmux.graph.index.postgres.database.connection import STALLED_AFTER_S, STATEMENT_TIMEOUT_MS, Connection, connect
from lensmux.graph.index.postgres.database.schema import SCHEMA_VERSION, schema_version
from lensmux.graph.index.postgres.snapshots import Snapshot, ancestors, find_published, repository_id

__all__ = ["TeamStore"]


# How often the watchdog looks for a statement the server has stopped answering.
_WATCH_INTERVAL_S = 1.0


class TeamStore:
    """One database of the team store: a reading and a writing connection, shared by its snapshots.

    Its watchdog thread (started here, joined by close()) gives up every statement a stalled
    server has held past STALLED_AFTER_S, so that no worker thread, and no search, waits on it
    for ever; a publisher's writing connection, which has no statement timeout, is not watched.
    """

    def __init__(self, dsn: str, *, application: str = "lensmux", publishing: bool = False) -> None:
        """`publishing`: the writing connection has no statement timeout (one transaction writes a tree)."""
        self.dsn = dsn
        # Two readers: a search asks its keyword and vector questions at once.
        first = connect(dsn, application=application)
        try:
            self.reader = Connection(first, connect(dsn, application=application), limit_s=STALLED_AFTER_S)
        except BaseException:
            first.close()
            raise
        try:
            self._check_schema()
            timeout = 0 if publishing else STATEMENT_TIMEOUT_MS
            self.writer = Connection(
                connect(dsn, application=application, statement_timeout_ms=timeout),
                limit_s=None if publishing else STALLED_AFTER_S,
            )
        except BaseException:
            self.reader.close()
            raise
        self._closing = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="lensmux-team-store-watchdog", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while not self._closing.wait(_WATCH_INTERVAL_S):
            now = time.monotonic()
            self.reader.interrupt_stalled(now)
            self.writer.interrupt_stalled(now)

    def _check_schema(self) -> None:
        with self.reader.use("check schema") as conn:
            found = schema_version(conn)
        if found != SCHEMA_VERSION:
            raise IndexSchemaMismatch(f"team store schema is {found}, lensmux needs {SCHEMA_VERSION}")

    def close(self) -> None:
        """Stop the watchdog and close the connections: at once those no thread holds, each other by its holder."""
        self._closing.set()
        if self._watchdog is not threading.current_thread():
            self._watchdog.join()
        self.reader.close()
        self.writer.close()

    def open(
        self, root: Path, snapshot: Snapshot, *, ef_search: int = 400, exact_below: int = 20_000
    ) -> tuple[SnapshotStore, SnapshotVectors]:
        """The IndexWriter and VectorWriter of one snapshot, with paths relative to root."""
        store = SnapshotStore(root.resolve(), snapshot.id, snapshot.repo, reader=self.reader, writer=self.writer)
        vectors = SnapshotVectors(
            snapshot.id,
            snapshot.dim,
            reader=self.reader,
            writer=self.writer,
            ef_search=ef_search,
            exact_below=exact_below,
            mask=store.mask,
        )
        # write_files() stores chunks' vectors with their rows, past SnapshotVectors.add().
        store.clear_also(vectors.forget)
        return store, vectors

    def nearest_published(self, root: Path, model_id: str) -> Snapshot | None:
        """The published snapshot of the nearest ancestor of root's HEAD (HEAD included), for this model."""
        repo = repository_id(root)
        with self.reader.use("find published snapshot") as conn:
            return find_published(conn, repo, ancestors(root), model_id)
