"""Fakes for the index tests: the shared hashing embedder and ast symbol source, with failure switches.

Both are deterministic and need no model or language server (tests/support/graph_fakes.py),
so the tests can count calls and inject failures. Real servers are exercised in
builder/test_index_real_servers.py.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy
import numpy.typing as npt
from support.graph_fakes import DIM, AstSymbolSource, HashingEmbedder

from lensmux.graph.index import IndexConfig, Indexer

__all__ = ["DIM", "FakeEmbedder", "FakeSymbolSource", "crash_worker_config", "module_text", "run_indexer_main"]


class FakeEmbedder(HashingEmbedder):
    """The hashing embedder, counting its calls and the texts it saw; `fail_next` makes one call raise."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.fail_next = False
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        with self._lock:
            self.calls += 1
            self.texts.extend(texts)
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("injected embedder failure")
        return super().embed(texts)


class FakeSymbolSource(AstSymbolSource):
    """documentSymbol for Python from the ast, variables included (hierarchical, or `flat`)."""


def module_text(i: int) -> str:
    """A small, distinct Python module used to build larger trees."""
    return (
        f'"""Module number {i}."""\n'
        "import os\n\n"
        f"LIMIT_{i} = {i}\n\n\n"
        f"def compute_value_{i}(x: int) -> int:\n"
        f"    return x * {i} + LIMIT_{i}\n\n\n"
        f"class Worker{i}:\n"
        f'    """Worker {i} keeps a counter."""\n\n'
        "    def __init__(self) -> None:\n"
        "        self.count = 0\n\n"
        f"    def run_task_{i}(self, path: str) -> str:\n"
        "        self.count += 1\n"
        "        return os.path.basename(path)\n"
    )


def crash_worker_config(save_interval_s: float = 0.0) -> IndexConfig:
    """Small batches and frequent saves, so kills land in every phase of a batch."""
    return IndexConfig(
        commit_files=8, commit_chunks=32, embed_batch=16, save_interval_s=save_interval_s, save_growth=0.0
    )


def run_indexer_main(root: str, store_dir: str, save_interval_s: float = 0.0) -> None:
    """Entry point of the subprocess that the crash test SIGKILLs at random moments."""

    def report(snapshot: object) -> None:
        print(json.dumps({"event": "batch"}), flush=True)

    async def main() -> None:
        config = crash_worker_config(save_interval_s)
        indexer = Indexer(Path(root), Path(store_dir), FakeEmbedder(), FakeSymbolSource(), config=config)
        async with indexer:
            await indexer.index_all(report)
        print(json.dumps({"event": "done"}), flush=True)

    anyio.run(main)
    sys.exit(0)
