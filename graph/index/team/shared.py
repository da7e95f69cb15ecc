"""A root's part of a shared (team) index, issue 24: consume, publish, administer.

The one entry point the daemon has to the team store (`[index] store = "postgres"`): like
graph/search, daemon/ never imports a store's own modules (an import-linter contract), so
the store behind a shared index stays a choice made here.


Consuming: when a root's index opens, the nearest ancestor of its HEAD that the team
published is found and its snapshot laid under the local index (graph/index/team/overlay.py);
the local Indexer then indexes only the files whose content differs from it. Publishing:
`lensmux index ROOT --publish` copies the root's finished local index of a clean checkout
into a snapshot of its HEAD.

The team store is never on an editor's path: every call here runs in a worker thread with
libpq's connect timeout, and a store that cannot be reached leaves the root on its local
index with a warning (the search response's `warnings`).
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lensmux.graph.index import Indexer, IndexReader, IndexStoreError, VectorReader
from lensmux.graph.index.builder.preparing.prepare import BUFFER_MTIME_NS
from lensmux.graph.index.postgres.contents.vectors import SnapshotVectors
from lensmux.graph.index.postgres.contents.writer import SnapshotStore
from lensmux.graph.index.postgres.database.connection import connect
from lensmux.graph.index.postgres.database.schema import READER_ROLE, WRITER_ROLE, grant, migrate, revoke
from lensmux.graph.index.postgres.publish import publish
from lensmux.graph.index.postgres.snapshots import Snapshot, git_head, repository_id
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.index.team.overlay import OverlayReader, OverlayVectors

__all__ = [
    "OverlayIndex",
    "PublishRefused",
    "SharedIndex",
    "attach",
    "detach",
    "grant_roles",
    "publish_root",
    "repository_id",
    "setup_store",
    "still_nearest",
]

log = logging.getLogger(__name__)


class PublishRefused(IndexStoreError):
    """The root's index is not the index of one commit (uncommitted changes, an editor's text)."""


@dataclass
class SharedIndex:
    """The team snapshot a root overlays, with the overlay built on it."""

    team: TeamStore
    snapshot: Snapshot
    store: SnapshotStore
    vectors: SnapshotVectors
    reader: OverlayReader
    overlay_vectors: OverlayVectors

    def describe(self) -> dict[str, Any]:
        """What a search response says of the shared part."""
        return {"repository": self.snapshot.repo, "commit": self.snapshot.commit, "masked_files": len(self.reader.mask)}

    def close(self) -> None:
        """Close the team store's connections."""
        self.team.close()


class OverlayIndex:
    """What a search reads (graph/search/engine.py SearchIndex) of a root that overlays a team snapshot."""

    def __init__(self, shared: SharedIndex) -> None:
        self._shared = shared

    @property
    def store(self) -> IndexReader:
        """Shared rows minus the files changed here, plus the local rows of those.

        The mask is as of the overlay's last refresh(), which the search service runs in a
        worker thread before each search: reading it asks both stores, never on the event loop.
        """
        return self._shared.reader

    @property
    def vectors(self) -> VectorReader:
        """Shared vectors minus the changed files' chunks, plus the local ones."""
        return self._shared.overlay_vectors


def attach(dsn: str, indexer: Indexer) -> SharedIndex | None:
    """Lay the nearest published ancestor's snapshot under the root's local index, if there is one.

    Blocking (worker thread). Raises IndexStoreError (StoreUnreachable, NotARepository, ...)
    when the team store cannot be used; returns None when nothing of this history is published.
    """
    team = TeamStore(dsn)
    try:
        snapshot = team.nearest_published(indexer.root, indexer.model_id)
        if snapshot is None:
            team.close()
            return None
        hnsw = indexer.config.hnsw
        store, vectors = team.open(indexer.root, snapshot, ef_search=hnsw.ef_search, exact_below=hnsw.exact_below)
        indexer.baseline = {path: stamp.sha256 for path, stamp in store.file_stamps().items()}
        reader = OverlayReader(store, indexer.store, indexer.local_paths)
        shared = SharedIndex(team, snapshot, store, vectors, reader, OverlayVectors(vectors, indexer.vectors))
    except BaseException:
        team.close()
        indexer.baseline = None
        raise
    log.info("%s overlays the team's index of %s", indexer.root, snapshot.commit[:12])
    return shared


