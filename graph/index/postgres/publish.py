"""Publishing: a commit's index, built locally by the Indexer, copied into the team store.

The local store is built exactly as a daemon builds it (graph/index/builder/indexer.py), then
every file's rows, its chunks' vectors and the learned call graph are copied into a new
snapshot in ONE transaction: consumers see the earlier snapshot of that commit (if any)
until the whole new one commits, published.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy
import numpy.typing as npt

from lensmux.graph.index.builder.preparing.chunking import ChunkDraft
from lensmux.graph.index.builder.preparing.document_symbols import ParsedSymbol
from lensmux.graph.index.identifiers import mentions
from lensmux.graph.index.interface import IndexWriter, VectorWriter
from lensmux.graph.index.postgres.contents import learned
from lensmux.graph.index.postgres.contents.vectors import SnapshotVectors
from lensmux.graph.index.postgres.contents.writer import SnapshotStore
from lensmux.graph.index.postgres.snapshots import Snapshot, create_snapshot, mark_published
from lensmux.graph.index.postgres.store import TeamStore
from lensmux.graph.index.records import FileWrite

log = logging.getLogger(__name__)

__all__ = ["Published", "copy_files", "file_write", "publish"]

_BATCH_FILES = 200


@dataclass(frozen=True, slots=True)
class Published:
    """What a publish wrote."""

    snapshot: Snapshot
    files: int
    chunks: int
    vectors: int
    learned: int


def file_write(source: IndexWriter, path: str) -> tuple[FileWrite, list[int], list[int]] | None:
    """A stored file as the FileWrite that would store it again, with its symbol and chunk ids in that order."""
    record = source.file(path)
    if record is None:
        return None
    symbols = source.symbols_in_file(path)
    position = {s.id: i for i, s in enumerate(symbols)}
    parsed = [
        ParsedSymbol(
            name=s.name,
            qualified_name=s.qualified_name,
            kind=s.kind,
            detail=s.detail,
            range=s.range,
            selection_range=s.selection_range,
            container=s.container,
            parent=position.get(s.parent_id) if s.parent_id is not None else None,
            depth=s.depth,
        )
        for s in symbols
    ]
    chunks = source.chunks_in_file(path)
    drafts = [
        ChunkDraft(
            kind=c.kind,
            name=c.name,
            symbol=position.get(c.symbol_id) if c.symbol_id is not None else None,
            start_line=c.start_line,
            end_line=c.end_line,
            text=c.text,
        )
        for c in chunks
    ]
    write = FileWrite(
        path=record.path,
        language=record.language,
        sha256=record.sha256,
        mtime_ns=record.mtime_ns,
        size=record.size,
        structure=record.structure,
        symbols=parsed,
        chunks=drafts,
        tokens=[c.tokens for c in chunks],
        mentions=frozenset().union(*(mentions(c.text) for c in chunks)),
    )
    return write, [s.id for s in symbols], [c.id for c in chunks]


def copy_files(
    source: IndexWriter,
    source_vectors: VectorWriter,
    target: SnapshotStore,
    target_vectors: SnapshotVectors,
    paths: Iterable[str],
    *,
    remove: Sequence[str] = (),
) -> dict[int, int]:
    """Copy files (rows and vectors) from a store into a team snapshot in one write; returns old -> new symbol ids.

    A path the source no longer has is removed from the target.
    """
    writes: list[FileWrite] = []
    matrices: list[npt.NDArray[numpy.float32] | None] = []
    late: list[tuple[int, int, npt.NDArray[numpy.float32]]] = []  # (file, chunk index, vector)
    symbol_ids: list[list[int]] = []
    gone = list(remove)
    for path in paths:
        found = file_write(source, path)
        if found is None:
            gone.append(path)
            continue
        write, old_symbols, old_chunks = found
        stored = source_vectors.vectors(old_chunks)
        if old_chunks and all(c in stored for c in old_chunks):
            matrices.append(numpy.stack([stored[c] for c in old_chunks]))
        else:
            matrices.append(None)
            late.extend((len(writes), i, stored[c]) for i, c in enumerate(old_chunks) if c in stored)
        writes.append(write)
        symbol_ids.append(old_symbols)
    new_symbols: list[list[int]] = []
    result = target.write_files(writes, remove=gone, vectors=matrices, symbol_ids=new_symbols)
    if late:
        target_vectors.add([result.new_chunk_ids[f][i] for f, i, _ in late], numpy.stack([v for _, _, v in late]))
    mapping: dict[int, int] = {}
    for old, new in zip(symbol_ids, new_symbols, strict=True):
        mapping.update(zip(old, new, strict=True))
    return mapping


def analyze(team: TeamStore) -> None:
    """Refresh the planner's statistics after a publish, so searches use the indexes at once.

    Without them, right after a bulk publish the planner sorts every chunk by distance (17 ms
    a query on tornado) instead of walking the HNSW graph (0.4 ms), until autovacuum gets to
    it. The postings are vacuumed too: the pages a publish wrote are marked all-visible, so
    the keyword query reads only its covering index (schema.py), not a heap page per posting.
    A role that may not ANALYZE or VACUUM (before PostgreSQL 17's MAINTAIN) only gets a warning.
    """
    with team.writer.use("analyze") as conn:
        conn.execute("ANALYZE lensmux.snapshots, lensmux.files, lensmux.symbols, lensmux.chunks")
        conn.execute("VACUUM (ANALYZE) lensmux.postings")


def publish(
    team: TeamStore,
    root: Path,
    source: IndexWriter,
    source_vectors: VectorWriter,
    *,
    repo: str,
    commit: str,
    model_id: str,
    dim: int,
    before_commit: Callable[[], None] | None = None,
) -> Published:
    """Copy the whole local index into a new published snapshot of (repo, commit), in one transaction.

    `before_commit` may raise to roll the whole publish back (the source changed meanwhile:
    its reads are not one snapshot of it).
    """
    paths = sorted(source.file_stamps())
    with team.writer.transaction("publish") as conn:
        snapshot = create_snapshot(conn, repo, commit, model_id, dim)
        target, target_vectors = team.open(root, snapshot)
        mapping: dict[int, int] = {}
        for start in range(0, len(paths), _BATCH_FILES):
            mapping.update(
                copy_files(source, source_vectors, target, target_vectors, paths[start : start + _BATCH_FILES])
            )
        relations = source.recall_learned(mapping)
        moved = {
            mapping[subject]: [(rel, mapping[other]) for rel, other in related if other in mapping]
            for subject, related in relations.items()
            if subject in mapping and all(other in mapping for _, other in related)
        }
        stored = learned.remember(conn, snapshot.id, repo, moved) if moved else 0
        if before_commit is not None:
            before_commit()
        mark_published(conn, snapshot.id)
        row = conn.execute(
            "SELECT (SELECT count(*) FROM lensmux.files WHERE snapshot = %(s)s),"
            " (SELECT count(*) FROM lensmux.chunks WHERE snapshot = %(s)s),"
            " (SELECT count(*) FROM lensmux.chunks WHERE snapshot = %(s)s AND embedding IS NOT NULL)",
            {"s": snapshot.id},
        ).fetchone()
    assert row is not None  # aggregates always return a row
    files, chunks, vectors = (int(v) for v in row)
    analyze(team)
    published = Snapshot(snapshot.id, repo, commit, model_id, dim, True)
    log.info("published %s@%s: %d files, %d chunks, %d vectors", repo[:12], commit[:12], files, chunks, vectors)
    return Published(published, files, chunks, vectors, stored)
