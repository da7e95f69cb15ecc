"""Embedding prepared files and writing them, with their vectors, one batch at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import numpy
import numpy.typing as npt

from lensmux.graph.index.builder.caches.vector_cache import VectorCache
from lensmux.graph.index.builder.files.walk import WalkedFile
from lensmux.graph.index.builder.preparing.prepare import Outcome, Prepared, Unchanged, Unreadable, still_current
from lensmux.graph.index.config import IndexConfig
from lensmux.graph.index.errors import EmbeddingFailed
from lensmux.graph.index.protocols import Embedder
from lensmux.graph.index.sqlite.persistence import IndexFiles

Vectors = npt.NDArray[numpy.float32]


@dataclass(frozen=True, slots=True)
class Embedded:
    """Outcomes with the vectors of their new texts, and the old chunk ids whose vectors they reuse.

    After `BatchWriter.look_up`, `missing` are the texts neither the file's old chunks nor the
    vector cache had: the model's work; `embed_missing` leaves it empty.
    """

    batch: list[Outcome]
    reuse: dict[str, int]
    vectors: dict[str, Vectors]
    missing: tuple[str, ...] = ()

    @property
    def chunks(self) -> int:
        """Chunks the batch writes."""
        return sum(len(o.write.chunks) for o in self.batch if isinstance(o, Prepared))

    @staticmethod
    def merge(parts: Sequence[Embedded]) -> Embedded:
        """One transaction's worth of several embedded batches (of distinct files)."""
        if len(parts) == 1:
            return parts[0]
        batch: list[Outcome] = []
        reuse: dict[str, int] = {}
        vectors: dict[str, Vectors] = {}
        missing: dict[str, None] = {}  # ordered, each text once
        for part in parts:
            batch.extend(part.batch)
            reuse.update(part.reuse)
            vectors.update(part.vectors)
            missing.update(dict.fromkeys(part.missing))
        return Embedded(batch, reuse, vectors, tuple(missing))


