"""The questions the clangd benchmarks ask: LSP methods, one query independent of the corpus copy, picks.

The latency benchmark (clangd_latency.py) and the load benchmark (load_sites.py)
ask the same kinds of question at symbol names of the brotli corpus; each
route or daemon has its own copy of the corpus, so a query names a file
relative to the root and becomes request params per copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from support.lspclient import path_uri

from bench.fetch_corpus import Corpus

HOVER = "textDocument/hover"
DEFINITION = "textDocument/definition"
REFERENCES = "textDocument/references"
SYMBOLS = "textDocument/documentSymbol"
POSITION_METHODS = (HOVER, DEFINITION, REFERENCES)
# Column headings in the reports.
SHORT = {HOVER: "hover", DEFINITION: "definition", REFERENCES: "references", SYMBOLS: "documentSymbol"}
REQUEST_TIMEOUT = 120.0


class Query(NamedTuple):
    """One question, independent of which copy of the corpus it is asked about."""

    method: str
    file: str
    line: int = 0
    character: int = 0

    def params(self, corpus: Corpus) -> dict[str, Any]:
        """The request params for one copy of the corpus."""
        doc = {"uri": path_uri(corpus.path(self.file))}
        if self.method == SYMBOLS:
            return {"textDocument": doc}
        params: dict[str, Any] = {"textDocument": doc, "position": {"line": self.line, "character": self.character}}
        if self.method == REFERENCES:
            params["context"] = {"includeDeclaration": True}
        return params


def spread(positions: Sequence[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """Up to `count` of the sorted `positions`, evenly spaced through the file (small and large symbols alike)."""
    step = max(len(positions) / count, 1.0)
    return sorted({positions[min(int(i * step), len(positions) - 1)] for i in range(count)})
