"""pyright: configuration sections and analysis progress."""

from __future__ import annotations

from typing import Any

from lensmux.adapters.base import Adapter


class PyrightAdapter(Adapter):
    """pyright pulls `python`, `python.analysis` and `pyright` sections and has no ready signal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._analysing: set[Any] = set()

    def configuration(self, items: list[dict[str, Any]]) -> list[Any]:
        """Answer every section; pyright treats null as "use defaults" only for some."""
        answers = super().configuration(items)
        # pyright reads `python.analysis` as an object; null there makes it log
        # errors on every pull, so an unconfigured section is an empty table.
        return [
            {} if ans is None and item.get("section") in ("python", "python.analysis", "pyright") else ans
            for ans, item in zip(answers, items, strict=True)
        ]

    def indexing(self) -> bool:
        """True while pyright reports analysis progress."""
        return bool(self._analysing)

    def observe_progress(self, token: Any, value: dict[str, Any]) -> None:
        """pyright reports workspace analysis as server-initiated progress."""
        kind = value.get("kind")
        if kind == "begin":
            self._analysing.add(token)
        elif kind == "end":
            self._analysing.discard(token)
