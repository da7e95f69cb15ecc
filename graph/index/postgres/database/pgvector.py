"""What the team store needs of pgvector, checked before `team init` makes anything (issue 24).

The store searches one snapshot through an HNSW index with iterative index scans
(vectors.py: `SET LOCAL hnsw.iterative_scan`), which pgvector has had since 0.8.0; with an
older one `team init` fails on the HNSW index (before 0.5.0: "access method hnsw does not
exist"), or later a search fails on the setting or cuts a snapshot's answer short. pgvector
is not a trusted extension: only a superuser can create it in a database, and the
administrator `team init` runs as usually is not one. Each case is refused here with what to
do, in the administrator's terms, instead of the server's first error.
Not every distribution packages pgvector (Debian 12 does not): the messages name the version,
not a package.
"""

from __future__ import annotations

from typing import Any

import psycopg

from lensmux.graph.index.errors import IndexStoreError

__all__ = ["MIN_PGVECTOR", "PgvectorUnusable", "ensure_pgvector", "version_tuple"]

MIN_PGVECTOR = (0, 8, 0)
_MIN_TEXT = ".".join(map(str, MIN_PGVECTOR))


class PgvectorUnusable(IndexStoreError):
    """The server's pgvector is missing, too old, or not created in the database and this role may not create it."""


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.8.6' -> (0, 8, 6); a suffix after the numbers ('0.8.0-dev') is ignored."""
    parts: list[int] = []
    for piece in text.split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def ensure_pgvector(conn: psycopg.Connection[Any]) -> str:
    """Check (and create, if this role may) the `vector` extension in conn's database; its version.

    Raises PgvectorUnusable with the administrator's next step when it cannot be used.
    """
    database = conn.info.dbname
    created = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if created is not None:
        version = str(created[0])
        if version_tuple(version) < MIN_PGVECTOR:
            raise _too_old(
                version,
                f"in database {database}",
                f"install pgvector >= {_MIN_TEXT} on the server, then have a superuser run"
                " `ALTER EXTENSION vector UPDATE;` in that database",
            )
        return version
    available = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    major = conn.info.server_version // 10_000
    if available is None:
        raise PgvectorUnusable(
            f"the server (PostgreSQL {major}) has no pgvector: install pgvector >= {_MIN_TEXT} for"
            f" PostgreSQL {major} on it, then run `lensmux team init` again"
        )
    version = str(available[0])
    if version_tuple(version) < MIN_PGVECTOR:
        raise _too_old(
            version,
            "on the server",
            f"install pgvector >= {_MIN_TEXT} for PostgreSQL {major}, then run `lensmux team init` again",
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgvectorUnusable(
            f"role {conn.info.user} may not create the extension `vector` (pgvector is not a trusted"
            f" extension): have a superuser run `CREATE EXTENSION vector;` in database {database},"
            " then run `lensmux team init` again"
        ) from exc
    return version


def _too_old(version: str, where: str, then: str) -> PgvectorUnusable:
    return PgvectorUnusable(
        f"pgvector {version} {where} is older than {_MIN_TEXT}, which lensmux needs"
        f" (HNSW with iterative index scans): {then}"
    )
