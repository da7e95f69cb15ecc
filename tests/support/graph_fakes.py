"""In-process stand-ins for the index and search tests: a hashing embedder and an ast symbol source.

Both are deterministic and need no model or language server, so the graph tests
can count calls and inject failures; tests/graph/index/index_fakes.py and
tests/graph/search/search_fakes.py configure them for their own tests. Real
servers and the real model are exercised by the tests that say so.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.lowlevel
import numpy
import numpy.typing as npt

from lensmux.graph.index.identifiers import split_identifier

DIM = 64
# LSP SymbolKind values the fakes report.
CLASS, METHOD, FUNCTION, VARIABLE = 5, 6, 12, 13


def lsp_range(sl: int, sc: int, el: int, ec: int) -> dict[str, Any]:
    """An LSP Range from 0-based start and end (line, character)."""
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


class HashingEmbedder:
    """Hashed bag of words (identifier parts included) in DIM dims, L2-normalised; tokens are words."""

    dim = DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        """One unit vector per text; a text without words gets the first axis."""
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

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        """The vector of one query text."""
        vector: npt.NDArray[numpy.float32] = self.embed([text])[0]
        return vector

    def count_tokens(self, text: str) -> int:
        """Whitespace-separated words."""
        return len(text.split())


class AstSymbolSource:
    """documentSymbol for Python from the ast module (hierarchical, or flat); None for other languages.

    `variables` adds module and class level assignments, as pyright reports them.
    Records every path asked; a file whose name is in `failing` raises instead.
    """

    def __init__(self, *, flat: bool = False, variables: bool = True) -> None:
        self.flat = flat
        self.variables = variables
        self.calls: list[Path] = []
        self.failing: set[str] = set()  # file names whose request raises

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        """The symbols of one file, as a language server would answer documentSymbol."""
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
        return _flatten(symbols, None) if self.flat else symbols

    def _symbol(self, node: ast.stmt, lines: list[str], in_class: bool) -> dict[str, Any] | None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
            kind = CLASS if isinstance(node, ast.ClassDef) else (METHOD if in_class else FUNCTION)
            col = lines[node.lineno - 1].find(name)
            children = [s for child in node.body if (s := self._symbol(child, lines, isinstance(node, ast.ClassDef)))]
        elif self.variables and isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name, kind, col, children = node.targets[0].id, VARIABLE, node.col_offset, []
        else:
            return None
        assert node.end_lineno is not None and node.end_col_offset is not None
        return {
            "name": name,
            "kind": kind,
            "range": lsp_range(node.lineno - 1, node.col_offset, node.end_lineno - 1, node.end_col_offset),
            "selectionRange": lsp_range(node.lineno - 1, col, node.lineno - 1, col + len(name)),
            "children": children,
        }


def _flatten(symbols: list[dict[str, Any]], container: str | None) -> list[dict[str, Any]]:
    """SymbolInformation[] (the flat form some servers answer) from DocumentSymbol[]."""
    out: list[dict[str, Any]] = []
    for s in symbols:
        location = {"uri": "file:///x.py", "range": s["range"]}
        item: dict[str, Any] = {"name": s["name"], "kind": s["kind"], "location": location}
        if container:
            item["containerName"] = container
        out.append(item)
        out.extend(_flatten(s["children"], s["name"]))
    return out
