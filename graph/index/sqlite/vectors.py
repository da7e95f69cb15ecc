"""The hnswlib side of a root's index: one cosine HNSW graph labelled with chunk ids.

Files are `vectors-<generation>.hnsw` next to the database. A save writes a new
generation atomically and returns a VectorPointer (sha256, size, dim, count); only once
the database records that pointer does the file count, so a kill at any moment leaves
the database pointing at a complete file. Loading checks the pointer before hnswlib
ever sees the bytes, because hnswlib trusts its input (wrong dimension loads silently,
garbage can exhaust memory).

Up to `HnswParams.exact_below` live vectors a search is exact instead (graph/index/exact.py,
which the team store uses too): a matrix product with every live vector, read out of the
graph once and then kept in step with every add and remove. At that size it costs a few
milliseconds and at most 30 MiB at the default. Reading the matrix out again after each
change would not do: hnswlib copies items out at about 23 µs each, 250 ms for 11,000
vectors, and the first search after every edit would pay it.

Thread safety: search() may run in any thread at any time; the mutating methods
(add, remove, compact) and save() must not run concurrently with each other.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import hnswlib
import numpy
import numpy.typing as npt

from lensmux.graph.index.errors import IndexCorrupt
from lensmux.graph.index.exact import nearest
from lensmux.graph.index.records import VectorPointer

log = logging.getLogger(__name__)

_FILE_RE = re.compile(r"^vectors-(\d+)\.hnsw(\.tmp)?$")
_MIN_CAPACITY = 1024


@dataclass(frozen=True, slots=True)
class HnswParams:
    """Graph construction and query parameters."""

    m: int = 16
    ef_construction: int = 200
    # Text queries lie far from the chunk vectors; see daemon/config.py:IndexSettings.
    ef_search: int = 400
    num_threads: int = 1
    # Up to this many live vectors a search is exact (a product with every vector, kept as one
    # matrix of at most exact_below x dim float32), so that it finds what an exact search finds,
    # as the team store does at the same size; the graph answers above it.
    exact_below: int = 20_000


def vector_file_name(generation: int) -> str:
    """The file name of one saved generation."""
    return f"vectors-{generation:010d}.hnsw"


class VectorIndex:
    """Chunk-id-labelled vectors with cosine search."""

    def __init__(self, dim: int, params: HnswParams = HnswParams()) -> None:
        self.dim = dim
        self.params = params
        self._lock = threading.Lock()
        self._index = self._new_index(_MIN_CAPACITY)
        self._live: set[int] = set()
        # (labels in ascending order, their vectors): the exact search's copy, None once stale.
        self._matrix: tuple[npt.NDArray[numpy.int64], npt.NDArray[numpy.float32]] | None = None

    def _new_index(self, capacity: int) -> hnswlib.Index:
        index = hnswlib.Index(space="cosine", dim=self.dim)
        index.init_index(max_elements=capacity, ef_construction=self.params.ef_construction, M=self.params.m)
        index.set_ef(self.params.ef_search)
        index.set_num_threads(self.params.num_threads)
        return index

    @classmethod
    def load(cls, directory: Path, pointer: VectorPointer, params: HnswParams = HnswParams()) -> VectorIndex:
        """Load the file the pointer names; IndexCorrupt/IndexSchemaMismatch if it cannot be trusted."""
        path = directory / pointer.file
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise IndexCorrupt(f"vector file {path} is missing: {exc}") from exc
        if size != pointer.size:
            raise IndexCorrupt(f"vector file {path} is {size} bytes, expected {pointer.size}")
        if _sha256(path) != pointer.sha256:
            raise IndexCorrupt(f"vector file {path} fails its checksum")
        loaded = cls(pointer.dim, params)
        try:
            index = hnswlib.Index(space="cosine", dim=pointer.dim)
            index.load_index(str(path), max_elements=0)
            labels = index.get_ids_list()
        except (RuntimeError, ValueError, MemoryError) as exc:
            raise IndexCorrupt(f"hnswlib cannot load {path}: {exc}") from exc
        if index.get_current_count() != pointer.count:
            raise IndexCorrupt(f"{path} holds {index.get_current_count()} vectors, expected {pointer.count}")
        index.set_ef(params.ef_search)
        index.set_num_threads(params.num_threads)
        loaded._index = index
        # Deleted labels stay in hnswlib's label table; the caller drops every label the
        # database no longer has (remove() of an already deleted label is a no-op).
        loaded._live = {int(x) for x in labels}
        return loaded

    def __len__(self) -> int:
        return len(self._live)

    def labels(self) -> set[int]:
        """Every live label."""
        return set(self._live)

    def __contains__(self, label: object) -> bool:
        return label in self._live

    @property
    def elements(self) -> int:
        """Elements of the graph, deleted ones included: what a save writes."""
        return int(self._index.get_current_count())

    @property
    def deleted_count(self) -> int:
        """Elements marked deleted that still take space in the graph."""
        return max(0, int(self._index.get_current_count()) - len(self._live))

    @property
    def deleted_fraction(self) -> float:
        """Share of the graph's elements that are deleted but still take space."""
        total = self._index.get_current_count()
        return (total - len(self._live)) / total if total else 0.0

    def add(self, labels: Iterable[int], vectors: npt.NDArray[numpy.float32]) -> None:
        """Insert (or replace) vectors under the given labels."""
        ids = numpy.fromiter(labels, dtype=numpy.int64)
        if len(ids) == 0:
            return
        data = numpy.ascontiguousarray(vectors, dtype=numpy.float32).reshape(len(ids), self.dim)
        with self._lock:
            needed = self._index.get_current_count() + len(ids)
            capacity = self._index.get_max_elements()
            if needed > capacity:
                self._index.resize_index(max(needed, capacity * 2))
            self._index.add_items(data, ids, num_threads=self.params.num_threads)
            self._live.update(int(i) for i in ids)
            if len(self._live) > self.params.exact_below:
                self._matrix = None  # the graph answers from here on
            elif self._matrix is not None:
                # The graph's own copies of the new rows (unit length, as it stores them):
                # reading a few is cheap where reading all of them again is not.
                added = numpy.unique(ids)
                rows = numpy.asarray(self._index.get_items(added.tolist()), dtype=numpy.float32)
                self._matrix = _merged(self._matrix, added, rows)

    def remove(self, labels: Iterable[int]) -> int:
        """Mark labels deleted; unknown or already deleted ones are ignored. Returns how many were live."""
        done = 0
        gone: list[int] = []
        with self._lock:
            for label in labels:
                if label not in self._live:
                    continue
                self._live.discard(label)
                gone.append(label)
                try:
                    self._index.mark_deleted(label)
                    done += 1
                except RuntimeError:
                    # Deleted before the file was saved: live only in the label list load() read.
                    pass
            if gone and self._matrix is not None:
                self._matrix = _merged(self._matrix, numpy.asarray(gone, dtype=numpy.int64), None)
        return done

    def vectors(self, labels: Iterable[int]) -> dict[int, npt.NDArray[numpy.float32]]:
        """Stored (normalised) vectors of the live labels among those given."""
        wanted = [label for label in labels if label in self._live]
        if not wanted:
            return {}
        with self._lock:
            data = numpy.asarray(self._index.get_items(wanted), dtype=numpy.float32)
        return {label: data[i] for i, label in enumerate(wanted)}

    def search(self, vector: npt.NDArray[numpy.float32], k: int, ef: int | None = None) -> list[tuple[int, float]]:
        """The k nearest chunks: (chunk_id, cosine similarity), most similar first.

        ef overrides HnswParams.ef_search for this query (higher: better recall, slower).
        """
        query = numpy.asarray(vector, dtype=numpy.float32).reshape(1, self.dim)
        with self._lock:
            k = min(k, len(self._live))
            if 0 < len(self._live) <= self.params.exact_below:
                return self._exact(query[0], k) if k > 0 else []
            if ef is not None:
                self._index.set_ef(max(ef, k))
            try:
                while k > 0:
                    try:
                        labels, distances = self._index.knn_query(query, k=k, num_threads=1)
                        break
                    except RuntimeError:
                        # Too few reachable live elements for k (many deletions); ask for fewer.
                        k //= 2
                else:
                    return []
            finally:
                if ef is not None:
                    self._index.set_ef(self.params.ef_search)
        return [
            (int(label), 1.0 - float(dist))
            for label, dist in zip(labels[0], distances[0], strict=True)
            if int(label) in self._live
        ]

    def _exact(self, query: npt.NDArray[numpy.float32], k: int) -> list[tuple[int, float]]:
        # Under the lock; the graph's stored vectors are unit length (hnswlib's cosine space).
        if self._matrix is None:
            labels = numpy.asarray(sorted(self._live), dtype=numpy.int64)
            data = numpy.asarray(self._index.get_items(labels.tolist()), dtype=numpy.float32)
            self._matrix = (labels, data)
        return nearest(*self._matrix, query, k)

    def compact(self) -> None:
        """Rebuild the graph from the live vectors so deleted ones stop costing space and time."""
        live = sorted(self._live)
        fresh = self._new_index(max(_MIN_CAPACITY, len(live) * 5 // 4))
        for start in range(0, len(live), 4096):
            part = live[start : start + 4096]
            data = numpy.asarray(self._index.get_items(part), dtype=numpy.float32)
            fresh.add_items(data, numpy.asarray(part, dtype=numpy.int64), num_threads=self.params.num_threads)
        with self._lock:
            # The exact-search matrix stays: the same live vectors, copied as they were.
            self._index = fresh
        log.info("compacted vector index to %d live vectors", len(live))

    def save(self, directory: Path, generation: int) -> VectorPointer:
        """Write generation atomically (temp, fsync, rename, fsync dir); returns its pointer."""
        name = vector_file_name(generation)
        final = directory / name
        tmp = directory / (name + ".tmp")
        self._index.save_index(str(tmp))
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        digest = _sha256(tmp)
        size = tmp.stat().st_size
        os.replace(tmp, final)
        _fsync_dir(directory)
        return VectorPointer(
            file=name,
            generation=generation,
            sha256=digest,
            size=size,
            dim=self.dim,
            count=self._index.get_current_count(),
        )


def _merged(
    matrix: tuple[npt.NDArray[numpy.int64], npt.NDArray[numpy.float32]],
    labels: npt.NDArray[numpy.int64],
    rows: npt.NDArray[numpy.float32] | None,
) -> tuple[npt.NDArray[numpy.int64], npt.NDArray[numpy.float32]]:
    """The exact-search matrix without `labels`' rows, then with `rows` under them if given.

    Rows stay in label order, as a matrix read out of the graph afresh has them, so that
    equal similarities at the k-th place are broken the same way either way.
    """
    held, data = matrix
    keep = ~numpy.isin(held, labels)
    if rows is None:
        return held[keep], data[keep]
    merged_labels = numpy.concatenate([held[keep], labels])
    merged_data = numpy.concatenate([data[keep], rows])
    order = numpy.argsort(merged_labels, kind="stable")
    return merged_labels[order], merged_data[order]


def remove_stale_files(directory: Path, keep: str | None) -> None:
    """Delete vector files (and temp files) other than keep."""
    for entry in directory.iterdir():
        if _FILE_RE.match(entry.name) and entry.name != keep:
            try:
                entry.unlink()
            except OSError as exc:
                log.warning("cannot remove stale vector file %s: %s", entry, exc)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
