"""Connections to the team store: libpq connection strings, bounded waits, errors in the index's terms.

psycopg 3 speaks through libpq, so a DSN may name a service (`service=team`, from
pg_service.conf) and passwords come from libpq's passfile (~/.pgpass, PGPASSFILE): lensmux's
own files never hold one. Every connection has a connect timeout and a statement timeout,
so an unreachable or stuck server costs a bounded wait, never a hung editor.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Iterator
from typing import Any

import psycopg

from lensmux.graph.index.errors import IndexStoreError, StoreUnreachable

__all__ = ["DSN_ENV", "Connection", "StoreUnreachable", "connect"]

DSN_ENV = "LENSMUX_INDEX_DSN"
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 15_000


def connect(
    dsn: str, *, application: str = "lensmux", statement_timeout_ms: int = STATEMENT_TIMEOUT_MS
) -> psycopg.Connection[Any]:
    """An autocommit connection to dsn; StoreUnreachable when the server does not answer.

    `statement_timeout_ms` 0 means none (a publisher's transaction writes a whole tree).
    """
    try:
        return psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=int(os.environ.get("PGCONNECT_TIMEOUT", CONNECT_TIMEOUT_S)),
            application_name=application,
            options=f"-c statement_timeout={int(statement_timeout_ms)}",
            # A server that vanishes mid-answer (a network partition) is noticed, not waited on forever.
            keepalives=1,
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
            tcp_user_timeout=CONNECT_TIMEOUT_S * 10_000,
        )
    except psycopg.OperationalError as exc:
        raise StoreUnreachable(f"team store unreachable: {_first_line(exc)}") from exc


class Connection:
    """Connections used from any thread, each by one thread at a time (one statement or transaction).

    With several (readers), a search's keyword and vector questions, which the engine asks
    from two worker threads at once, run side by side at the server instead of in turn.
    A thread that already holds one gets the same one again (re-entrant: a publisher holds
    one transaction around the writes of a whole snapshot).
    """

    def __init__(self, *conns: psycopg.Connection[Any]) -> None:
        self._all = list(conns)
        self._free: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
        for conn in conns:
            self._free.put(conn)
        self._held = threading.local()

    @contextlib.contextmanager
    def use(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection, held by this thread; psycopg errors become index errors."""
        held: psycopg.Connection[Any] | None = getattr(self._held, "conn", None)
        if held is not None:
            with translate_errors(what):
                yield held
            return
        conn = self._free.get()
        self._held.conn = conn
        try:
            with translate_errors(what):
                yield conn
        finally:
            self._held.conn = None
            self._free.put(conn)

    @contextlib.contextmanager
    def transaction(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """use() inside one transaction: committed when the block ends, rolled back if it raises."""
        with self.use(what) as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        """Close every connection (call when no thread uses them)."""
        for conn in self._all:
            conn.close()


@contextlib.contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """psycopg errors as the index's own: a lost server is StoreUnreachable, the rest IndexStoreError."""
    try:
        yield
    except psycopg.errors.QueryCanceled as exc:
        # A statement over its timeout: the store is too slow to wait for, as good as unreachable.
        raise StoreUnreachable(f"{what}: timed out ({_first_line(exc)})") from exc
    except psycopg.OperationalError as exc:
        raise StoreUnreachable(f"{what}: {_first_line(exc)}") from exc
    except psycopg.Error as exc:
        raise IndexStoreError(f"{what}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
