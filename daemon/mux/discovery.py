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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

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
