"""The team store's tables in PostgreSQL (schema `lensmux`), its roles and row-level security.

One database holds many repositories, each recognised by the root commit of its history,
and per repository one *snapshot* per published commit: files, symbols, chunks (with their
pgvector embedding), the keyword postings BM25 is computed from, and the learned call graph.
Every row carries its repository id, so row-level security can show a role only the
repositories granted to it (`lensmux.grants`); readers need SELECT only, publishers a role
granted `write` on the repository.

Apply with `migrate(conn)` (idempotent, as a role that may create the schema); bump
SCHEMA_VERSION on any change to DDL that code of another version would read or write
differently (tables, columns, constraints, policies); an index only makes statements faster
or slower, so it is created or dropped here without a bump.
"""

from __future__ import annotations

from typing import Any, cast

import psycopg
from psycopg import sql

from lensmux.graph.index.errors import IndexStoreError
from lensmux.graph.index.postgres.database.pgvector import ensure_pgvector

SCHEMA_VERSION = 1
SCHEMA = "lensmux"
READER_ROLE = "lensmux_reader"
WRITER_ROLE = "lensmux_writer"

# Ids come from bigserial sequences and are never reused: a chunk id is also the label its
# vector is searched by, as in the embedded store. `term` is in the C collation so a prefix
# term is one range of the (snapshot, term) index. That index carries every column the BM25
# query reads (repo too, which row-level security checks), so after a publish's VACUUM the
# query reads only the index, not a heap page per posting (keyword.py); it replaced the
# plain postings_by_term, dropped here after the new one is built (a DROP locks out readers
# until the migration commits: last, that is a moment, not the build).
DDL = """
CREATE SCHEMA IF NOT EXISTS lensmux;
CREATE TABLE IF NOT EXISTS lensmux.meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS lensmux.grants (
    repo text NOT NULL,
    role name NOT NULL,
    can_write boolean NOT NULL DEFAULT false,
    PRIMARY KEY (repo, role)
);
CREATE TABLE IF NOT EXISTS lensmux.snapshots (
    id bigserial PRIMARY KEY,
    repo text NOT NULL,
    commit text NOT NULL,
    model_id text NOT NULL,
    dim integer NOT NULL,
    published boolean NOT NULL DEFAULT false,
    published_at timestamptz,
    n_chunks bigint NOT NULL DEFAULT 0,
    n_tokens bigint NOT NULL DEFAULT 0,
    UNIQUE (repo, commit, model_id)
);
CREATE TABLE IF NOT EXISTS lensmux.files (
    id bigserial PRIMARY KEY,
    snapshot bigint NOT NULL REFERENCES lensmux.snapshots(id) ON DELETE CASCADE,
    repo text NOT NULL,
    path text NOT NULL,
    language text NOT NULL,
    sha256 text NOT NULL,
    mtime_ns bigint NOT NULL,
    size bigint NOT NULL,
    structure text NOT NULL,
    indexed_at double precision NOT NULL,
    UNIQUE (snapshot, path)
);
CREATE TABLE IF NOT EXISTS lensmux.symbols (
    id bigserial PRIMARY KEY,
    snapshot bigint NOT NULL,
    repo text NOT NULL,
    file_id bigint NOT NULL REFERENCES lensmux.files(id) ON DELETE CASCADE,
    parent_id bigint REFERENCES lensmux.symbols(id) ON DELETE CASCADE,
    name text NOT NULL,
    qualified_name text NOT NULL,
    kind text NOT NULL,
    detail text,
    container text,
    depth integer NOT NULL,
    start_line integer NOT NULL,
    start_char integer NOT NULL,
    end_line integer NOT NULL,
    end_char integer NOT NULL,
    sel_start_line integer NOT NULL,
    sel_start_char integer NOT NULL,
    sel_end_line integer NOT NULL,
    sel_end_char integer NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_by_file ON lensmux.symbols(file_id, start_line);
CREATE INDEX IF NOT EXISTS symbols_by_name ON lensmux.symbols(snapshot, lower(name));
CREATE INDEX IF NOT EXISTS symbols_by_parent ON lensmux.symbols(parent_id);
CREATE TABLE IF NOT EXISTS lensmux.chunks (
    id bigserial PRIMARY KEY,
    snapshot bigint NOT NULL,
    repo text NOT NULL,
    file_id bigint NOT NULL REFERENCES lensmux.files(id) ON DELETE CASCADE,
    symbol_id bigint REFERENCES lensmux.symbols(id) ON DELETE SET NULL,
    kind text NOT NULL,
    name text NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    terms integer NOT NULL,
    embedding vector
);
CREATE INDEX IF NOT EXISTS chunks_by_file ON lensmux.chunks(file_id);
CREATE INDEX IF NOT EXISTS chunks_by_symbol ON lensmux.chunks(symbol_id);
CREATE INDEX IF NOT EXISTS chunks_by_snapshot ON lensmux.chunks(snapshot);
CREATE TABLE IF NOT EXISTS lensmux.postings (
    snapshot bigint NOT NULL,
    repo text NOT NULL,
    term text COLLATE "C" NOT NULL,
    chunk_id bigint NOT NULL REFERENCES lensmux.chunks(id) ON DELETE CASCADE,
    tf_names integer NOT NULL,
    tf_path integer NOT NULL,
    tf_body integer NOT NULL,
    terms integer NOT NULL
);
CREATE INDEX IF NOT EXISTS postings_by_term_covering ON lensmux.postings(snapshot, term)
    INCLUDE (chunk_id, tf_names, tf_path, tf_body, terms, repo);
DROP INDEX IF EXISTS lensmux.postings_by_term;
CREATE INDEX IF NOT EXISTS postings_by_chunk ON lensmux.postings(chunk_id);
CREATE TABLE IF NOT EXISTS lensmux.learned (
    symbol_id bigint PRIMARY KEY REFERENCES lensmux.symbols(id) ON DELETE CASCADE,
    snapshot bigint NOT NULL,
    repo text NOT NULL,
    learned_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS lensmux.learned_edges (
    subject_id bigint NOT NULL REFERENCES lensmux.learned(symbol_id) ON DELETE CASCADE,
    snapshot bigint NOT NULL,
    repo text NOT NULL,
    relation text NOT NULL,
    other_id bigint NOT NULL REFERENCES lensmux.symbols(id) ON DELETE CASCADE,
    rank integer NOT NULL
);
CREATE INDEX IF NOT EXISTS learned_edges_by_subject ON lensmux.learned_edges(subject_id, rank);
CREATE INDEX IF NOT EXISTS learned_edges_by_other ON lensmux.learned_edges(other_id);
"""

