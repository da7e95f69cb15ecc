"""Waiting for a server's settled diagnostics of a document, for the diagnostics tool.

The multiplexer keeps the last publish per document (mux/diagnostics/diagnostics.py); a
tool asking right after opening a file waits here until the report for that
text has arrived and settled.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from lensmux.daemon.mux.instance import Instance


def latest(instance: Instance, uri: str) -> list[Any] | None:
    """The last report for `uri`, settled or not."""
    entry = instance.diagnostics.latest.get(uri)
    return entry.diagnostics if entry is not None else None


async def wait(instance: Instance, uri: str, version: int | None, settle: float = 1.0) -> list[Any]:
    """The report for `uri` about `version` (or any, if the server sends none), once it has settled.

    Servers often publish twice after an open (a quick empty report, then the
    analysis): a report younger than `settle` seconds is followed by the next
    one while it comes within `settle`, and while the adapter says the server
    is still busy.
    """
    store = instance.diagnostics
    while True:
        entry = store.latest.get(uri)
        changed = store.changed
        if entry is not None:
            current = entry.version is None or version is None or entry.version >= version
            if current and time.monotonic() - entry.at >= settle and not instance.adapter.indexing():
                return entry.diagnostics
            if current:
                with anyio.move_on_after(max(settle - (time.monotonic() - entry.at), 0.05)):
                    await changed.wait()
                continue
        await changed.wait()
