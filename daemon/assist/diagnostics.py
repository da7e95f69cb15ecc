"""The latest diagnostics each server published, per document, for the diagnostics tool.

Servers push diagnostics (clangd has no pull model); the daemon routes them to
editors and keeps the last report here, so a tool can answer from what the
server said about the text it has now.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import msgspec

from lensmux.daemon.mux.instance import Instance


class _Report(msgspec.Struct):
    uri: str
    diagnostics: list[dict[str, Any]] = []
    version: int | None = None


_decoder = msgspec.json.Decoder(_Report)


class DiagnosticsStore:
    """Last report per (instance, URI), and waiters for the next one."""

    def __init__(self) -> None:
        self._reports: dict[tuple[int, str], tuple[float, _Report]] = {}
        self._changed = anyio.Event()

    def watch(self, instance: Instance) -> None:
        """Record what `instance` publishes from now on."""
        instance.on_diagnostics.append(lambda params: self._record(instance, params))

    def _record(self, instance: Instance, params: msgspec.Raw) -> None:
        try:
            report = _decoder.decode(params)
        except msgspec.DecodeError:
            return
        self._reports[(id(instance), report.uri)] = (time.monotonic(), report)
        self._changed.set()
        self._changed = anyio.Event()

    def latest(self, instance: Instance, uri: str) -> list[dict[str, Any]] | None:
        """The last report for `uri`, settled or not."""
        entry = self._reports.get((id(instance), uri))
        return entry[1].diagnostics if entry is not None else None

    async def wait(
        self, instance: Instance, uri: str, version: int | None, settle: float = 1.0
    ) -> list[dict[str, Any]]:
        """The report for `uri` about `version` (or any, if the server sends none), once it has settled.

        Servers often publish twice after an open (a quick empty report, then the
        analysis): a report younger than `settle` seconds is followed by the next
        one while it comes within `settle`, and while the adapter says the server
        is still busy.
        """
        key = (id(instance), uri)
        while True:
            entry = self._reports.get(key)
            if entry is not None:
                at, report = entry
                current = report.version is None or version is None or report.version >= version
                if current and time.monotonic() - at >= settle and not instance.adapter.indexing():
                    return report.diagnostics
                if current:
                    with anyio.move_on_after(max(settle - (time.monotonic() - at), 0.05)):
                        await self._changed.wait()
                    continue
            await self._changed.wait()
