"""One slot per server instance for the requests the daemon asks in quiet moments on its own.

Two kinds of work ask a server what no client asked: the call-graph learner
(daemon/search/graph_learning.py) and the bind walk (daemon/mux/lifecycle/bind_walk.py). Each
sends one request at a time, but each looked only at its own: in one quiet moment both could
start, and a client's question then waited behind one request of each, where a server of its
own would have made it wait behind neither. Both take this slot around each request, so at
most one such request is in flight at the server; whichever asked first goes, and the other
waits for it (the walk then for quiet again, the learner's round is stopped by a client that
speaks meanwhile). The daemon's requests on a user's behalf (a search, an index run, an
assistant tool) never take it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from lensmux.daemon.mux.requests.pending import PendingTable

log = logging.getLogger(__name__)


# How often a learning request that holds the slot looks whether an abandoned one has finished.
_DETACHED_POLL_S = 0.02


class OwnRequestSlot:
    """At most one background request of the daemon's own (learning or bind walk) per instance."""

    def __init__(self, name: str) -> None:
        self._name = name
        # Created on first use: instances are built before any event loop runs in unit tests.
        self._lock: anyio.Lock | None = None

    def _the_lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    @asynccontextmanager
    async def held(self, pending: PendingTable) -> AsyncIterator[None]:
        """Wait for the slot and hold it for one request (the learner's).

        A learning request its round gave up on (a client spoke) is left to finish for the cache
        after the slot is let go: the next one also waits until no such request is in flight, and
        until no client's is (one that came while it waited for a walk's file: its round's watch
        stops the round within a poll, and the request must not go out before that).
        """
        async with self._the_lock():
            while pending.clients_waiting() or any(entry.background for entry in pending.entries()):  # noqa: ASYNC110
                await anyio.sleep(_DETACHED_POLL_S)
            yield

    def try_take(self) -> bool:
        """Take the slot if it is free, without waiting (the walk, which then looks at quiet again)."""
        try:
            self._the_lock().acquire_nowait()
        except anyio.WouldBlock:
            return False
        return True

    def give_back(self) -> None:
        """Release a slot taken by `try_take`."""
        self._the_lock().release()

    def sent(self, pending: PendingTable, method: str) -> None:
        """A background request was just registered: say how many are in flight at the server now (tests read it)."""
        if not log.isEnabledFor(logging.DEBUG):
            return  # the count is for the log line alone: no pass over the table at other levels
        count = sum(1 for entry in pending.entries() if entry.background)
        log.debug("%s: own background request %s sent; %d in flight", self._name, method, count)
