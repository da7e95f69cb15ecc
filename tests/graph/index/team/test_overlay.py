"""A working tree read as a team's published index with its own changes laid over it (issue 24).

The publisher's tree is indexed and published to a real PostgreSQL; a consumer's copy
changes one file, deletes one and adds one. Its local index holds only what differs, and
the overlay answers every file from exactly one side: a changed file never shows its
stale shared chunks, a deleted one shows none, the rest come from the shared snapshot.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import Indexer
from lensmux.graph.index.postgres.publish import publish
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.index.team.overlay import SHARED_ID_BASE, OverlayReader, OverlayVectors

pytestmark = pytest.mark.anyio

TREE = {
    **{f"pkg/mod_{i}.py": module_text(i) for i in range(8)},
    "pkg/ledger.py": "def reconcile_ledger(entries):\n    return sum(entries)\n",
    "pkg/obsolete.py": "def legacy_checksum(blob):\n    return hash(blob)\n",
}


async def test_local_changes_mask_the_shared_rows_of_their_files(tmp_path: Path, team_database: str) -> None:
    publisher = write_files(tmp_path / "publisher", TREE)
    team = TeamStore(team_database)
    embedder = FakeEmbedder()
    try:
        async with Indexer(publisher, tmp_path / "state-p", embedder, FakeSymbolSource()) as ix:
            await ix.index_all()
            published = publish(
                team, publisher, ix.store, ix.vectors, repo="r", commit="c", model_id=ix.model_id, dim=embedder.dim
            )
        consumer = tmp_path / "consumer"
        shutil.copytree(publisher, consumer)
        (consumer / "pkg/ledger.py").write_text("def settle_accounts(entries):\n    return max(entries)\n")
        (consumer / "pkg/obsolete.py").unlink()
        (consumer / "pkg/fresh.py").write_text("def brand_new_feature(x):\n    return x\n")
        shared, shared_vectors = team.open(consumer, published.snapshot)
        local = Indexer(consumer, tmp_path / "state-c", embedder, FakeSymbolSource())
        local.baseline = {path: stamp.sha256 for path, stamp in shared.file_stamps().items()}
        async with local:
            await local.index_all()
            assert sorted(local.store.file_stamps()) == ["pkg/fresh.py", "pkg/ledger.py"]
            assert local.absent == {"pkg/obsolete.py"}
            reader = OverlayReader(shared, local.store, local.local_paths)
            vectors = OverlayVectors(shared_vectors, local.vectors)

            def found_for(query: str) -> set[tuple[str, str]]:
                hits = reader.keyword_search(query, 50)
                return {(c.path, c.name) for c in reader.chunks(cid for cid, _ in hits)}

            assert ("pkg/ledger.py", "reconcile_ledger") not in found_for("reconcile"), "stale shared rows answer"
            assert found_for("settle accounts") == {("pkg/ledger.py", "settle_accounts")}
            assert found_for("legacy checksum") == set(), "a deleted file still answers"
            assert found_for("brand new feature") == {("pkg/fresh.py", "brand_new_feature")}
            unchanged = reader.chunks_in_file("pkg/mod_3.py")
            assert unchanged and all(c.id >= SHARED_ID_BASE for c in unchanged)
            assert all(c.id < SHARED_ID_BASE for c in reader.chunks_in_file("pkg/ledger.py"))
            assert [s.name for s in reader.lookup_symbols("reconcile_ledger")] == []
            assert [s.path for s in reader.lookup_symbols("settle_accounts")] == ["pkg/ledger.py"]
            found = vectors.search(embedder.embed_query("def reconcile_ledger(entries): return sum(entries)"), 60)
            assert found and all(c.path != "pkg/obsolete.py" for c in reader.chunks(i for i, _ in found))
            stale = {c.id for c in shared.chunks_in_file("pkg/ledger.py")}
            assert stale and not stale & {i - SHARED_ID_BASE for i, _ in found}

            # Back to the published content: the shared rows answer for the file again.
            (consumer / "pkg/ledger.py").write_text(TREE["pkg/ledger.py"])
            await local.reindex_file(consumer / "pkg/ledger.py")
            reader.refresh()
            assert ("pkg/ledger.py", "reconcile_ledger") in found_for("reconcile")
            assert sorted(local.store.file_stamps()) == ["pkg/fresh.py"]
    finally:
        team.close()
