"""Diagnostics a push client is owed, fetched from a server that holds its analysis back for others.

pyright analyses open documents (and publishes their diagnostics) only once 250 ms
have passed since the last change or request of any client. Alone with one editor
that is a pause in that editor's typing; shared, another editor typing without
pause holds back everyone's diagnostics. pyright answers `textDocument/diagnostic`
at once, analysing then (adapter: `answers_pulls_while_pushing`), so when a
document's current version has gone unpublished for `NUDGE_AFTER` seconds since
its last change, the daemon asks for its diagnostics and publishes the answer as
the server would have. A document its own editor keeps changing is never due: each
change starts its wait again, as the server alone would wait for that editor.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio

from lensmux.daemon.mux.diagnostics import diagnostics
from lensmux.daemon.mux.errors import InstanceError
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)

# Seconds a document's current text may go unpublished before the daemon asks: well past
# the server's own 250 ms and its analysis of one file.
NUDGE_AFTER = 1.5


def expect(instance: Instance, uri: str, version: int) -> None:
    """The server was sent version `version` of `uri`: it owes a publish for it."""
    if not instance.adapter.answers_pulls_while_pushing:
        return
    store = instance.diagnostics
    store.awaited[uri] = (version, time.monotonic())
    store.awaited_added.set()


def _take_due(instance: Instance, now: float) -> tuple[list[tuple[str, int]], float | None]:
    """The (uri, version) pairs due now, and seconds until the next one (None: nothing awaited)."""
    store = instance.diagnostics
    due: list[tuple[str, int]] = []
    soonest: float | None = None
    for uri, (version, since) in list(store.awaited.items()):
        wait = since + NUDGE_AFTER - now
        if wait > 0:
            soonest = wait if soonest is None else min(soonest, wait)
            continue
        del store.awaited[uri]
        if _owed(instance, uri, version):
            due.append((uri, version))
    return due, soonest


def _owed(instance: Instance, uri: str, version: int) -> bool:
    doc = instance.documents.get(uri)
    if doc is None or doc.version != version:
        return False  # closed, or changed again (that change is awaited in its turn)
    latest = instance.diagnostics.latest.get(uri)
    if latest is not None and latest.version is not None and latest.version >= version:
        return False
    return any(
        (client := instance.clients.get(cid)) is not None and not diagnostics.pulls(instance, client)
        for cid in doc.holders
    )


async def nudge_task(instance: Instance) -> None:
    """Ask for the diagnostics of documents whose current text the server has not published in time."""
    if not instance.adapter.answers_pulls_while_pushing:
        return
    async with anyio.create_task_group() as group:
        while True:
            instance.diagnostics.awaited_added = anyio.Event()
            due, wait = _take_due(instance, time.monotonic())
            for uri, version in due:
                group.start_soon(_fetch, instance, uri, version)
            if wait is None:
                await instance.diagnostics.awaited_added.wait()
            else:
                with anyio.move_on_after(wait):
                    await instance.diagnostics.awaited_added.wait()


async def _fetch(instance: Instance, uri: str, version: int) -> None:
    method = "textDocument/diagnostic"
    try:
        report: Any = await instance.request(method, {"textDocument": {"uri": uri}})
    except InstanceError as exc:
        log.debug("%s: diagnostics of %s v%d not fetched: %s", instance.name, uri, version, exc)
        return
    items = report.get("items") if isinstance(report, dict) and report.get("kind") == "full" else None
    if not isinstance(items, list) or not _owed(instance, uri, version):
        return
    log.debug(
        "%s: %s v%d unpublished after %gs; fetched %d diagnostics", instance.name, uri, version, NUDGE_AFTER, len(items)
    )
    diagnostics.on_publish(instance, ev.encode_value({"uri": uri, "version": version, "diagnostics": items}))
