"""Vectors of one snapshot in pgvector: the `embedding` column of its chunks, searched through HNSW.

Labels are chunk ids, as in the embedded store. Vectors are stored normalised, so cosine
similarity is 1 - pgvector's cosine distance, as hnswlib's. The HNSW index of the model's
dimension (schema.py) covers every snapshot; a search of one snapshot uses pgvector's
iterative index scan so that filtering to it does not cut the answer short.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy
import numpy.typing as npt
from psycopg import sql

from lensmux.graph.index.exact import nearest
from lensmux.graph.index.postgres.contents.reader import Mask
from lensmux.graph.index.postgres.database.connection import Connection
from lensmux.graph.index.postgres.database.schema import vector_cast

__all__ = ["SnapshotVectors", "normalised", "parse_vector", "vector_text"]


def vector_text(vector: npt.NDArray[numpy.float32]) -> str:
    """pgvector's text form of a vector (float32 values round-trip exactly)."""
    return "[" + ",".join(repr(float(x)) for x in numpy.asarray(vector, dtype=numpy.float32)) + "]"


def parse_vector(text: str) -> npt.NDArray[numpy.float32]:
    """The vector pgvector's text form spells."""
    return numpy.fromstring(text.strip("[]"), dtype=numpy.float32, sep=",")


def normalised(matrix: npt.NDArray[numpy.float32]) -> npt.NDArray[numpy.float32]:
    """Rows scaled to unit length (zero rows stay zero), as hnswlib's cosine space stores them."""
    data = numpy.asarray(matrix, dtype=numpy.float32)
    norms = numpy.linalg.norm(data, axis=1, keepdims=True)
    return numpy.asarray(data / numpy.where(norms == 0, 1, norms), dtype=numpy.float32)


