"""A full run writes what is ready instead of waiting for a full batch, so a slow server never idles the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from index_fakes import FakeEmbedder, FakeSymbolSource, module_text
from support.projects import write_files

from lensmux.graph.index import IndexConfig, Indexer

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
            assert _paths(ix, "compute_value_5") == set(), "the stalled files are not in yet"
            assert ix.status().vectors == ix.status().chunks, "what is written is searchable by meaning too"
            symbols.release.set()
        assert _paths(ix, "compute_value_5") == {"pkg/mod5.py"}
        assert ix.status().files == 12 and ix.status().vectors == ix.status().chunks
