"""Connections to the team store: libpq connection strings, bounded waits, errors in the index's terms.

psycopg 3 speaks through libpq, so a DSN may name a service (`service=team`, from
pg_service.conf) and passwords come from libpq's passfile (~/.pgpass, PGPASSFILE): lensmux's
own files never hold one. Every connection has a connect timeout and a statement timeout,
so an unreachable or stuck server costs a bounded wait, never a hung editor. A server that
stops answering without going away (a partition, a stopped process, a proxy that holds the
traffic) never cancels its own statement and libpq waits on an open socket for ever: so a
statement the server should have ended is given up from this side too (Connection's
`limit_s`, interrupt_stalled()), and the call fails as StoreUnreachable.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from lensmux.graph.index.errors import IndexStoreError, StoreUnreachable

__all__ = ["CONNECT_TIMEOUT_S", "DSN_ENV", "STALLED_AFTER_S", "Connection", "StoreUnreachable", "connect"]

DSN_ENV = "LENSMUX_INDEX_DSN"
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 15_000
# A statement the server has not ended by its own timeout, plus a connect timeout of slack for
# the server's answer to travel: the server is not answering at all.
STALLED_AFTER_S = STATEMENT_TIMEOUT_MS / 1000 + CONNECT_TIMEOUT_S
PRIVILEGE_HINT = (
    "the team store's administrator lets a role read with `lensmux team grant ROLE`"
    " and publish with `lensmux team grant --publisher ROLE`"
)


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
    one transaction around the writes of a whole snapshot). close() never frees a connection
    a thread holds (libpq's connection is not safe to free under a thread using it): the
    holder closes it when it gives it back.
    """

    def __init__(self, *conns: psycopg.Connection[Any], limit_s: float | None = None) -> None:
        """`limit_s`: how long one use() may hold a connection before interrupt_stalled() gives it up."""
        self._all = list(conns)
        # None, once closed: tells a waiting use() there is nothing more to take.
        self._free: queue.SimpleQueue[psycopg.Connection[Any] | None] = queue.SimpleQueue()
        for conn in conns:
            self._free.put(conn)
        self._held = threading.local()
        self._limit_s = limit_s
        self._lock = threading.Lock()
        self._since: dict[int, float] = {}  # id(connection) -> when a thread took it
        self._closed = False  # set by close(), under _lock

    @contextlib.contextmanager
    def use(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection, held by this thread; psycopg errors become index errors."""
        held: psycopg.Connection[Any] | None = getattr(self._held, "conn", None)
        if held is not None:
            with translate_errors(what):
                yield held
            return
        taken = self._free.get()
        if taken is None:  # close() woke this waiter: there is nothing left to take
            self._free.put(None)
            raise StoreUnreachable(f"{what}: the team store's connections are closed")
        conn = taken
        self._held.conn = conn
        with self._lock:
            self._since[id(conn)] = time.monotonic()
        try:
            with translate_errors(what):
                yield conn
        finally:
            self._held.conn = None
            with self._lock:
                self._since.pop(id(conn), None)
                closed = self._closed
                if not closed:
                    self._free.put(conn)
            if closed:
                conn.close()  # close() came while this thread held it

    def interrupt_stalled(self, now: float) -> int:
        """Shut down the socket of every connection held longer than limit_s; how many.

        The thread waiting on it then reads the end of the stream: psycopg raises
        OperationalError, which use() turns into StoreUnreachable, and the connection is
        unusable from then on (the root goes back to its local index). Never blocks.
        """
        if self._limit_s is None:
            return 0
        with self._lock:
            stalled = [c for c in self._all if now - self._since.get(id(c), now) > self._limit_s]
        for conn in stalled:
            _shut_down(conn)
        return len(stalled)

    @contextlib.contextmanager
    def transaction(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """use() inside one transaction: committed when the block ends, rolled back if it raises."""
        with self.use(what) as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        """Close every free connection now, and each held one when its thread gives it back; never blocks.

        Any thread may call it, while others use connections (the daemon detaches a root on
        its event loop while a search's worker thread reads): a later use() fails as
        StoreUnreachable instead of waiting.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            free: list[psycopg.Connection[Any]] = []
            while True:
                try:
                    conn = self._free.get_nowait()
                except queue.Empty:
                    break
                if conn is not None:
                    free.append(conn)
            self._free.put(None)
        for conn in free:
            conn.close()


def _shut_down(conn: psycopg.Connection[Any]) -> None:
    # A shutdown of the socket (a duplicate of its descriptor: libpq keeps its own) wakes the
    # thread polling it; closing the connection from here would race with that thread.
    try:
        with socket.socket(fileno=os.dup(conn.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, psycopg.Error):
        pass  # already closed or broken: its user has failed, or is about to


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
    except psycopg.errors.InsufficientPrivilege as exc:
        # A role outside lensmux_reader/lensmux_writer, or publishing without a write grant: the
        # server's words alone ("permission denied for schema lensmux") do not say who can help.
        raise IndexStoreError(f"{what}: {_first_line(exc)} ({PRIVILEGE_HINT})") from exc
    except psycopg.Error as exc:
        raise IndexStoreError(f"{what}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
