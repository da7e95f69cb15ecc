"""Holding what would postpone, or miss, a server's discovery of its workspace.

pyright finds the source files of its workspace (the root at its start, each folder added later)
only in its analysis timer, which fires 250 ms after the last document change or definition,
symbols or code-action request of any client, and which each of those starts again. Until it
has, it answers Find References, renames, workspace symbols, incoming calls and auto-import
completions from the open files and what they import. A pyright of its own finds the files right
after it starts (its editor has not typed yet) or when its editor pauses; a shared one next to an
editor that types and asks without a 250 ms pause does not find them at all, and every other
client's cross-file answers lack most of the workspace.

So while the adapter says the server has workspace files left to discover (`warm()` is False),
the messages the adapter lists in `waits_for_discovery` wait here, each client's in its own order
(the reader that routes them waits, and the client's later messages behind it): those that would
postpone discovery, so that the server gets the pause it waits for, and those whose answers
depend on it, so that they cover the whole workspace. Everything else goes on. The server
discovers within milliseconds of that pause (pyright logs "Found N source files"); one that has
not said so after `limit_s` is waited for no longer, until it starts discovering again.

Held messages go on in the order they arrived, across clients and the daemon's own requests
(`in_order`): each takes a ticket, and a message's routing, up to its write to the server, is
done before the next ticket's starts. Released all at once, they would race through their
awaits (the document lock, the pipe), and an assistant's question asked after an editor's
held edit could reach the server before the edit and be answered about the old text.
Messages that arrive while earlier ones are still going on queue behind them the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from lensmux.adapters.base import Adapter

log = logging.getLogger(__name__)

# pyright's own warning about a slow enumeration comes after 10 s; later than that, a held
# editor waits longer than the answers it would gain are worth.
HOLD_LIMIT_S = 10.0


class DiscoveryGate:
    """Holds one instance's discovery-sensitive messages while its server discovers its workspace."""

    def __init__(
        self,
        name: str,
        adapter: Adapter,
        limit_s: float = HOLD_LIMIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.adapter = adapter
        self.limit_s = limit_s
        self._clock = clock
        # When this discovery first held a message (None: it has held none).
        self._since: float | None = None
        self._gave_up = False
        self._held = 0
        # Created on first wait: the gate is built before any event loop runs in unit tests.
        self._changed: anyio.Event | None = None
        # Tickets of `in_order`: issued so far, the one whose turn it is, and those given up
        # (their asker went away before its turn), skipped when the turn reaches them.
        self._issued = 0
        self._turn = 0
        self._abandoned: set[int] = set()

    def begin(self) -> None:
        """The server starts discovering anew (its start, a folder added): the limit counts afresh."""
        self._since = None
        self._gave_up = False
        self._held = 0
        self._wake()

    def holds(self, method: str) -> bool:
        """Whether a message of `method` must wait now."""
        if method not in self.adapter.waits_for_discovery or self._gave_up or self.adapter.warm() is not False:
            return False
        now = self._clock()
        if self._since is None:
            self._since = now
            log.info("%s: workspace not discovered yet; %s and the like wait until it is", self.name, method)
        if now - self._since >= self.limit_s:
            self._gave_up = True
            log.warning(
                "%s: no end of workspace discovery after %gs; %d held messages go on, answers may be partial",
                self.name,
                self.limit_s,
                self._held,
            )
            self._wake()
            return False
        return True

    def queues(self, method: str, *, own: bool = False) -> bool:
        """Whether a message must go through `in_order`: it is held, or held ones are still going on.

        A client's message of a method the adapter does not list never queues ("everything
        else goes on"); the daemon's own requests (`own`) queue behind held messages whatever
        their method, since they ask about what clients' held edits change.
        """
        if self.holds(method):
            return True
        return self._issued > self._turn and (own or method in self.adapter.waits_for_discovery)

    @asynccontextmanager
    async def in_order(self, method: str, *, own: bool = False) -> AsyncIterator[None]:
        """Run the block (a message's routing, up to its write) once it may go, in arrival order."""
        if not self.queues(method, own=own):
            yield
            return
        ticket = self._issued
        self._issued += 1
        try:
            await self.wait(method)
            while self._turn != ticket:
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()
            yield
        finally:
            if self._turn == ticket:
                self._advance()
            else:
                self._abandoned.add(ticket)

    def _advance(self) -> None:
        self._turn += 1
        while self._turn in self._abandoned:
            self._abandoned.discard(self._turn)
            self._turn += 1
        self._wake()

    async def wait(self, method: str) -> None:
        """Return once a message of `method` may go to the server."""
        counted = False
        while self.holds(method):
            if not counted:
                self._held += 1
                counted = True
            assert self._since is not None
            if self._changed is None:
                self._changed = anyio.Event()
            with anyio.move_on_after(self._since + self.limit_s - self._clock()):
                await self._changed.wait()

    def observe(self) -> None:
        """The server said something: release what waits if it has now discovered its workspace."""
        if self._since is None or self.adapter.warm() is False:
            return
        log.info(
            "%s: workspace discovered; %d held messages go on after %.3fs",
            self.name,
            self._held,
            self._clock() - self._since,
        )
        self._since = None
        self._gave_up = False
        self._held = 0
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
