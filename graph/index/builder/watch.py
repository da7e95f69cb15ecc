"""Following file changes under a root with watchfiles and applying them to the index."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.to_thread
import watchfiles

from lensmux.graph.index.builder.files.languages import language_for
from lensmux.graph.index.builder.files.walk import IGNORE_FILES, walk_files
from lensmux.graph.index.errors import IndexStoreError

if TYPE_CHECKING:
    from lensmux.graph.index.builder.indexer import Indexer

log = logging.getLogger(__name__)


class ChangeFilter:
    """watchfiles filter: drops ignored paths, unindexed file types and the store itself."""

    def __init__(self, indexer: Indexer) -> None:
        self._indexer = indexer
        self._store_dir = str(indexer.store_dir.resolve()) + os.sep

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        if path.startswith(self._store_dir):
            return False
        rel = self._indexer.store.relative(path)
        if rel is None or rel == ".":
            return False
        if rel.rsplit("/", 1)[-1] in IGNORE_FILES:
            return True
        is_dir = change != watchfiles.Change.deleted and os.path.isdir(path)
        if self._indexer.rules.is_ignored(rel, is_dir=is_dir):
            return False
        # A deleted or moved-in path may be a directory, whose name says nothing.
        return is_dir or change == watchfiles.Change.deleted or language_for(rel) is not None


async def apply_changes(indexer: Indexer, changes: Iterable[tuple[watchfiles.Change, str]]) -> None:
    """Re-index changed files, drop deleted ones; an ignore file's change triggers a full run."""
    ordered = sorted(changes, key=lambda c: c[1])
    if any(Path(path).name in IGNORE_FILES for _, path in ordered):
        indexer.rules.invalidate()
        try:
            await indexer.index_all()
        except IndexStoreError as exc:
            # Nor must a failed full run: it would leave the watcher task, and the index
            # service's task group (the daemon's) with it. index_all put the error in progress.
            log.error("re-indexing %s after an ignore file changed failed: %s", indexer.root, exc)
        return
    # Every file of the batch is an update under way until it is applied (updates.py).
    tickets = [indexer.updates.begin(indexer.store.relative(path) or path) for _, path in ordered]
    try:
        for (change, path), ticket in zip(ordered, tickets, strict=True):
            try:
                await _apply_one(indexer, change, path)
            except IndexStoreError as exc:
                # One bad update must not end the watcher; status shows the error.
                log.error("updating the index for %s failed: %s", path, exc)
                indexer.progress.note_error(f"{path}: {exc}")
            finally:
                indexer.updates.end(ticket)
    finally:
        for ticket in tickets:
            indexer.updates.end(ticket)


async def _apply_one(indexer: Indexer, change: watchfiles.Change, path: str) -> None:
    """One file event: re-index, drop, or walk a new directory."""
    kind = await anyio.to_thread.run_sync(_path_kind, path)
    if change == watchfiles.Change.deleted or kind == "missing":
        await indexer.remove_file(path)
    elif kind == "dir":
        rel = indexer.store.relative(path)
        if rel is None:
            return
        found = await anyio.to_thread.run_sync(walk_files, indexer.rules, indexer.config.max_file_bytes, rel)
        for walked in found:
            await indexer.reindex_file(walked.rel)
    else:
        await indexer.reindex_file(path)


def _path_kind(path: str) -> str:
    if not os.path.lexists(path):
        return "missing"
    return "dir" if os.path.isdir(path) and not os.path.islink(path) else "file"


async def run_watch(indexer: Indexer, task_status: anyio.abc.TaskStatus[None]) -> None:
    """Watch the root until cancelled; reports started once the OS watch is in place."""
    await indexer.open()
    config = indexer.config
    async with anyio.create_task_group() as tg:
        await tg.start(indexer.saving.autosave_task)
        started = False
        # yield_on_timeout makes the first (possibly empty) yield prove the watch is set
        # up, and bounds how long cancellation waits for the watcher thread.
        async for changes in watchfiles.awatch(
            indexer.root,
            watch_filter=ChangeFilter(indexer),
            debounce=config.watch_debounce_ms,
            step=50,
            rust_timeout=config.watch_tick_ms,
            yield_on_timeout=True,
        ):
            if not started:
                started = True
                task_status.started()
            if changes:
                await apply_changes(indexer, changes)
        tg.cancel_scope.cancel()
