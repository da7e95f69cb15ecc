"""Fakes for the index tests: a hashing embedder and an ast-backed symbol source.

Both are deterministic and need no model or language server, so the tests can count
calls and inject failures. Real servers are exercised in test_index_real_servers.py.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import numpy
import numpy.typing as npt

from lensmux.graph.index import IndexConfig, Indexer
from lensmux.graph.index.identifiers import split_identifier

DIM = 64


class FakeEmbedder:
    """Hashed bag of words (identifier parts included) in 64 dims, L2-normalised."""

    dim = DIM

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
        out = numpy.zeros((len(texts), DIM), dtype=numpy.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text):
                for part in [word.lower(), *split_identifier(word)]:
                    bucket = int.from_bytes(hashlib.blake2b(part.encode(), digest_size=4).digest(), "little")
                    out[row, bucket % DIM] += 1.0
            norm = float(numpy.linalg.norm(out[row]))
            if norm == 0.0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _pos(line: int, char: int) -> dict[str, int]:
    return {"line": line, "character": char}


def _rng(sl: int, sc: int, el: int, ec: int) -> dict[str, Any]:
    return {"start": _pos(sl, sc), "end": _pos(el, ec)}


class FakeSymbolSource:
    """documentSymbol for Python from the ast module (hierarchical or flat); None for the rest."""

    def __init__(self, *, flat: bool = False) -> None:
        self.flat = flat
        self.calls: list[Path] = []
        self.failing: set[str] = set()  # file names whose request raises

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        self.calls.append(path)
        await anyio.lowlevel.checkpoint()
        if path.name in self.failing:
            raise ConnectionError("injected language server failure")
        if language_id != "python":
            return None
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return []
        lines = text.split("\n")
        symbols = [s for node in tree.body if (s := self._symbol(node, lines, False)) is not None]
        return self._flatten(symbols, None) if self.flat else symbols

    def _symbol(self, node: ast.stmt, lines: list[str], in_class: bool) -> dict[str, Any] | None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
            kind = 5 if isinstance(node, ast.ClassDef) else (6 if in_class else 12)
            col = lines[node.lineno - 1].find(name)
            children = [s for child in node.body if (s := self._symbol(child, lines, isinstance(node, ast.ClassDef)))]
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name, kind, col, children = node.targets[0].id, 13, node.col_offset, []
        else:
            return None
        assert node.end_lineno is not None and node.end_col_offset is not None
        return {
            "name": name,
            "kind": kind,
            "range": _rng(node.lineno - 1, node.col_offset, node.end_lineno - 1, node.end_col_offset),
            "selectionRange": _rng(node.lineno - 1, col, node.lineno - 1, col + len(name)),
            "children": children,
        }

    def _flatten(self, symbols: list[dict[str, Any]], container: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for s in symbols:
            item: dict[str, Any] = {
                "name": s["name"],
                "kind": s["kind"],
                "location": {"uri": "file:///x.py", "range": s["range"]},
            }
            if container:
                item["containerName"] = container
            out.append(item)
            out.extend(self._flatten(s["children"], s["name"]))
        return out


def write_files(root: Path, files: dict[str, str]) -> None:
    """Create files (and their directories) under root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


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
    return IndexConfig(commit_files=8, commit_chunks=32, embed_batch=16, save_interval_s=save_interval_s)


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