# Tables whose rows belong to one repository (row-level security applies to each).
REPO_TABLES = ("snapshots", "files", "symbols", "chunks", "postings", "learned", "learned_edges")

# A role sees a repository's rows when it is a member of a role granted on it (or is that
# role), and writes them when that grant says can_write. pg_has_role with MEMBER follows
# group membership, so a team grants its group role once.
_READ_POLICY = "repo IN (SELECT g.repo FROM lensmux.grants g WHERE pg_has_role(current_user, g.role, 'MEMBER'))"
_WRITE_POLICY = (
    "repo IN (SELECT g.repo FROM lensmux.grants g WHERE g.can_write AND pg_has_role(current_user, g.role, 'MEMBER'))"
)


def migrate(conn: psycopg.Connection[Any], dims: tuple[int, ...] = (384,)) -> None:
    """Create or complete the schema, the two group roles, the policies and an HNSW index per dim; idempotent."""
    with conn.transaction():
        # One migration at a time, whoever else is starting up against the same database.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('lensmux.migrate'))")
        # Before any DDL: a missing or too old pgvector, or one this role may not create, is
        # refused with the administrator's next step rather than the server's first error.
        ensure_pgvector(conn)
        conn.execute(cast(Any, DDL))
        conn.execute(
            "INSERT INTO lensmux.meta(key, value) VALUES ('schema_version', %s) ON CONFLICT (key) DO NOTHING",
            (str(SCHEMA_VERSION),),
        )
        _roles(conn)
        for table in REPO_TABLES:
            _policies(conn, table)
        # A role sees only the grants that concern it (which repositories exist is no one else's).
        conn.execute("ALTER TABLE lensmux.grants ENABLE ROW LEVEL SECURITY")
        conn.execute("DROP POLICY IF EXISTS lensmux_own ON lensmux.grants")
        conn.execute(
            "CREATE POLICY lensmux_own ON lensmux.grants FOR SELECT USING (pg_has_role(current_user, role, 'MEMBER'))"
        )
        for dim in dims:
            _vector_index(conn, dim)


class RoleGrantRefused(IndexStoreError):
    """A role named in `team grant` does not exist, or this role may not add members to the group roles."""


