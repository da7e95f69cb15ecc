"""What the index needs from the embedding model and from the language servers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy
import numpy.typing as npt


class Embedder(Protocol):
    """Turns chunk texts into L2-normalised float32 vectors; CPU heavy, called off the loop."""

    @property
    def dim(self) -> int:
        """Width of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        """Return an array of shape [len(texts), dim]."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[numpy.float32]:
        """One query's vector (a model trained with a query prefix embeds queries unlike chunks)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Return how many model tokens the text costs."""
        ...


class SymbolSource(Protocol):
    """Answers textDocument/documentSymbol for one file."""

    async def document_symbols(self, path: Path, language_id: str, text: str) -> list[dict[str, Any]] | None:
        """Raw DocumentSymbol[] or SymbolInformation[], or None when no server covers it."""
        ...
