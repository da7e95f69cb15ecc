"""The database and the vector file of one root, kept consistent across crashes.

Architecture Invariant: a chunk's vector is added only after the chunk's row is
committed, and chunk ids are never reused (AUTOINCREMENT). So whatever moment a
process dies at, the newest vector file the database points to holds only labels of
chunks that exist or once existed. Opening drops labels the database no longer has
and lists chunks without a vector as pending, to be embedded again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy
import numpy.typing as npt

from lensmux.graph.index.errors import IndexCorrupt, IndexSchemaMismatch
from lensmux.graph.index.records import VectorPointer
from lensmux.graph.index.sqlite.store import Store
from lensmux.graph.index.sqlite.vectors import HnswParams, VectorIndex, remove_stale_files

log = logging.getLogger(__name__)


class IndexFiles:
    """Store plus VectorIndex plus the set of chunks still lacking a vector.

    Methods are synchronous and meant to run in a worker thread; callers serialise the
    mutating ones (apply, embedded, save) with one lock.
    """

    def __init__(self, store: Store, vectors: VectorIndex, pending: set[int], generation: int) -> None:
        self.store = store
        self.vectors = vectors
        self.pending = pending
        self.generation = generation
        self.dirty = False
        # Elements of the graph at the last save (or open) and vectors added since: save_due().
        self.saved_elements = vectors.elements
        self.added_since_save = 0

    @classmethod
    def open(
        cls,
        directory: Path,
        root: Path,
        *,
        model_id: str,
        dim: int,
        hnsw: HnswParams,
        note: Callable[[str], None],
    ) -> IndexFiles:
        """Open both halves, recover from damaged files and reconcile them."""
        store = Store.open(directory, root, model_id=model_id, dim=dim)
        if store.recovery_note:
            note(store.recovery_note)
        pointer = store.vector_pointer()
        # Generations keep counting past a damaged file so no name is ever written twice.
        generation = pointer.generation if pointer else 0
        vectors = VectorIndex(dim, hnsw)
        if pointer is not None:
            try:
                vectors = _load(directory, pointer, dim, hnsw)
            except (IndexCorrupt, IndexSchemaMismatch) as exc:
                message = f"vector index unusable ({exc}); re-embedding every chunk from the database"
                log.error("%s: %s", directory, message)
                note(message)
                store.set_vector_pointer(None)
                pointer = None
        remove_stale_files(directory, pointer.file if pointer else None)
        chunk_ids = store.chunk_ids()
        # Labels the database no longer has: chunks deleted after the file was saved (live
        # in the file) or before it (already marked deleted there).
        stale = vectors.remove(vectors.labels() - chunk_ids)
        pending = chunk_ids - vectors.labels()
        if stale or pending:
            log.info("%s: dropped %d stale vectors, %d chunks to embed", directory, stale, len(pending))
        files = cls(store, vectors, pending, generation)
        files.dirty = stale > 0
        return files

    def apply(self, removed: Iterable[int], added: Sequence[int], matrix: npt.NDArray[numpy.float32] | None) -> None:
        """Mirror a committed write: drop removed chunks' vectors, add the new ones."""
        removed = list(removed)
        self.vectors.remove(removed)
        self.pending.difference_update(removed)
        if added and matrix is not None:
            self.vectors.add(added, matrix)
            self.pending.difference_update(added)
            self.added_since_save += len(added)
        self.dirty = self.dirty or bool(removed or added)

    def save_due(self, growth: float) -> bool:
        """Whether the vectors added since the last save reach `growth` times what that save wrote.

        Each save writes the whole graph, at most saved_elements + added_since_save elements;
        saving only after growth * saved_elements new ones makes the saves of a run cost at most
        (1 + 1/growth) times its added vectors, however long it runs.
        """
        return self.dirty and self.added_since_save >= growth * self.saved_elements

    def save(self, compact_fraction: float, compact_min_deleted: int) -> bool:
        """Write a new vector generation and point the database at it, if anything changed."""
        if not self.dirty:
            return False
        vectors = self.vectors
        if vectors.deleted_fraction > compact_fraction and vectors.deleted_count >= compact_min_deleted:
            vectors.compact()
        directory = self.store.directory
        pointer = vectors.save(directory, self.generation + 1)
        self.store.set_vector_pointer(pointer)
        remove_stale_files(directory, pointer.file)
        self.generation = pointer.generation
        self.dirty = False
        self.saved_elements = pointer.count
        self.added_since_save = 0
        return True

    def close(self) -> None:
        """Close the database (the caller saves first)."""
        self.store.close()


def _load(directory: Path, pointer: VectorPointer, dim: int, hnsw: HnswParams) -> VectorIndex:
    if pointer.dim != dim:
        raise IndexSchemaMismatch(f"vector file has dimension {pointer.dim}, the embedder {dim}")
    return VectorIndex.load(directory, pointer, hnsw)
