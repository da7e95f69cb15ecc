"""The watcher: edits, deletions, new and moved-in directories reach the index on their own."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
import watchfiles
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import IndexConfig, IndexCorrupt, Indexer, VectorIndex
from lensmux.graph.index.builder.watch import apply_changes

pytestmark = pytest.mark.anyio

DEADLINE_S = 30.0


async def _eventually(check: Callable[[], bool], what: str) -> None:
    """Poll until check() holds; fail (not time out the suite) if it never does."""
    with anyio.move_on_after(DEADLINE_S):
        while not check():
            await anyio.sleep(0.05)
        return
    pytest.fail(f"never happened: {what}")


def _found(ix: Indexer, word: str) -> set[str]:
    return {c.path for cid, _ in ix.store.keyword_search(word, 20) if (c := ix.store.chunk(cid)) and word in c.text}


async def test_changes_on_disk_become_searchable(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_files(root, {f"pkg/mod{i}.py": module_text(i) for i in range(4)})
    write_files(root, {".gitignore": "scratch/\n"})
    config = IndexConfig(watch_debounce_ms=50, watch_tick_ms=100, save_debounce_s=0.1)
    async with Indexer(root, tmp_path / "state", FakeEmbedder(), FakeSymbolSource(), config=config) as ix:
        await ix.index_all()
        saved_before = ix.store.vector_pointer()
        assert saved_before is not None
        async with anyio.create_task_group() as tg:
            await tg.start(ix.watch_task)

            target = root / "pkg/mod1.py"
            target.write_text(target.read_text() + "\n\ndef zebra_unicorn_handler():\n    return 42\n")
            await _eventually(lambda: _found(ix, "zebra_unicorn_handler") == {"pkg/mod1.py"}, "edit indexed")
            (symbol,) = ix.store.lookup_symbols("zebra_unicorn_handler")
            assert symbol.kind == "function"

            (root / "pkg/mod2.py").unlink()
            await _eventually(lambda: ix.store.file("pkg/mod2.py") is None, "deletion indexed")
            assert _found(ix, "compute_value_2") == set()

            write_files(root, {"scratch/notes.py": "def scratch_only_helper():\n    pass\n"})
            write_files(tmp_path / "elsewhere", {"moved/inner.py": "def moved_in_function():\n    pass\n"})
            os.rename(tmp_path / "elsewhere/moved", root / "moved")
            await _eventually(lambda: _found(ix, "moved_in_function") == {"moved/inner.py"}, "moved dir indexed")
            assert ix.store.file("scratch/notes.py") is None, "gitignored paths stay out"

            (moved_chunk,) = ix.store.chunks_in_file("moved/inner.py")

            def saved_with_moved_chunk() -> bool:
                pointer = ix.store.vector_pointer()
                if pointer is None or pointer.generation <= saved_before.generation:
                    return False
                try:
                    return moved_chunk.id in VectorIndex.load(ix.store_dir, pointer).labels()
                except IndexCorrupt:  # replaced by a newer generation while we looked
                    return False

            # Vectors follow the committed rows a moment later, then a debounced save happens.
            await _eventually(lambda: ix.status().vectors == ix.status().chunks, "vectors caught up")
            await _eventually(saved_with_moved_chunk, "the vector file on disk includes the new chunk")
            assert ix.pending_vectors == 0
            tg.cancel_scope.cancel()


async def test_a_failed_full_run_after_an_ignore_file_changed_does_not_end_the_watcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ignore file's change starts a full run from the watcher; a store error in that run is
    the index's problem (status shows it), not the watcher's: its task runs in the daemon's index
    service, whose task group would end with it."""
    root = tmp_path / "repo"
    write_files(root, {"pkg/mod0.py": module_text(0), ".gitignore": "scratch/\n"})
    async with Indexer(root, tmp_path / "state", FakeEmbedder(), FakeSymbolSource()) as ix:
        await ix.index_all()

        async def corrupt(*args: object, **kwargs: object) -> None:
            raise IndexCorrupt("vectors.bin: truncated")

        monkeypatch.setattr(ix, "index_all", corrupt)
        await apply_changes(ix, [(watchfiles.Change.modified, str(root / ".gitignore"))])
