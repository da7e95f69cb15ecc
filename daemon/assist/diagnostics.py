"""The latest diagnostics each server published, per document, for the diagnostics tool.

Servers push diagnostics (clangd has no pull model); the daemon routes them to
editors and keeps the last report here, so a tool can answer from what the
server said about the text it has now.
"""

from __future__ import annotations

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
        self._reports: dict[tuple[int, str], _Report] = {}
        self._changed = anyio.Event()

    def watch(self, instance: Instance) -> None:
        """Record what `instance` publishes from now on."""
        instance.on_diagnostics.append(lambda params: self._record(instance, params))

    def _record(self, instance: Instance, params: msgspec.Raw) -> None:
        try:
            report = _decoder.decode(params)
        except msgspec.DecodeError:
            return
        self._reports[(id(instance), report.uri)] = report
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, instance: Instance, uri: str, version: int | None) -> list[dict[str, Any]]:
        """The report for `uri`, waiting for one about `version` (or any, if the server sends none)."""
        while True:
            report = self._reports.get((id(instance), uri))
            if report is not None and (report.version is None or version is None or report.version >= version):
                return report.diagnostics
            await self._changed.wait()
