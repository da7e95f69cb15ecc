"""Small source trees for the search tests, and a helper that indexes one in either index store.

`indexed` builds a tree's index with the real Indexer; on the team store (issue 24) that index
is then published into a fresh team database as a snapshot and the search reads the snapshot
itself ("postgres") or, as the daemon does for a root on the team store, the overlay of a second
checkout's local index on it ("overlay"). Which is the `search_store` fixture's choice
(tests/graph/conftest.py): every test that indexes through `indexed` runs once per store.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from search_fakes import FakeEmbedder, FakeSymbolSource
from support.projects import write_files

from lensmux.graph.index import Indexer, IndexReader, VectorReader
from lensmux.graph.index.postgres.contents.vectors import SnapshotVectors
from lensmux.graph.index.postgres.contents.writer import SnapshotStore
from lensmux.graph.index.postgres.publish import copy_files, publish
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.index.team.shared import OverlayIndex, SharedIndex, attach, detach, publish_root

# The stores the search suite runs on: the embedded SQLite + hnswlib index; the team store
# (PostgreSQL + pgvector) read through a published snapshot's own reader and vectors; and a
# second checkout's view of that snapshot, the overlay the daemon searches for a root on the
# team store (daemon/search/indexing.py RootIndex.search_index).
STORES = ("sqlite", "postgres", "overlay")

UPLOADER = {
    "pkg/__init__.py": "",
    "pkg/uploader.py": '''"""Uploads files to remote storage."""
import time

from pkg.storage import Storage

MAX_RETRIES = 5


class Uploader:
    """Sends files to a Storage backend."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def upload(self, path: str) -> bool:
        """Upload one file from disk."""
        data = read_file(path)
        return self.backoff_send(path, data)

    def backoff_send(self, path: str, data: bytes) -> bool:
        """Retry a failed upload with exponential backoff until the attempts run out."""
        for attempt in range(MAX_RETRIES):
            if self.storage.put_object(path, data):
                return True
            log(f"attempt {attempt} failed")
            time.sleep(2**attempt)
        return False


def read_file(path: str) -> bytes:
    """Read a whole file from disk."""
    with open(path, "rb") as fh:
        return fh.read()


def log(message: str) -> None:
    """Print a line to the console."""
    print(message)
''',
    "pkg/storage.py": '''"""Object storage backends."""


class Storage:
    """A remote object store."""

    def put_object(self, key: str, data: bytes) -> bool:
        """Store data under key."""
        raise NotImplementedError

    def get_object(self, key: str) -> bytes:
        """Fetch the data stored under key."""
        raise NotImplementedError


class BucketStorage(Storage):
    """Storage in a cloud bucket."""

    def get_object(self, key: str) -> bytes:
        """Download an object from the bucket."""
        return b""
''',
    "pkg/cli.py": '''"""Command line entry point."""
from pkg.storage import BucketStorage
from pkg.uploader import Uploader


def run_cli(paths: list[str]) -> int:
    """Upload every path given on the command line."""
    uploader = Uploader(BucketStorage())
    ok = [uploader.upload(p) for p in paths]
    return 0 if all(ok) else 1
''',
    "pkg/report.py": '''"""Text reports."""


