"""Publishing is one transaction (issue 24): a publish that fails leaves what readers saw before."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.postgres.publish import publish
from lensmux.graph.index.postgres.snapshots import find_published
from lensmux.graph.index.postgres.store import TeamStore

pytestmark = pytest.mark.anyio


class SourceChanged(Exception):
    """The check a publisher runs before committing found the local index written meanwhile."""


async def test_a_publish_rolled_back_leaves_the_earlier_snapshot_of_the_commit(
    tmp_path: Path, team_database: str
) -> None:
    root = write_files(tmp_path / "repo", {"pkg/ledger.py": "def reconcile_ledger(entries):\n    return 1\n"})
    embedder = FakeEmbedder()
    team = TeamStore(team_database, publishing=True)
    try:
        async with Indexer(root, tmp_path / "state", embedder, FakeSymbolSource()) as ix:
            await ix.index_all()
            first = publish(team, root, ix.store, ix.vectors, repo="r", commit="c", model_id="m", dim=embedder.dim)
            (root / "pkg/ledger.py").write_text("def settle_accounts(entries):\n    return 2\n")
            await ix.reindex_file(root / "pkg/ledger.py")

            def changed() -> None:
                raise SourceChanged

            with pytest.raises(SourceChanged):
                publish(team, root, ix.store, ix.vectors, repo="r", commit="c", model_id="m", dim=embedder.dim,
                        before_commit=changed)  # fmt: skip
        with team.reader.use("find") as conn:
            found = find_published(conn, "r", ["c"], "m")
        assert found is not None and found.id == first.snapshot.id
        store, _ = team.open(root, found)
        assert [s.name for s in store.lookup_symbols("reconcile_ledger")] == ["reconcile_ledger"]
        assert store.lookup_symbols("settle_accounts") == []
    finally:
        team.close()
