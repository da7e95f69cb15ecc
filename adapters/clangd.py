"""clangd: background-index readiness."""

from __future__ import annotations

from typing import Any

from lensmux.adapters.base import Adapter

# clangd names the progress of its background index with this fixed token.
BACKGROUND_INDEX_TOKEN = "backgroundIndexProgress"


class ClangdAdapter(Adapter):
    """clangd answers cross-file queries fully only after its background index ends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._background_index_running = False

    def indexing(self) -> bool:
        """True between the background index's `begin` and `end`."""
        return self._background_index_running

    def observe_progress(self, token: Any, value: dict[str, Any]) -> None:
        """Track the background index by its progress token."""
        if token != BACKGROUND_INDEX_TOKEN:
            return
        kind = value.get("kind")
        if kind == "begin":
            self._background_index_running = True
        elif kind == "end":
            self._background_index_running = False