def render_table(rows: list[list[str]]) -> str:
    """Render rows as an aligned text table."""
    widths = [max(len(c) for c in col) for col in zip(*rows)]
    return "\\n".join(" ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def summarize_uploads(count: int, failed: int) -> str:
    """Summarize how many uploads succeeded."""
    return render_table([["uploaded", str(count - failed)], ["failed", str(failed)]])
''',
    "README.md": "# Demo\n\nUploads files to storage with retries.\n",
}


def hub_project(callers: int = 30) -> dict[str, str]:
    """A target function plus many handlers that all call one hub, which the target calls too."""
    handlers = "\n\n".join(
        f"def handler_{i}(event: dict) -> None:\n"
        f'    """Handle event kind {i}."""\n'
        f"    emit_metric('handler_{i}', 1)\n"
        for i in range(callers)
    )
    return {
        "svc/__init__.py": "",
        "svc/metrics.py": (
            "def emit_metric(name: str, value: int) -> None:\n"
            '    """Send one metric sample to the collector."""\n'
            "    _ = (name, value)\n"
        ),
        "svc/handlers.py": "from svc.metrics import emit_metric\n\n\n" + handlers,
        "svc/quantum.py": (
            "from svc.metrics import emit_metric\n\n\n"
            "def reconcile_ledger_entries(entries: list) -> int:\n"
            '    """Reconcile ledger entries against the bank statement and count mismatches."""\n'
            "    emit_metric('reconcile', len(entries))\n"
            "    return sum(1 for e in entries if e)\n\n\n"
            "def ledger_balance(entries: list) -> int:\n"
            '    """Sum the ledger entries."""\n'
            "    return sum(entries)\n"
        ),
    }


class SearchedIndex(Protocol):
    """One root's index as the search tests use it, in any of STORES (engine.py's SearchIndex, and writes)."""

    @property
    def root(self) -> Path: ...

    @property
    def store(self) -> IndexReader: ...

    @property
    def vectors(self) -> VectorReader: ...

    async def reindex_file(self, path: str | Path) -> bool:
        """Re-read one file into this store, as the daemon does after a save; True when it changed."""
        ...


@dataclass
class TeamIndex:
    """A tree's published team snapshot, searched through the snapshot's own reader and vectors.

    `local` is the Indexer the snapshot was published from; a rewrite goes through it and is
    copied into the snapshot by publish.py's copy_files, the team store's own write path.
    """

    local: Indexer
    store: SnapshotStore
    vectors: SnapshotVectors

    @property
    def root(self) -> Path:
        return self.local.root

    async def reindex_file(self, path: str | Path) -> bool:
        changed = await self.local.reindex_file(path)
        rel = self.local.store.relative(path)
        assert rel is not None, f"{path} is outside {self.root}"
        copy_files(self.local.store, self.local.vectors, self.store, self.vectors, [rel])
        return changed


@dataclass
class OverlaidIndex:
    """A root laid over the team's snapshot of its commit, as the daemon attaches it (team/shared.py).

    `local` is the root's own Indexer, which indexes only the files whose content differs from
    the snapshot; the search reads OverlayIndex, the mask read again first as the search
    service does before each search.
    """

    local: Indexer
    shared: SharedIndex

    @property
    def root(self) -> Path:
        return self.local.root

    @property
    def store(self) -> IndexReader:
        self.shared.reader.refresh()
        return OverlayIndex(self.shared).store

    @property
    def vectors(self) -> VectorReader:
        return OverlayIndex(self.shared).vectors

    async def reindex_file(self, path: str | Path) -> bool:
        return await self.local.reindex_file(path)


@dataclass
class StoreChoice:
    """The store `indexed` builds in; set for each test by the `search_store` fixture."""

    store: str = "sqlite"
    team_dsn: str | None = None


CHOICE = StoreChoice()


@contextlib.asynccontextmanager
async def indexed(tmp_path: Path, files: dict[str, str], name: str = "repo") -> AsyncIterator[SearchedIndex]:
    """The tree fully indexed with the fake embedder and ast symbols, in the store of CHOICE."""
    root = write_files(tmp_path / name, files).resolve()
    async with Indexer(root, tmp_path / f"{name}-state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()
        if CHOICE.store == "sqlite":
            yield ix
            return
        assert CHOICE.team_dsn is not None, "the search_store fixture sets the team database"
        if CHOICE.store == "overlay":
            async with overlaid(ix, tmp_path / f"{name}-overlay-state", CHOICE.team_dsn) as overlay:
                yield overlay
            return
        team = TeamStore(CHOICE.team_dsn)
        try:
            published = publish(
                team, root, ix.store, ix.vectors, repo=name, commit="c1", model_id=ix.model_id, dim=ix.embedder.dim
            )
            hnsw = ix.config.hnsw
            store, vectors = team.open(root, published.snapshot, ef_search=hnsw.ef_search, exact_below=hnsw.exact_below)
            yield TeamIndex(ix, store, vectors)
        finally:
            team.close()


@contextlib.asynccontextmanager
async def overlaid(publisher: Indexer, state: Path, dsn: str) -> AsyncIterator[OverlaidIndex]:
    """The tree committed and published by `publisher` (the daemon's `lensmux index --publish`), then attached."""
    root = publisher.root
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c1"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    publish_root(dsn, publisher)
    async with Indexer(root, state, FakeEmbedder(), FakeSymbolSource()) as local:
        shared = attach(dsn, local)
        assert shared is not None, "the commit was just published"
        try:
            await local.index_all()
            assert not local.local_paths(), "every file is the snapshot's: nothing indexed here"
            yield OverlaidIndex(local, shared)
        finally:
            detach(shared, local)
