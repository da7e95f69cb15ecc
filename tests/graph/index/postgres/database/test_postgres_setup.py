"""`team init` and `team grant` refuse what cannot work with the administrator's next step (issue 24).

On a real PostgreSQL (tests/support/postgres_server.py, pgvector 0.8): a database whose
owner is not a superuser cannot create pgvector's extension; a grant names roles that must
exist and makes them members of the group roles their grant needs. A server whose pgvector
is too old cannot be made from the wheel's server, so that case reads a stand-in catalogue.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.postgres_server import PostgresServer

from lensmux.graph.index.postgres.database.pgvector import (
    MIN_PGVECTOR,
    PgvectorUnusable,
    ensure_pgvector,
    version_tuple,
)
from lensmux.graph.index.postgres.database.schema import READER_ROLE, WRITER_ROLE, RoleGrantRefused, grant, migrate


def _recreate_role(conn: psycopg.Connection[Any], name: str, options: str = "LOGIN") -> None:
    conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("CREATE ROLE {} " + options).format(sql.Identifier(name)))


_admins = itertools.count()


@pytest.fixture
def owned_database(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database without the extension, owned by a CREATEROLE role that is not a superuser; its DSN.

    The role is left on the session's server: if its migration made the cluster's group
    roles, it granted their memberships, which outlive its database.
    """
    admin = f"setup_admin_{os.getpid()}_{next(_admins)}"
    with postgres_server.fresh_database() as name:
        with postgres_server.admin() as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE").format(sql.Identifier(admin)))
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(name), sql.Identifier(admin)))
        yield postgres_server.dsn(name, user=admin)


def test_version_tuple_reads_pgvector_versions() -> None:
    assert version_tuple("0.8.6") == (0, 8, 6)
    assert version_tuple("0.10.0") > MIN_PGVECTOR > version_tuple("0.7.4")
    assert version_tuple("0.8.0-dev") == (0, 8, 0)


def test_an_owner_who_may_not_create_pgvector_is_told_to_have_a_superuser_do_it(owned_database: str) -> None:
    with psycopg.connect(owned_database, autocommit=True) as conn:
        with pytest.raises(PgvectorUnusable, match=r"have a superuser run `CREATE EXTENSION vector;` in database"):
            migrate(conn)
        # Refused before any DDL: nothing was made.
        assert conn.execute("SELECT to_regnamespace('lensmux')").fetchone() == (None,)


def test_the_extension_a_superuser_made_lets_the_owner_migrate(
    owned_database: str, postgres_server: PostgresServer
) -> None:
    name = psycopg.conninfo.conninfo_to_dict(owned_database)["dbname"]
    with postgres_server.admin(str(name)) as conn:
        conn.execute("CREATE EXTENSION vector")
    with psycopg.connect(owned_database, autocommit=True) as conn:
        assert version_tuple(ensure_pgvector(conn)) >= MIN_PGVECTOR
        migrate(conn)
        assert conn.execute("SELECT to_regclass('lensmux.chunks') IS NOT NULL").fetchone() == (True,)


class _Catalogue:
    """A stand-in for a server's catalogue (fault injection): pgvector `created` in the database, or `available`."""

    class info:
        dbname = "teamdb"
        user = "admin"
        server_version = 150_020

    def __init__(self, created: str | None, available: str | None) -> None:
        self.created, self.available = created, available

    def execute(self, query: str, *_: Any) -> Any:
        class _Rows:
            def __init__(self, value: str | None) -> None:
                self.value = value

            def fetchone(self) -> tuple[str] | None:
                return None if self.value is None else (self.value,)

        if "pg_extension" in query:
            return _Rows(self.created)
        if "pg_available_extensions" in query:
            return _Rows(self.available)
        raise AssertionError(f"nothing else is asked before refusing: {query}")


@pytest.mark.parametrize(
    ("created", "available", "said"),
    [
        (None, None, "the server (PostgreSQL 15) has no pgvector: install pgvector >= 0.8.0 for PostgreSQL 15"),
        (None, "0.4.4", "pgvector 0.4.4 on the server is older than 0.8.0"),
        ("0.7.4", "0.7.4", "pgvector 0.7.4 in database teamdb is older than 0.8.0"),
    ],
)
def test_a_missing_or_too_old_pgvector_is_refused_naming_the_minimum(
    created: str | None, available: str | None, said: str
) -> None:
    with pytest.raises(PgvectorUnusable) as refused:
        ensure_pgvector(_Catalogue(created, available))  # type: ignore[arg-type]
    assert said in str(refused.value)


def test_grant_makes_roles_members_of_the_group_roles_and_refuses_unknown_ones(team_database: str) -> None:
    with psycopg.connect(team_database, autocommit=True) as admin:
        _recreate_role(admin, "setup_group", "NOLOGIN")
        _recreate_role(admin, "setup_ci")
        try:
            grant(admin, "repo-a", "setup_group")
            grant(admin, "repo-a", "setup_ci", write=True)
            member = "SELECT pg_has_role(%s, %s, 'MEMBER')"
            assert admin.execute(member, ("setup_group", READER_ROLE)).fetchone() == (True,)
            assert admin.execute(member, ("setup_group", WRITER_ROLE)).fetchone() == (False,)
            assert admin.execute(member, ("setup_ci", WRITER_ROLE)).fetchone() == (True,)
            with pytest.raises(RoleGrantRefused, match="role setup_nobody does not exist"):
                grant(admin, "repo-a", "setup_nobody")
        finally:
            admin.execute("DELETE FROM lensmux.grants WHERE role IN ('setup_group', 'setup_ci')")
            admin.execute("DROP ROLE setup_group")
            admin.execute("DROP ROLE setup_ci")


def test_a_grant_by_a_role_that_may_not_add_members_says_who_can(team_database: str) -> None:
    with psycopg.connect(team_database, autocommit=True) as admin:
        _recreate_role(admin, "setup_member")
        # May write lensmux.grants (as its owner may) but not administer the group roles.
        _recreate_role(admin, "setup_stranger", "LOGIN BYPASSRLS")
        admin.execute("GRANT SELECT, INSERT, UPDATE ON lensmux.grants TO setup_stranger")
        admin.execute("GRANT USAGE ON SCHEMA lensmux TO setup_stranger")
        try:
            stranger = team_database.replace("user=postgres", "user=setup_stranger")
            with (
                psycopg.connect(stranger) as conn,
                pytest.raises(RoleGrantRefused, match=r"may not add setup_member to lensmux_reader"),
            ):
                grant(conn, "repo-a", "setup_member")
        finally:
            admin.execute("REVOKE ALL ON lensmux.grants FROM setup_stranger")
            admin.execute("REVOKE ALL ON SCHEMA lensmux FROM setup_stranger")
            admin.execute("DROP ROLE setup_member")
            admin.execute("DROP ROLE setup_stranger")