def still_nearest(shared: SharedIndex, indexer: Indexer) -> bool:
    """Whether the attached snapshot is still the nearest published one for the root's HEAD (blocking)."""
    nearest = shared.team.nearest_published(indexer.root, indexer.model_id)
    return nearest is not None and nearest.id == shared.snapshot.id


def detach(shared: SharedIndex, indexer: Indexer) -> None:
    """Stop overlaying: the local index indexes every file again from its next run."""
    indexer.baseline = None
    indexer.absent = set()
    try:
        shared.close()
    except IndexStoreError as exc:
        log.debug("closing the team store: %s", exc)


def _dirty(root: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        raise PublishRefused(f"git status failed in {root}: {done.stderr.strip()}")
    return [line[3:] for line in done.stdout.splitlines() if line]


def publish_root(dsn: str, indexer: Indexer) -> dict[str, Any]:
    """Copy the root's finished local index into the team snapshot of its HEAD (blocking: worker thread)."""
    root = indexer.root
    repo, commit = repository_id(root), git_head(root)
    dirty = _dirty(root)
    if dirty:
        named = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise PublishRefused(f"{root} has changes that are not committed ({named}): an index of {commit[:12]} only")
    if indexer.baseline is not None:
        raise PublishRefused(f"{root} overlays the team's index; publish from a root that indexes every file")
    if any(stamp.mtime_ns == BUFFER_MTIME_NS for stamp in indexer.store.file_stamps().values()):
        raise PublishRefused(f"{root}'s index holds an editor's unsaved text; save it or wait for the next run")
    started = time.perf_counter()
    generation = indexer.store.generation

    def unchanged_source() -> None:
        # The copy reads the local index file by file; a write meanwhile (the watcher, an edit)
        # would mix two states of the tree in one snapshot.
        if indexer.store.generation != generation:
            raise PublishRefused(f"{root}'s index changed while it was being published; publish again")

    team = TeamStore(dsn, application="lensmux publish", publishing=True)
    try:
        done = publish(
            team,
            root,
            indexer.store,
            indexer.vectors,
            repo=repo,
            commit=commit,
            model_id=indexer.model_id,
            dim=indexer.embedder.dim,
            before_commit=unchanged_source,
        )
    finally:
        team.close()
    return {
        "root": str(root),
        "repository": repo,
        "commit": commit,
        "files": done.files,
        "chunks": done.chunks,
        "vectors": done.vectors,
        "learned": done.learned,
        "seconds": round(time.perf_counter() - started, 2),
    }


def setup_store(dsn: str, dims: tuple[int, ...]) -> str:
    """Make (or complete) the team store's schema, roles and policies; what to tell the administrator."""
    with connect(dsn, application="lensmux team") as conn:
        migrate(conn, dims=dims)
    return f"team store ready: readers join {READER_ROLE}, publishers {WRITER_ROLE}"


def grant_roles(dsn: str, repo: str, roles: list[tuple[str, bool]], *, revoke_them: bool = False) -> list[str]:
    """Grant (role, may publish) on a repository, or revoke them, in one transaction; a line per role."""
    said: list[str] = []
    with connect(dsn, application="lensmux team") as conn, conn.transaction():
        for role, write in roles:
            if revoke_them:
                revoke(conn, repo, role)
                said.append(f"{role} no longer has repository {repo}")
            else:
                grant(conn, repo, role, write=write)
                said.append(f"{role} may {'publish and read' if write else 'read'} repository {repo}")
    return said