def grant(conn: psycopg.Connection[Any], repo: str, role: str, *, write: bool = False) -> None:
    """Let `role` (and its members) read the repository's rows, and with write=True publish them.

    The role also joins lensmux_reader (lensmux_writer to publish): row-level security picks
    the repositories, the group roles give the privileges on the tables, and a grant that
    left them out would let the role read nothing at all ("permission denied for schema").
    """
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
        raise RoleGrantRefused(f"role {role} does not exist: create it first (CREATE ROLE), then grant it")
    conn.execute(
        "INSERT INTO lensmux.grants(repo, role, can_write) VALUES (%s, %s, %s)"
        " ON CONFLICT (repo, role) DO UPDATE SET can_write = excluded.can_write",
        (repo, role, write),
    )
    group = WRITER_ROLE if write else READER_ROLE
    if role in (READER_ROLE, WRITER_ROLE) or _member_of(conn, role, group):
        return
    try:
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(role)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise RoleGrantRefused(
            f"role {conn.info.user} may not add {role} to {group}: run `lensmux team grant` as the role"
            f" that ran `lensmux team init` (or a superuser), or have one run `GRANT {group} TO {role};`"
        ) from exc


def _member_of(conn: psycopg.Connection[Any], role: str, group: str) -> bool:
    # Already a member (directly or through another role): no GRANT, which would need the
    # right to administer the group role even when it changes nothing.
    row = conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, group)).fetchone()
    return bool(row and row[0])


def revoke(conn: psycopg.Connection[Any], repo: str, role: str) -> None:
    """Take back whatever `role` was granted on the repository."""
    conn.execute("DELETE FROM lensmux.grants WHERE repo = %s AND role = %s", (repo, role))


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The version the database's schema was made with, or None when there is none."""
    row = conn.execute("SELECT to_regclass('lensmux.meta') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return None
    found = conn.execute("SELECT value FROM lensmux.meta WHERE key = 'schema_version'").fetchone()
    return int(found[0]) if found else None


def vector_cast(dim: int) -> sql.Composable:
    """The expression the HNSW index of one dimension is built on (and a search must use)."""
    return sql.SQL("(embedding::vector({}))").format(sql.Literal(int(dim)))


def _vector_index(conn: psycopg.Connection[Any], dim: int) -> None:
    # One column holds every model's vectors; an index per dimension covers the rows of that
    # dimension only (pgvector indexes need a fixed one).
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON lensmux.chunks USING hnsw ({} vector_cosine_ops)"
            " WITH (m = 16, ef_construction = 200) WHERE vector_dims(embedding) = {}"
        ).format(sql.Identifier(f"chunks_hnsw_{int(dim)}"), vector_cast(dim), sql.Literal(int(dim)))
    )


def _roles(conn: psycopg.Connection[Any]) -> None:
    for role in (READER_ROLE, WRITER_ROLE):
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    reader, writer = sql.Identifier(READER_ROLE), sql.Identifier(WRITER_ROLE)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA lensmux TO {}, {}").format(reader, writer))
    conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA lensmux TO {}").format(reader))
    if not _member_of(conn, WRITER_ROLE, READER_ROLE):
        # Roles are the cluster's: a second database's `team init`, by another administrator,
        # finds this done and may not redo it (PostgreSQL 16+: only with ADMIN OPTION on the role).
        conn.execute(sql.SQL("GRANT {} TO {}").format(reader, writer))
    conn.execute(
        sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(
            sql.SQL(", ").join(sql.Identifier(SCHEMA, t) for t in REPO_TABLES), writer
        )
    )
    conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA lensmux TO {}").format(writer))
    if conn.info.server_version >= 170000:
        # Publishers refresh the planner's statistics after a publish (publish.analyze).
        conn.execute(
            sql.SQL("GRANT MAINTAIN ON {} TO {}").format(
                sql.SQL(", ").join(sql.Identifier(SCHEMA, t) for t in REPO_TABLES), writer
            )
        )


def _policies(conn: psycopg.Connection[Any], table: str) -> None:
    name = sql.Identifier(SCHEMA, table)
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name))
    for policy, command, clause in (
        ("lensmux_read", "SELECT", sql.SQL("USING ({})").format(sql.SQL(_READ_POLICY))),
        ("lensmux_insert", "INSERT", sql.SQL("WITH CHECK ({})").format(sql.SQL(_WRITE_POLICY))),
        ("lensmux_update", "UPDATE", sql.SQL("USING ({0}) WITH CHECK ({0})").format(sql.SQL(_WRITE_POLICY))),
        ("lensmux_delete", "DELETE", sql.SQL("USING ({})").format(sql.SQL(_WRITE_POLICY))),
    ):
        conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(sql.Identifier(policy), name))
        conn.execute(
            sql.SQL("CREATE POLICY {} ON {} FOR {} {}").format(sql.Identifier(policy), name, sql.SQL(command), clause)
        )