class BatchWriter:
    """Turns outcomes of prepare_file into one transaction plus the matching vector changes.

    Every mutation happens under write_lock (shared with vector saves); embedding new
    texts happens before taking it, so searches and saves are not held up by the model.
    Texts the user's vector cache (vector_cache.py) holds under `model_id` are not
    embedded again, whichever root embedded them; what the model makes goes into it.
    """

    def __init__(
        self,
        root: Path,
        files: IndexFiles,
        embedder: Embedder,
        config: IndexConfig,
        write_lock: anyio.Lock,
        *,
        cache: VectorCache | None = None,
        model_id: str = "",
    ) -> None:
        self.root = root
        self.files = files
        self.embedder = embedder
        self.config = config
        self.write_lock = write_lock
        self.cache = cache
        self.model_id = model_id

    async def commit(self, batch: Sequence[Outcome]) -> list[WalkedFile]:
        """Write a batch; returns the files that changed on disk meanwhile (not written)."""
        return await self.write(await self.embed_new(batch))

    async def embed_new(self, batch: Sequence[Outcome]) -> Embedded:
        """Vectors for the batch's texts that no chunk of the same file has already (outside the lock)."""
        return await self.embed_missing(await self.look_up(batch))

    async def look_up(self, batch: Sequence[Outcome]) -> Embedded:
        """What is at hand for the batch's texts: its files' old chunks and the vector cache; `missing` the rest.

        A full run does this as each file is prepared, beside the model (pipeline.py): a file
        with nothing missing goes to the writer without waiting for an embedder.
        """
        files = self.files
        prepared = [o for o in batch if isinstance(o, Prepared)]
        if not prepared:
            return Embedded(list(batch), {}, {})
        texts = list(dict.fromkeys(c.text for p in prepared for c in p.write.chunks))
        # A chunk whose text is unchanged keeps the vector of its old copy (same file).
        reuse = await anyio.to_thread.run_sync(files.store.chunk_ids_by_text, [p.walked.rel for p in prepared])
        wanted = [t for t in texts if reuse.get(t) not in files.vectors]
        found = await self._cached(wanted)
        return Embedded(list(batch), reuse, found, tuple(t for t in wanted if t not in found))

    async def embed_missing(self, looked: Embedded) -> Embedded:
        """`looked` with the vectors of its missing texts, from the model (and stored in the vector cache)."""
        if not looked.missing:
            return looked
        made = await self._embed_and_keep(list(looked.missing))
        return Embedded(looked.batch, looked.reuse, {**looked.vectors, **made})

    async def write(self, embedded: Embedded) -> list[WalkedFile]:
        """Write what embed_new returned in one transaction; returns the files that changed on disk meanwhile."""
        files, batch, reuse = self.files, embedded.batch, embedded.reuse
        texts = list(dict.fromkeys(c.text for o in batch if isinstance(o, Prepared) for c in o.write.chunks))
        async with self.write_lock:
            ok = await anyio.to_thread.run_sync(lambda: [_fresh(self.root, o) for o in batch])
            current = [o for o, fresh in zip(batch, ok, strict=True) if fresh]
            writes = [o.write for o in current if isinstance(o, Prepared)]
            # A text whose old copy (same file) has a vector needs no model: that vector is read
            # once the write has said which rows need one (its label stays until apply below).
            reusable = {t for t in texts if reuse.get(t) in files.vectors}
            vector_of = dict(embedded.vectors)
            needed = [c.text for w in writes for c in w.chunks]
            fresh = [t for t in dict.fromkeys(needed) if t not in vector_of and t not in reusable]
            vector_of.update(await self.embed_map(fresh))
            remove = [o.walked.rel for o in current if isinstance(o, Unreadable)]
            touch = [(o.walked.rel, o.walked.mtime_ns, o.walked.size) for o in current if isinstance(o, Unchanged)]
            result = await anyio.to_thread.run_sync(lambda: files.store.write_files(writes, remove=remove, touch=touch))
            # A chunk row the write kept has its vector under its id already (unless it never had one).
            kept = result.kept_chunk_ids
            added = [
                (i, t)
                for i, t in zip((i for per_file in result.new_chunk_ids for i in per_file), needed, strict=True)
                if i not in kept or i not in files.vectors
            ]

            def apply() -> None:
                old = files.vectors.vectors(reuse[t] for _, t in added if t not in vector_of)
                vector_of.update((t, old[reuse[t]]) for _, t in added if t not in vector_of)
                matrix = numpy.stack([vector_of[t] for _, t in added]) if added else None
                files.apply(result.removed_chunk_ids, [i for i, _ in added], matrix)

            await anyio.to_thread.run_sync(apply)
        return [o.walked for o, fresh in zip(batch, ok, strict=True) if not fresh]

    async def remove(self, paths: list[str], *, under: bool) -> int:
        """Delete files (under=True: also everything below each path); returns chunks removed."""
        files = self.files
        async with self.write_lock:
            removed = await anyio.to_thread.run_sync(lambda: files.store.remove_files(paths, under=under))
            files.apply(removed, [], None)
        return len(removed)

    async def embed_pending(self, on_batch: Callable[[int], None] | None = None) -> int:
        """Embed chunks that are in the database without a vector; returns how many."""
        files = self.files
        done = 0
        while files.pending:
            wanted = sorted(files.pending)[: self.config.embed_batch * 4]
            rows = await anyio.to_thread.run_sync(files.store.chunk_texts, wanted)
            by_text = await self.embed_map([text for _, text in rows])
            matrix = numpy.stack([by_text[text] for _, text in rows]) if rows else _empty(self.embedder.dim)
            async with self.write_lock:
                # Chunks deleted while we embedded must not get a vector back.
                alive = [i for i, (chunk_id, _) in enumerate(rows) if chunk_id in files.pending]
                ids = [rows[i][0] for i in alive]
                await anyio.to_thread.run_sync(files.apply, [], ids, matrix[alive])
                files.pending.difference_update(wanted)
            done += len(ids)
            if on_batch is not None:
                on_batch(len(ids))
        return done

    async def embed_map(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """text -> vector for each text: from the vector cache where it has one, else from the model."""
        texts = list(dict.fromkeys(texts))
        found = await self._cached(texts)
        made = await self._embed_and_keep([t for t in texts if t not in found])
        return {**found, **made}

    async def _cached(self, texts: Sequence[str]) -> dict[str, Vectors]:
        """The vectors the user's vector cache has of `texts`."""
        if self.cache is None or not texts:
            return {}
        return await anyio.to_thread.run_sync(self.cache.get, self.model_id, list(texts), self.embedder.dim)

    async def _embed_and_keep(self, texts: list[str]) -> dict[str, Vectors]:
        """The model's vectors of `texts`, put in the vector cache."""
        made = dict(zip(texts, await self.embed(texts), strict=True))
        if made and self.cache is not None:
            await anyio.to_thread.run_sync(self.cache.put, self.model_id, made)
        return made

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed in batches of embed_batch, each in a worker thread; EmbeddingFailed on any error."""
        dim = self.embedder.dim
        parts: list[Vectors] = []
        for start in range(0, len(texts), self.config.embed_batch):
            part = list(texts[start : start + self.config.embed_batch])
            try:
                arr = await anyio.to_thread.run_sync(self.embedder.embed, part)
            except Exception as exc:
                # The embedder is foreign code; whatever it raises becomes our one typed error.
                raise EmbeddingFailed(f"embedding {len(part)} chunks failed: {exc}") from exc
            arr = numpy.asarray(arr, dtype=numpy.float32)
            if arr.shape != (len(part), dim):
                raise EmbeddingFailed(f"embedder returned shape {arr.shape}, expected {(len(part), dim)}")
            parts.append(arr)
        return numpy.concatenate(parts) if parts else _empty(dim)


def _empty(dim: int) -> Vectors:
    return numpy.zeros((0, dim), dtype=numpy.float32)


def _fresh(root: Path, outcome: Outcome) -> bool:
    """Whether an outcome still describes the file: disk stats unchanged, or not from the disk at all."""
    if isinstance(outcome, Unreadable) or (isinstance(outcome, Prepared) and outcome.from_buffer):
        return True
    return still_current(root, outcome.walked)
