"""When one root's vector file and keyword index are written back to disk.

The database is written in every commit and carries the truth; the hnswlib file is
saved whole, and IndexFiles.open reconciles it with the database after a crash. So the
vectors are saved during a full run each time they grew by a share (`save_growth`, at most
every `save_interval_s`: linear in the run's length, where a fixed interval was quadratic),
at the run's end, and once single-file updates have been quiet for `save_debounce_s`
(an editor that types would otherwise have the whole file written after each pause). FTS5
keeps a deleted chunk's entries in its older segments, so at a run's end and after quiet
updates the keyword index is rewritten whole once the deleted reach `keyword_optimize_share`
of its chunks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from lensmux.graph.index.config import IndexConfig
from lensmux.graph.index.errors import IndexStoreError
from lensmux.graph.index.sqlite.persistence import IndexFiles

log = logging.getLogger(__name__)


class Saving:
    """Writes back one open index's vectors and keyword index; every write holds the index's write lock."""

    def __init__(
        self,
        root: Path,
        files: Callable[[], IndexFiles | None],
        config: IndexConfig,
        write_lock: anyio.Lock,
        note_error: Callable[[str], None],
    ) -> None:
        self._root = root
        # The index's files while open, None once closed: read at each save, never kept.
        self._files = files
        self._config = config
        self._write_lock = write_lock
        self._note_error = note_error
        self._last_save = time.monotonic()
        self._changed = anyio.Event()

    def changed(self) -> None:
        """A single-file update committed: save once updates have been quiet a while (autosave_task)."""
        self._changed.set()

    def due(self) -> bool:
        """During a full run: whether the vectors grew enough since the last save, and it is not too soon."""
        files = self._files()
        if files is None or time.monotonic() - self._last_save < self._config.save_interval_s:
            return False
        return files.save_due(self._config.save_growth)

    async def save_vectors(self) -> bool:
        """Save the vector file now if anything changed (compacting first when worthwhile)."""
        async with self._write_lock:
            self._last_save = time.monotonic()
            files, config = self._files(), self._config
            if files is None:
                return False
            return await anyio.to_thread.run_sync(files.save, config.compact_fraction, config.compact_min_deleted)

    async def optimize_keywords(self) -> bool:
        """Rewrite the keyword index whole if enough of it was deleted since the last time (Store.optimize_keywords)."""
        async with self._write_lock:
            files = self._files()
            if files is None:
                return False
            store, share = files.store, self._config.keyword_optimize_share
            return await anyio.to_thread.run_sync(store.optimize_keywords, share)

    async def autosave_task(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Save vectors once single-file updates have been quiet for save_debounce_s; runs until cancelled."""
        task_status.started()
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            while True:
                with anyio.move_on_after(self._config.save_debounce_s) as quiet:
                    await self._changed.wait()
                if quiet.cancelled_caught:
                    break
                self._changed = anyio.Event()
            try:
                await self.save_vectors()
                await self.optimize_keywords()
            except (OSError, IndexStoreError) as exc:
                log.error("saving vectors for %s failed: %s", self._root, exc)
                self._note_error(f"saving vectors failed: {exc}")
