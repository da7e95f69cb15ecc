"""A full run keeps the model fed: it writes what is ready, and embeds other files while one is embedded or written."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy
import numpy.typing as npt
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import IndexConfig, Indexer
from lensmux.graph.index.builder.caches.vector_cache import VectorCache

pytestmark = pytest.mark.anyio


class FakeStalledSymbolSource(FakeSymbolSource):
    """Answers for the files named in `answered` at once; the others wait until `release` is set."""

    def __init__(self, answered: set[str]) -> None:
        super().__init__()
        self.answered = answered
        self.release = anyio.Event()

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        if path.name not in self.answered:
            await self.release.wait()
        return await super().document_symbols(path, language_id, text)


def _paths(ix: Indexer, word: str) -> set[str]:
    return {c.path for cid, _ in ix.store.keyword_search(word, 50) if (c := ix.store.chunk(cid)) and word in c.text}


async def test_files_the_server_answered_are_indexed_while_it_is_stuck_on_the_others(tmp_path: Path) -> None:
    write_files(tmp_path / "repo", {f"pkg/mod{i}.py": module_text(i) for i in range(12)})
    symbols = FakeStalledSymbolSource(answered={"mod0.py"})
    # Default batch sizes (64 files, 512 chunks): far more than one file's worth. The stalled
    # requests must not time out into plain windows while the test looks.
    config = IndexConfig(symbol_timeout_s=600.0)
    async with Indexer(tmp_path / "repo", tmp_path / "state", FakeEmbedder(), symbols, config=config) as ix:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ix.index_all)
            # A deadlock guard, not a timing expectation: before batches were cut from what
            # was ready, mod0 waited for the other files and this never became true.
            with anyio.fail_after(60):
                while _paths(ix, "compute_value_0") != {"pkg/mod0.py"}:
                    await anyio.sleep(0.02)
            # The rows commit a moment before their vectors are added (two steps of one write):
            # wait for the vectors, still while the server is stuck on every other file.
            with anyio.fail_after(60):
                while ix.status().vectors != ix.status().chunks:
                    await anyio.sleep(0.02)
            assert _paths(ix, "compute_value_5") == set(), "the stalled files are not in yet"
            symbols.release.set()
        assert _paths(ix, "compute_value_5") == {"pkg/mod5.py"}
        assert ix.status().files == 12 and ix.status().vectors == ix.status().chunks


class FakeOneAtATimeWitness(FakeEmbedder):
    """The first call holds on until a second call starts (or 30 s pass), and records whether one did."""

    def __init__(self) -> None:
        super().__init__()
        self.second_started = threading.Event()
        self.overlapped: bool | None = None
        self._started = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        with self._lock:
            self._started += 1
            first = self._started == 1
        if first:
            # A deadlock guard, not a timing expectation: embedding one call at a time, the
            # second never starts while this one waits.
            self.overlapped = self.second_started.wait(timeout=30)
        else:
            self.second_started.set()
        return super().embed(texts)


async def test_other_files_are_embedded_while_one_embedding_is_in_progress(tmp_path: Path) -> None:
    write_files(tmp_path / "repo", {f"pkg/mod{i}.py": module_text(i) for i in range(12)})
    embedder = FakeOneAtATimeWitness()
    config = IndexConfig(embed_batch=8)  # a few files a call, so twelve files make several calls
    async with Indexer(tmp_path / "repo", tmp_path / "state", embedder, FakeSymbolSource(), config=config) as ix:
        await ix.index_all()
        assert embedder.overlapped, "the model waited for one call to finish before embedding the next files"
        assert ix.status().files == 12 and ix.status().vectors == ix.status().chunks
        assert _paths(ix, "compute_value_7") == {"pkg/mod7.py"}


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_the_index_is_the_same_however_many_embedding_calls_run_at_once(tmp_path: Path, concurrency: int) -> None:
    write_files(tmp_path / "repo", {f"pkg/mod{i}.py": module_text(i) for i in range(20)})

    async def index(state: str, config: IndexConfig) -> dict[tuple[str, str], list[float]]:
        async with Indexer(
            tmp_path / "repo", tmp_path / state, FakeEmbedder(), FakeSymbolSource(), config=config
        ) as ix:
            await ix.index_all()
            ids = [cid for cid in ix.vectors.labels()]
            vectors = ix.vectors.vectors(ids)
            return {
                (c.path, c.text): vectors[cid].round(6).tolist()
                for cid in ids
                if (c := ix.store.chunk(cid)) is not None
            }

    one = await index("one", IndexConfig(embed_concurrency=1, embed_batch=4, commit_files=3, commit_chunks=8))
    many = await index(
        "many", IndexConfig(embed_concurrency=concurrency, embed_batch=4, commit_files=3, commit_chunks=8)
    )
    assert len(one) > 20 and one == many


# Both roots' vectors under one model id (it defaults to the embedder's class name).
MODEL = "fake-model"


class FakeStuckOnNewTexts(FakeEmbedder):
    """Embeds at once, except a call with a text containing `marker`, which waits for `release` (or 30 s)."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.stuck = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        if any(self.marker in t for t in texts):
            self.stuck.set()
            self.release.wait(timeout=30)
        return super().embed(texts)


async def test_files_the_vector_cache_has_whole_are_written_while_the_model_embeds_others(tmp_path: Path) -> None:
    # A second worktree: its branch changed one file; the others are texts another root embedded.
    same = {f"pkg/mod{i}.py": module_text(i) for i in range(1, 9)}
    cache = VectorCache.open(tmp_path / "cache.sqlite")
    embedder = FakeStuckOnNewTexts("compute_changed_0")
    try:
        first = write_files(tmp_path / "repo", {"pkg/mod0.py": module_text(0), **same})
        async with Indexer(
            first, tmp_path / "state-repo", FakeEmbedder(), FakeSymbolSource(), vector_cache=cache, model_id=MODEL
        ) as ix:
            await ix.index_all()
        changed = module_text(0).replace("compute_value_0", "compute_changed_0")
        second = write_files(tmp_path / "wt", {"pkg/mod0.py": changed, **same})
        # One embedding call at a time: the one stuck on the changed file holds the model.
        config = IndexConfig(embed_concurrency=1)
        async with Indexer(
            second,
            tmp_path / "state-wt",
            embedder,
            FakeSymbolSource(),
            config=config,
            vector_cache=cache,
            model_id=MODEL,
        ) as ix:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ix.index_all)
                await anyio.to_thread.run_sync(embedder.stuck.wait, 30)
                # A deadlock guard, not a timing expectation: before files went from their preparer
                # to the writer, they waited behind the stuck call, and this never became true.
                with anyio.fail_after(30):
                    while _paths(ix, "compute_value_8") != {"pkg/mod8.py"}:
                        await anyio.sleep(0.02)
                assert _paths(ix, "compute_changed_0") == set(), "the changed file waits for the model"
                embedder.release.set()
            assert _paths(ix, "compute_changed_0") == {"pkg/mod0.py"}
            assert ix.status().files == 9 and ix.status().vectors == ix.status().chunks
            # The model embedded the changed file's texts only: the rest came from the cache.
            assert embedder.texts and all("pkg/mod0.py" in t for t in embedder.texts)
    finally:
        embedder.release.set()
        cache.close()
