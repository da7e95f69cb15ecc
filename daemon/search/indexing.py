"""The daemon's semantic indexes: one Indexer per root, fed by its own language servers.

Symbols come from `textDocument/documentSymbol` through the daemon's
instances (the same processes editors use), embeddings from the shared model
loaded once off the event loop. Each root's run, watcher and autosave are
tasks in the daemon's task group. Saves re-read the file; edits re-index the
daemon's text of the document (unsaved included) once the typing pauses.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from anyio.abc import TaskGroup

from lensmux.daemon.config import DaemonConfig
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.paths import uri_to_path
from lensmux.daemon.search import model_memory
from lensmux.daemon.search.errors import IndexServiceError
from lensmux.daemon.search.index_edits import PendingEdits, TextSource
from lensmux.daemon.search.index_inputs import LspSymbolSource, focus_of, focus_param, index_config, model_id
from lensmux.daemon.search.root_index import RootIndex, attach_team, root_summary
from lensmux.graph.index import (
    Indexer,
    IndexStoreError,
    ProgressSnapshot,
)
from lensmux.graph.index.builder.caches.symbol_cache import SymbolCache
from lensmux.graph.index.builder.caches.vector_cache import VectorCache
from lensmux.graph.index.builder.runs.order import Focus

log = logging.getLogger(__name__)


class IndexService:
    """Indexes by root, created on first request."""

    def __init__(self, config: DaemonConfig, internal: InternalClient, team_dsn: str | None = None) -> None:
        self._config = config
        # `[index] store = "postgres"`: the team store's DSN (graph/index/team/shared.py).
        self._team_dsn = team_dsn
        self._internal = internal
        self._tg: TaskGroup | None = None
        self._closed = anyio.Event()
        self.roots: dict[Path, RootIndex] = {}
        self._embedder: Any = None
        self._embedder_lock = anyio.Lock()
        self.model_state = "not loaded"
        self.model_progress: tuple[str, float] | None = None
        # Edited documents waiting for the typing to pause (index_edits.py).
        self._edits = PendingEdits(self._containing, self._reindex)
        self._changed = anyio.Event()
        self._index_config = index_config(config)
        # The user's vectors by content (graph/index/builder/caches/vector_cache.py), opened with the first index.
        self._vector_cache: VectorCache | None = None
        # The user's documentSymbol answers by content (graph/index/builder/caches/symbol_cache.py), likewise.
        self._symbol_cache: SymbolCache | None = None

    async def run_task(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own every indexing run and watcher; on cancellation, save and close each index."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._edits.run_task)
                tg.start_soon(
                    model_memory.release_task,
                    lambda: self._embedder,
                    self._config.memory.model_release_after,
                    self._model_released,
                )
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            await self._close_all()
            self._closed.set()

    def _model_released(self) -> None:
        self.model_state = "released"

    async def wait_closed(self) -> None:
        """Return once every index is saved and closed."""
        await self._closed.wait()

    def _group(self) -> TaskGroup:
        if self._tg is None:
            raise IndexServiceError("the daemon is shutting down")
        return self._tg

    async def embedder(self) -> Any:
        """The shared embedding model, built or loaded off the event loop on first use."""
        async with self._embedder_lock:
            if self._embedder is None:
                from lensmux.graph.embedding.embedder import Embedder
                from lensmux.graph.embedding.spec import EmbeddingError

                def progress(stage: str, fraction: float) -> None:
                    self.model_progress = (stage, fraction)

                self.model_state = "loading"
                try:
                    model = self._config.embedding.model
                    adapter = self._config.embedding.query_adapter
                    self._embedder = await anyio.to_thread.run_sync(
                        lambda: Embedder.open_default(progress=progress, model=model, query_adapter=adapter)
                    )
                except EmbeddingError as exc:
                    self.model_state = f"unavailable: {exc}"
                    raise IndexServiceError(f"embedding model unavailable: {exc}") from exc
                self._embedder.token_memo.limit = self._config.index.token_memo_entries
                self.model_state = "ready"
                self.model_progress = None
            return self._embedder

    async def index(self, root: Path, focus: Any = None, *, overlay: bool = True) -> RootIndex:
        """Start (or refresh) indexing of `root`; returns at once with the run under way.

        The run indexes first the files editors hold open and those under `focus` (the
        directory the command ran from, a request's `focus`); a run already under way puts
        them next. With a team store, a run first lays the root over the team's nearest
        published snapshot (again, in case HEAD moved); `overlay=False` (a publisher) does not.
        """
        directory = focus_param(focus)
        resolved = await anyio.Path(root).resolve()
        if not await resolved.is_dir():
            raise IndexServiceError(f"{root} is not a directory")
        root = Path(resolved)
        entry = self.roots.get(root)
        if entry is None:
            embedder = await self.embedder()
            symbols = LspSymbolSource(self._internal, root, await self._open_symbol_cache())
            cache = await self._open_vector_cache()
            indexer = Indexer(
                root,
                None,
                embedder,
                symbols,
                config=self._index_config,
                model_id=model_id(embedder),
                vector_cache=cache,
            )
            try:
                await indexer.open()
            except IndexStoreError as exc:
                raise IndexServiceError(f"{root}: {exc}") from exc
            entry = RootIndex(root, indexer)
            if overlay:
                await attach_team(entry, self._team_dsn)
            self.roots[root] = entry
        elif not entry.running and overlay and self._team_dsn is not None:
            # HEAD may have moved, or a nearer ancestor been published, since the last run.
            entry.running = True
            try:
                await attach_team(entry, self._team_dsn)
            finally:
                entry.running = False
        if not entry.running:
            entry.running = True
            entry.done = anyio.Event()
            entry.started_at = time.time()
            entry.finished_at = None
            self._group().start_soon(self._run_task, entry, focus_of(root, self._internal, directory))
        else:
            self.refocus(entry, directory)
        return entry

    def drop_shared(self, entry: RootIndex, reason: str) -> None:
        """The team store failed under a search: go local (a full run starts) and say so in warnings."""
        if entry.shared is None:
            return
        from lensmux.graph.index.team import shared as team

        team.detach(entry.shared, entry.indexer)
        entry.shared = None
        entry.team_warning = f"team index lost ({reason}); searching the local index while it indexes every file"
        log.warning("%s: %s", entry.root, entry.team_warning)
        if not entry.running:
            entry.running = True
            entry.done = anyio.Event()
            entry.started_at = time.time()
            entry.finished_at = None
            self._group().start_soon(self._run_task, entry, focus_of(entry.root, self._internal, None))

    async def publish(self, root: Path) -> dict[str, Any]:
        """`lensmux index ROOT --publish`: the root's index of every file, copied into the team snapshot of HEAD."""
        dsn = self._team_dsn
        if dsn is None:
            raise IndexServiceError('publishing needs [index] store = "postgres" and a dsn (or LENSMUX_INDEX_DSN)')
        from lensmux.graph.index.team import shared as team

        entry = self.find(root) or await self.index(root, overlay=False)
        if entry.shared is not None:
            # A publisher indexes every file itself: its snapshot must not depend on an older one.
            team.detach(entry.shared, entry.indexer)
            entry.shared = None
            await entry.done.wait()
            await self.index(entry.root, overlay=False)
        while entry.running:
            await entry.done.wait()
        if entry.error is not None:
            raise IndexServiceError(f"indexing {entry.root} failed: {entry.error}")
        try:
            return await anyio.to_thread.run_sync(team.publish_root, dsn, entry.indexer)
        except IndexStoreError as exc:
            raise IndexServiceError(f"publishing {entry.root}: {exc}") from exc

    async def _open_vector_cache(self) -> VectorCache | None:
        """The vector cache every root shares, or None when `[daemon.index] vector_cache_mb` is 0."""
        megabytes = self._config.index.vector_cache_mb
        if self._vector_cache is None and megabytes > 0:
            self._vector_cache = await anyio.to_thread.run_sync(
                lambda: VectorCache.open(max_bytes=megabytes * 1024 * 1024)
            )
        return self._vector_cache

    async def _open_symbol_cache(self) -> SymbolCache | None:
        """The symbol cache every root shares, or None when `[daemon.index] symbol_cache_mb` is 0."""
        megabytes = self._config.index.symbol_cache_mb
        if self._symbol_cache is None and megabytes > 0:
            self._symbol_cache = await anyio.to_thread.run_sync(
                lambda: SymbolCache.open(max_bytes=megabytes * 1024 * 1024)
            )
        return self._symbol_cache

    def refocus(self, entry: RootIndex, directory: Path | None) -> None:
        """While the root is indexed, index next the files editors hold open and those under `directory`."""
        if entry.running:
            entry.indexer.order.refocus(focus_of(entry.root, self._internal, directory))

    async def _run_task(self, entry: RootIndex, focus: Focus) -> None:
        def progress(snapshot: ProgressSnapshot) -> None:
            entry.last = snapshot

        try:
            entry.last = await entry.indexer.index_all(progress, focus)
            entry.error = None
        except (IndexStoreError, OSError) as exc:
            entry.error = str(exc)
            log.error("indexing %s failed: %s", entry.root, exc)
        finally:
            entry.runs += 1
            entry.finished_at = time.time()
            entry.running = False
            entry.done.set()
            self._note_changed()
        # Chunk texts, symbol answers and batches of the run are freed; hand their pages back.
        await anyio.to_thread.run_sync(model_memory.trim_heap)
        if not entry.watching and entry.error is None:
            entry.watching = True
            await self._group().start(entry.indexer.watch_task)

    def _note_changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_changed(self, timeout: float) -> None:
        """Return when an index run ends or a file is re-indexed for an editor, or after `timeout`."""
        with anyio.move_on_after(timeout):
            await self._changed.wait()

    def full_run_going(self) -> bool:
        """Whether a full index run goes on on any root: learning and the bind walk wait for it."""
        return any(entry.running for entry in self.roots.values())

    def find(self, root: Path) -> RootIndex | None:
        """The index of `root` (or of the indexed root containing it)."""
        root = root.resolve()
        if root in self.roots:
            return self.roots[root]
        for known, entry in self.roots.items():
            if root.is_relative_to(known):
                return entry
        return None

    def _containing(self, path: Path) -> list[RootIndex]:
        """The indexes of every root that contains `path`."""
        return [entry for root, entry in self.roots.items() if path.is_relative_to(root)]

    def on_saved(self, uri: str) -> None:
        """A client saved a file: re-index it in every root that contains it."""
        path = uri_to_path(uri)
        if path is None or self._tg is None:
            return
        for entry in self._containing(path):
            ticket = entry.indexer.updates.begin(entry.relative(path))
            self._tg.start_soon(self._reindex, entry, path, None, ticket)

    def on_changed(self, uri: str, text: TextSource) -> None:
        """A client edited a document: index the daemon's text of it (maybe unsaved) soon."""
        path = uri_to_path(uri)
        if path is not None:
            self._edits.add(path, text)

    async def settle(self, entry: RootIndex, timeout: float) -> list[str]:
        """Wait up to `timeout` s for the root's edits, saves and file events known so far; files still pending."""
        self._edits.hurry(entry.root)
        return await entry.indexer.updates.wait_begun_before(timeout)

    async def _reindex(self, entry: RootIndex, path: Path, text: str | None = None, ticket: int | None = None) -> None:
        """Re-index one file from the disk, or from an editor's text of it when given; then end `ticket`."""
        started = time.perf_counter()
        try:
            if text is None:
                changed = await entry.indexer.reindex_file(path)
            else:
                changed = await entry.indexer.reindex_text(path, text)
        except (IndexStoreError, OSError) as exc:
            log.warning("re-indexing %s failed: %s", path, exc)
            return
        finally:
            if ticket is not None:
                entry.indexer.updates.end(ticket)
        source = "disk" if text is None else "editor"
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.debug("re-indexed %s from the %s in %.0f ms (changed: %s)", path, source, elapsed_ms, changed)
        if changed:
            self._note_changed()

    def summary(self, entry: RootIndex) -> dict[str, Any]:
        """What `lensmux index --wait` prints and `status` shows for one root."""
        return root_summary(entry)

    def status(self) -> dict[str, Any]:
        """Model state and every root's index."""
        return {
            "model": {
                "state": self._model_state_now(),
                "progress": self.model_progress,
                "query_adapter": self._query_adapter_state(),
            },
            "roots": [self.summary(e) for e in self.roots.values()],
            "caps": self._config.index_caps(),
            "vector_cache": self._vector_cache.stats().as_dict() if self._vector_cache is not None else None,
            "symbol_cache": self._symbol_cache.stats().as_dict() if self._symbol_cache is not None else None,
            "token_memo": self._embedder.token_memo.stats() if self._embedder is not None else None,
        }

    def _query_adapter_state(self) -> str:
        # The loaded model's word for it (its name, "off", or "not used: why"); before loading, the setting.
        if self._embedder is not None:
            state: str = self._embedder.info().query_adapter_state
            return state
        return self._config.embedding.query_adapter_before_load()

    def _model_state_now(self) -> str:
        # A released model is loaded again by the next use, without passing through embedder().
        if self.model_state == "released" and self._embedder is not None and self._embedder.loaded:
            self.model_state = "ready"
        return self.model_state

    async def _close_all(self) -> None:
        """Save and close every index (shutdown loses nothing)."""
        for entry in self.roots.values():
            with anyio.CancelScope(shield=True):
                try:
                    await entry.indexer.aclose()
                except (IndexStoreError, OSError) as exc:
                    log.error("closing the index of %s: %s", entry.root, exc)
                if entry.shared is not None:
                    entry.shared.close()
        if self._vector_cache is not None:
            self._vector_cache.close()
        if self._symbol_cache is not None:
            self._symbol_cache.close()