class SnapshotVectors:
    """The VectorWriter of one snapshot."""

    def __init__(
        self,
        snapshot: int,
        dim: int,
        *,
        reader: Connection,
        writer: Connection,
        ef_search: int = 400,
        exact_below: int = 20_000,
        mask: Mask | None = None,
    ) -> None:
        self.snapshot = snapshot
        # The snapshot store's mask (reader.py): chunks of files a consumer changed are never returned.
        self.mask = mask if mask is not None else Mask()
        self.dim = dim
        self.ef_search = ef_search
        # As the embedded store (sqlite/vectors.py): up to this many vectors a search is exact
        # (graph/index/exact.py), so both stores give the same list for the same vectors.
        self.exact_below = exact_below
        # Vectors in the snapshot, counted once: the search asks before every question, and a
        # published snapshot does not change. None until counted, and again after any write
        # (add/remove here, or the snapshot store's write of files: forget()).
        self._count: int | None = None
        # (ids ascending, their vectors) for the exact search; None until read or once changed.
        self._matrix: tuple[npt.NDArray[numpy.int64], npt.NDArray[numpy.float32]] | None = None
        # Held while reading either, so a forget() after a write never lands before a read it outdated.
        self._matrix_lock = threading.RLock()
        self._reader = reader
        self._writer = writer

    def __len__(self) -> int:
        with self._matrix_lock:
            if self._count is None:
                with self._reader.use("count vectors") as conn:
                    row = conn.execute(
                        "SELECT count(*) FROM lensmux.chunks WHERE snapshot = %s AND embedding IS NOT NULL",
                        (self.snapshot,),
                    ).fetchone()
                self._count = int(row[0]) if row else 0
            return self._count

    def forget(self) -> None:
        """Drop the count and the matrix read for the exact search (the snapshot's rows changed)."""
        with self._matrix_lock:
            self._count, self._matrix = None, None

    def __contains__(self, label: object) -> bool:
        if not isinstance(label, int):
            return False
        with self._reader.use("find vector") as conn:
            row = conn.execute(
                "SELECT 1 FROM lensmux.chunks WHERE snapshot = %s AND id = %s AND embedding IS NOT NULL",
                (self.snapshot, label),
            ).fetchone()
        return row is not None

    def search(self, vector: npt.NDArray[numpy.float32], k: int, ef: int | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity), most similar first, at most k; exact up to exact_below vectors."""
        if k <= 0:
            return []
        matrix = self._exact_matrix()
        if matrix is not None:
            return nearest(*matrix, vector, k, self.mask.chunk_ids)
        cast = vector_cast(self.dim)
        query = sql.SQL(
            "SELECT id, 1 - ({cast} <=> %(q)s::vector({dim})) AS similarity FROM lensmux.chunks"
            " WHERE snapshot = %(s)s AND vector_dims(embedding) = {dim} AND NOT (id = ANY(%(masked)s))"
            " ORDER BY {cast} <=> %(q)s::vector({dim}) LIMIT %(k)s"
        ).format(cast=cast, dim=sql.Literal(self.dim))
        params = {
            "q": vector_text(normalised(numpy.asarray(vector).reshape(1, -1))[0]),
            "s": self.snapshot,
            "k": k,
            "masked": self.mask.chunk_ids,
        }
        with self._reader.transaction("vector search") as conn:
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(ef or self.ef_search, k))))
            # Keep scanning the graph until k rows of this snapshot are found, in exact order.
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            rows = conn.execute(query, params).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def _exact_matrix(self) -> tuple[npt.NDArray[numpy.int64], npt.NDArray[numpy.float32]] | None:
        """The snapshot's vectors read once, if it has no more than exact_below of them (else None).

        Exact in this process rather than in SQL: the server would read every row's vector
        (out of line, 1.5 KiB each) for every question, 11 ms at 4,000 chunks, twice a search
        from the embedded store; a published snapshot does not change, so one read serves
        every later question.
        """
        with self._matrix_lock:
            if self._matrix is None:
                if len(self) > self.exact_below:
                    return None
                with self._reader.use("read vectors") as conn:
                    rows = conn.execute(
                        sql.SQL(
                            "SELECT id, embedding::text FROM lensmux.chunks"
                            " WHERE snapshot = %s AND vector_dims(embedding) = {dim} ORDER BY id"
                        ).format(dim=sql.Literal(self.dim)),
                        (self.snapshot,),
                    ).fetchall()
                labels = numpy.asarray([int(r[0]) for r in rows], dtype=numpy.int64)
                data = numpy.empty((len(rows), self.dim), dtype=numpy.float32)
                for i, row in enumerate(rows):
                    data[i] = parse_vector(row[1])
                self._matrix = (labels, data)
            return self._matrix

    def add(self, labels: Iterable[int], vectors: npt.NDArray[numpy.float32]) -> None:
        """Insert (or replace) vectors under the given labels (chunks of this snapshot)."""
        ids = [int(i) for i in labels]
        if not ids:
            return
        data = normalised(numpy.asarray(vectors, dtype=numpy.float32).reshape(len(ids), self.dim))
        try:
            with self._writer.transaction("add vectors") as conn, conn.cursor() as cur:
                cur.executemany(
                    "UPDATE lensmux.chunks SET embedding = %s::vector WHERE snapshot = %s AND id = %s",
                    [(vector_text(row), self.snapshot, i) for i, row in zip(ids, data, strict=True)],
                )
        finally:
            self.forget()

    def remove(self, labels: Iterable[int]) -> int:
        """Forget labels; unknown ones are ignored. Returns how many were stored."""
        ids = [int(i) for i in labels]
        if not ids:
            return 0
        try:
            with self._writer.transaction("remove vectors") as conn:
                cur = conn.execute(
                    "UPDATE lensmux.chunks SET embedding = NULL WHERE snapshot = %s AND id = ANY(%s)"
                    " AND embedding IS NOT NULL",
                    (self.snapshot, ids),
                )
                return cur.rowcount
        finally:
            self.forget()

    def vectors(self, labels: Iterable[int]) -> dict[int, npt.NDArray[numpy.float32]]:
        """Stored (normalised) vectors of the labels among those given."""
        ids = [int(i) for i in labels]
        if not ids:
            return {}
        with self._reader.use("read vectors") as conn:
            rows: list[Any] = conn.execute(
                "SELECT id, embedding::text FROM lensmux.chunks WHERE snapshot = %s AND id = ANY(%s)"
                " AND embedding IS NOT NULL",
                (self.snapshot, ids),
            ).fetchall()
        return {int(r[0]): parse_vector(r[1]) for r in rows}
