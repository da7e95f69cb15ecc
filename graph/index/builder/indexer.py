"""Keeps one root's index in step with its files: full runs, single files, the watcher.

Work is split so the event loop stays free: file reads, chunking, SQLite writes and
hnswlib calls run in worker threads, embedding runs in worker threads in batches of
`embed_batch`, and documentSymbol requests run `symbol_concurrency` at a time.
A full run is a pipeline (pipeline.py) over its files, where the user is first (order.py):
files are prepared, embedded (`embed_concurrency` calls in flight) and written in stages
joined by bounded streams, each stage taking what is ready; a transaction holds at most
`commit_files`/`commit_chunks`. When the vector file and the keyword index are written
back is saving.py's; one update of a file at a time is updates.py's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

import anyio
import anyio.abc
import anyio.to_thread

from lensmux.graph.index.builder.caches.vector_cache import VectorCache
from lensmux.graph.index.builder.files.languages import language_for
from lensmux.graph.index.builder.files.walk import IgnoreRules, WalkedFile, walk_files
from lensmux.graph.index.builder.preparing.prepare import (
    BUFFER_MTIME_NS,
    Outcome,
    Prepared,
    Unchanged,
    prepare_file,
    prepare_text,
    stat_walked,
)
from lensmux.graph.index.builder.runs.commit import BatchWriter, Embedded
from lensmux.graph.index.builder.runs.order import Focus, RunOrder, git_recent
from lensmux.graph.index.builder.runs.pipeline import Commit, FullRun
from lensmux.graph.index.builder.saving import Saving
from lensmux.graph.index.builder.updates import UpdateTickets
from lensmux.graph.index.builder.watch import run_watch
from lensmux.graph.index.config import IndexConfig
from lensmux.graph.index.errors import RootNotIndexed, main_error
from lensmux.graph.index.location import default_store_dir
from lensmux.graph.index.progress import IndexStatus, Progress, ProgressSnapshot
from lensmux.graph.index.protocols import Embedder, SymbolSource
from lensmux.graph.index.records import FileStamp
from lensmux.graph.index.sqlite.persistence import IndexFiles
from lensmux.graph.index.sqlite.store import Store
from lensmux.graph.index.sqlite.vectors import VectorIndex
from lensmux.graph.index.team.baseline import unchanged

log = logging.getLogger(__name__)

ProgressCallback = Callable[[ProgressSnapshot], None]


class Indexer:
    """The persistent semantic index of one workspace root."""

    def __init__(
        self,
        root: Path,
        store_dir: Path | None,
        embedder: Embedder,
        symbols: SymbolSource,
        *,
        config: IndexConfig | None = None,
        model_id: str | None = None,
        vector_cache: VectorCache | None = None,
    ) -> None:
        self.root = root.resolve()
        self.store_dir = store_dir if store_dir is not None else default_store_dir(self.root)
        self.embedder = embedder
        self.symbols = symbols
        self.config = config or IndexConfig()
        # Stored in the database: another model (or dimension) means a fresh index.
        self.model_id = model_id or f"{type(embedder).__module__}.{type(embedder).__qualname__}"
        # Vectors by content, shared with every other root of the user (vector_cache.py).
        self.vector_cache = vector_cache
        self.rules = IgnoreRules(self.root, self.config.extra_skipped_dirs)
        self.progress = Progress()
        # The current full run's files, where the user is first (order.py).
        self.order = RunOrder()
        self._files: IndexFiles | None = None
        self._writer: BatchWriter | None = None
        self._open_lock = anyio.Lock()
        # Serialises every mutation of the database and the vectors (and saves).
        self._write_lock = anyio.Lock()
        self._run_lock = anyio.Lock()
        self.saving = Saving(self.root, lambda: self._files, self.config, self._write_lock, self.progress.note_error)
        # Edits, saves and file events from when the daemon learns of them to their commit.
        self.updates = UpdateTickets()
        # A team's published index this root overlays (graph/index/team/overlay.py): path -> sha256 of
        # its files. Files with that content are not indexed here; `absent` are its files this
        # tree does not have. None: index every file. Replaced whole (never mutated), so an
        # update can tell it changed under it.
        self.baseline: Mapping[str, str] | None = None
        self.absent: set[str] = set()

    def local_paths(self) -> set[str]:
        """The files the shared index must not answer for: those indexed here and those this tree lacks."""
        return set(self.store.file_stamps()) | self.absent

    # -- lifecycle ------------------------------------------------------------------

    @property
    def _open_files(self) -> IndexFiles:
        if self._files is None:
            raise RootNotIndexed(f"index for {self.root} is not open")
        return self._files

    @property
    def _batch_writer(self) -> BatchWriter:
        if self._writer is None:
            raise RootNotIndexed(f"index for {self.root} is not open")
        return self._writer

    @property
    def store(self) -> Store:
        """The SQLite side: keyword_search, lookup_symbols, chunk, symbol, ... (RootNotIndexed if closed)."""
        return self._open_files.store

    @property
    def vectors(self) -> VectorIndex:
        """The hnswlib side: search(vector, k) (RootNotIndexed if closed)."""
        return self._open_files.vectors

    @property
    def pending_vectors(self) -> int:
        """Chunks in the database still waiting for a vector."""
        return len(self._files.pending) if self._files else 0

    async def open(self) -> None:
        """Open the database and vectors, recover damaged files and reconcile; idempotent."""
        async with self._open_lock:
            if self._files is None:
                files = await anyio.to_thread.run_sync(
                    lambda: IndexFiles.open(
                        self.store_dir,
                        self.root,
                        model_id=self.model_id,
                        dim=self.embedder.dim,
                        hnsw=self.config.hnsw,
                        note=self.progress.note_error,
                    )
                )
                self._writer = BatchWriter(
                    self.root,
                    files,
                    self.embedder,
                    self.config,
                    self._write_lock,
                    cache=self.vector_cache,
                    model_id=self.model_id,
                )
                self._files = files

    async def aclose(self) -> None:
        """Save vectors if anything changed, then close the database."""
        if self._files is None:
            return
        try:
            await self.saving.save_vectors()
        finally:
            async with self._write_lock:
                files, self._files, self._writer = self._files, None, None
                if files is not None:
                    files.close()

    async def __aenter__(self) -> Indexer:
        await self.open()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def status(self) -> IndexStatus:
        """Progress plus index sizes, for `lensmux status` (IndexStatus.as_dict() for JSON)."""
        base = IndexStatus(str(self.root), str(self.store_dir), self.model_id, self.progress.snapshot())
        files = self._files
        if files is None:
            return base
        counts = files.store.counts()
        return dataclasses.replace(
            base,
            files=counts.files,
            symbols=counts.symbols,
            chunks=counts.chunks,
            vectors=len(files.vectors),
            pending_vectors=len(files.pending),
            focus_left=self.order.focus_left,
        )

    async def semantic_search(self, query: str, k: int = 20) -> list[tuple[int, float]]:
        """Embed the query off the loop; (chunk_id, cosine similarity), most similar first."""
        await self.open()
        vector = await anyio.to_thread.run_sync(self.embedder.embed_query, query)
        return await anyio.to_thread.run_sync(self.vectors.search, vector, k)

    # -- full runs ------------------------------------------------------------------

    async def index_all(
        self, progress_cb: ProgressCallback | None = None, focus: Focus | None = None
    ) -> ProgressSnapshot:
        """Embed pending chunks, drop deleted files, (re)index new and changed ones, where the user is first; save."""
        await self.open()
        if focus is not None:
            self.order.refocus(focus)
        async with self._run_lock:
            try:
                await self._index_all(progress_cb)
            except Exception as exc:
                self.progress.fail(f"{type(exc).__name__}: {exc}")
                raise
            finally:
                self.order.finish()
                if self.progress.state == "indexing":  # cancelled
                    self.progress.stop()
                    self.progress.state = "idle"
        return self.progress.snapshot()

    async def _index_all(self, progress_cb: ProgressCallback | None) -> None:
        self.progress.walk()
        self.rules.invalidate()
        walked = await anyio.to_thread.run_sync(walk_files, self.rules, self.config.max_file_bytes)
        known = await anyio.to_thread.run_sync(self.store.file_stamps)
        if self.baseline is not None:
            walked = await anyio.to_thread.run_sync(self._not_in_baseline, walked)
        present = {w.rel for w in walked}
        todo = [w for w in walked if _needs_work(w, known.get(w.rel))]
        recent = await anyio.to_thread.run_sync(git_recent, self.root) if todo else []
        self.progress.begin(len(todo), len(walked))
        await self.embed_pending()
        gone = [path for path in known if path not in present]
        if gone:
            await self._remove(gone, under=False)
        prepare = self.order.preparing(lambda w: self._prepare(w, known.get(w.rel)), self.config.fault_hold)
        run = FullRun(prepare, self._batch_writer, self.config, self._write_and_report(progress_cb))
        try:
            retry = await run.run(self.order.start(todo, recent))
        except BaseExceptionGroup as group:
            raise main_error(group) from None
        if todo:
            log.info("indexed %d files of %s in %s", len(todo), self.root, run.clock.summary())
        for w in retry:  # changed while being indexed: once more with the new content
            await self.reindex_file(w.rel)
            self.progress.advance(1, 0)
        await self.saving.save_vectors()
        await self.saving.optimize_keywords()
        self.progress.finish()

    def _not_in_baseline(self, walked: list[WalkedFile]) -> list[WalkedFile]:
        """The walked files whose content the baseline does not have; notes the baseline's absent files."""
        baseline = self.baseline or {}
        same = unchanged(self.root, (w.rel for w in walked), baseline, self.config.max_file_bytes)
        self.absent = set(baseline) - {w.rel for w in walked}
        return [w for w in walked if w.rel not in same]

    async def _prepare(self, walked: WalkedFile, known: FileStamp | None) -> Outcome:
        return await prepare_file(
            self.root,
            walked,
            known,
            symbols=self.symbols,
            embedder=self.embedder,
            config=self.config,
            keep_generated=self.rules.reincluded(walked.rel),
        )

    def _write_and_report(self, progress_cb: ProgressCallback | None) -> Commit:
        async def write(embedded: Embedded) -> list[WalkedFile]:
            retry = await self._batch_writer.write(embedded)
            batch = embedded.batch
            self.order.written(o.walked.rel for o in batch)
            chunks = sum(len(o.write.chunks) for o in batch if isinstance(o, Prepared) and o.walked not in retry)
            self.progress.advance(len(batch) - len(retry), chunks)
            if self.saving.due():
                await self.saving.save_vectors()
            if progress_cb is not None:
                progress_cb(self.progress.snapshot())
            return retry

        return write

    # -- single files -----------------------------------------------------------------

    async def reindex_file(self, path: str | Path) -> bool:
        """Re-read one file, or drop it when gone, ignored or too big; True when its content changed."""
        await self.open()
        rel = self.store.relative(path)
        if rel is None:
            return False
        async with self.updates.alone(rel):
            return await self._reindex_file(rel)

    async def _reindex_file(self, rel: str) -> bool:
        language = language_for(rel)
        for _ in range(3):
            walked = None
            if language is not None and not self.rules.is_ignored(rel):
                walked = await anyio.to_thread.run_sync(stat_walked, self.root, rel, language)
            if walked is None or walked.size > self.config.max_file_bytes:
                await self.remove_file(rel)
                if self.baseline is not None and rel in self.baseline:
                    self.absent.add(rel)
                return False
            if self.baseline is not None:
                self.absent.discard(rel)
                if await anyio.to_thread.run_sync(
                    unchanged, self.root, [rel], self.baseline, self.config.max_file_bytes
                ):
                    await self.remove_file(rel)  # back to the shared content: the shared rows answer
                    return False
            baseline = self.baseline
            outcome = await self._prepare(walked, await self._known(rel))
            if not await self._batch_writer.commit([outcome]):
                self.saving.changed()
                if self.baseline is not baseline:
                    continue  # the shared snapshot changed meanwhile: decide again which side answers
                return isinstance(outcome, Prepared)
        log.info("%s keeps changing; leaving it to the next event", rel)
        return False

    async def reindex_text(self, path: str | Path, text: str) -> bool:
        """Index an editor's (maybe unsaved) text of a file in place of the disk's; True when it changed."""
        await self.open()
        rel = self.store.relative(path)
        language = language_for(rel) if rel is not None else None
        data_size = len(text.encode("utf-8", "replace"))
        if rel is None or language is None or self.rules.is_ignored(rel) or data_size > self.config.max_file_bytes:
            return False
        walked = WalkedFile(rel, language, data_size, BUFFER_MTIME_NS)
        async with self.updates.alone(rel):
            return await self._reindex_text(walked, text)

    async def _reindex_text(self, walked: WalkedFile, text: str) -> bool:
        rel = walked.rel
        shared = self.baseline.get(rel) if self.baseline is not None else None
        if shared is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() == shared:
            await self.remove_file(rel)  # the editor's text is the shared content: the shared rows answer
            return False
        outcome = await prepare_text(
            self.root,
            walked,
            text,
            await self._known(rel),
            symbols=self.symbols,
            embedder=self.embedder,
            config=self.config,
            keep_generated=self.rules.reincluded(rel),
        )
        if isinstance(outcome, Unchanged):
            return False
        await self._batch_writer.commit([outcome])
        self.saving.changed()
        return isinstance(outcome, Prepared)

    async def _known(self, rel: str) -> FileStamp | None:
        record = await anyio.to_thread.run_sync(self.store.file, rel)
        return FileStamp(record.sha256, record.mtime_ns, record.size, record.structure) if record else None

    async def remove_file(self, path: str | Path) -> int:
        """Drop a file, or every file under a directory, from the index; returns chunks removed."""
        await self.open()
        rel = self.store.relative(path)
        return 0 if rel is None else await self._remove([rel], under=True)

    async def _remove(self, paths: list[str], *, under: bool) -> int:
        removed = await self._batch_writer.remove(paths, under=under)
        if removed:
            self.saving.changed()
        return removed

    async def embed_pending(self) -> int:
        """Embed chunks that are in the database without a vector (after a crash or a rebuild)."""
        await self.open()
        return await self._batch_writer.embed_pending(lambda n: self.progress.advance(0, n))

    async def watch_task(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow file changes under the root until cancelled; includes the saving's autosave_task."""
        await run_watch(self, task_status)


def _needs_work(walked: WalkedFile, known: FileStamp | None) -> bool:
    if known is None or known.structure == "failed":
        return True
    return (known.mtime_ns, known.size) != (walked.mtime_ns, walked.size)
