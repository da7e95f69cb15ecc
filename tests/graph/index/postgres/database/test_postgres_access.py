"""Who sees and who publishes what in the team store (issue 24): roles and row-level security.

Readers are members of lensmux_reader and see only the repositories a role of theirs was
granted; publishers are members of lensmux_writer and write only where a grant says
can_write. Checked on a real PostgreSQL with login roles of their own.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource
from psycopg import sql
from support.postgres_server import PostgresServer
from support.projects import write_files

from lensmux.graph.index import Indexer, IndexStoreError
from lensmux.graph.index.postgres.database.schema import READER_ROLE, WRITER_ROLE, grant
from lensmux.graph.index.postgres.publish import publish
from lensmux.graph.index.postgres.snapshots import find_published
from lensmux.graph.index.postgres.store import TeamStore

pytestmark = pytest.mark.anyio

TREE = {"pkg/ledger.py": "def reconcile_ledger(entries):\n    return sum(entries)\n"}


def _dsn_as(dsn: str, user: str) -> str:
    return dsn.replace("user=postgres", f"user={user}")


async def test_readers_see_granted_repositories_only_and_writers_publish_only_where_granted(
    tmp_path: Path, team_database: str, postgres_server: PostgresServer
) -> None:
    with psycopg.connect(team_database, autocommit=True) as admin:
        for user, group in (("alice", READER_ROLE), ("ci", WRITER_ROLE), ("mallory", READER_ROLE)):
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))
            admin.execute(
                sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(sql.Identifier(user), sql.Identifier(group))
            )
        grant(admin, "repo-a", "alice")
        grant(admin, "repo-a", "ci", write=True)
        grant(admin, "repo-b", "mallory")
    root = write_files(tmp_path / "repo", TREE)
    embedder = FakeEmbedder()
    async with Indexer(root, tmp_path / "state", embedder, FakeSymbolSource()) as ix:
        await ix.index_all()
        ci = TeamStore(_dsn_as(team_database, "ci"))
        try:
            done = publish(ci, root, ix.store, ix.vectors, repo="repo-a", commit="c1", model_id="m", dim=embedder.dim)
            assert done.files == 1
            with pytest.raises(IndexStoreError, match="row-level security"):
                publish(ci, root, ix.store, ix.vectors, repo="repo-b", commit="c1", model_id="m", dim=embedder.dim)
        finally:
            ci.close()

    def visible(user: str, repo: str) -> bool:
        team = TeamStore(_dsn_as(team_database, user))
        try:
            with team.reader.use("find") as conn:
                snapshot = find_published(conn, repo, ["c1"], "m")
            if snapshot is None:
                return False
            store, _ = team.open(root, snapshot)
            return bool(store.lookup_symbols("reconcile_ledger"))
        finally:
            team.close()

    assert visible("alice", "repo-a")
    assert not visible("mallory", "repo-a"), "a reader of another repository sees this one"
    with psycopg.connect(_dsn_as(team_database, "mallory"), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM lensmux.chunks").fetchone() == (0,)
        assert conn.execute("SELECT repo FROM lensmux.grants").fetchall() == [("repo-b",)]
    with (
        psycopg.connect(_dsn_as(team_database, "alice"), autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("DELETE FROM lensmux.snapshots")
