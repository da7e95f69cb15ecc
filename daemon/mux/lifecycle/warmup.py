"""When a server's cross-file answers are complete enough to cache.

A server that has just started answers `textDocument/references` and its
kind from what it has discovered so far: pyright gives the locations in the
files it has already found, clangd what its index holds. Such an answer is
correct for that moment and goes to whoever asked, but it must never be
served from the cache afterwards. So a server counts as *warming* from every
start until it has shown it is done: its adapter says so (pyright logged the
end of its source-file enumeration, clangd finished a background index), or,
for servers that say nothing, no progress has been reported for a quiet
period. While warming, and while the adapter reports indexing, cross-file
answers are not stored; when either ends, the workspace generation is bumped
so that nothing computed before, not even a request still in flight, is
shared with a later asker. Where another client can postpone the server's discovery (pyright),
what would postpone or miss it waits until it is done (`discovery`, discovery.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lensmux.adapters.base import Adapter
from lensmux.daemon.mux.lifecycle.bind_walk import BindWalk, binds_files
from lensmux.daemon.mux.lifecycle.discovery import DiscoveryGate
from lensmux.daemon.mux.requests.cache import ResponseCache

log = logging.getLogger(__name__)


class Warmup:
    """Tracks whether one instance's server may still give incomplete cross-file answers."""

    def __init__(
        self,
        name: str,
        adapter: Adapter,
        cache: ResponseCache,
        quiet_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.adapter = adapter
        self.cache = cache
        self.quiet_s = quiet_s
        self._clock = clock
        self._warm = False
        self._was_indexing = False
        self._last_progress = clock()
        self.discovery = DiscoveryGate(name, adapter, clock=clock)
        # The files the daemon asks the server to parse and bind, once discovery ends (bind_walk.py).
        self.bind_walk = BindWalk(adapter.config.prebind and binds_files(adapter))

    def restart(self) -> None:
        """A new server process: it knows nothing yet, and nothing the old one said is kept."""
        self.adapter.reset()
        self._warm = False
        self._was_indexing = False
        self._last_progress = self._clock()
        self.cache.workspace_changed()
        self.discovery.begin()
        self.bind_walk.restart()

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """The server was told of workspace folders added and removed (URIs): it discovers the added ones.

        Nothing it answered before is shared, nor anything it answers before it is done.
        """
        self.adapter.folders_changed(added, removed)
        if added:
            self._warm = False
            self._last_progress = self._clock()
            self.discovery.begin()
            self.bind_walk.due()
        self.cache.workspace_changed()

    def saw_progress(self) -> None:
        """The server reported progress of its own: it is still busy."""
        self._last_progress = self._clock()

    @property
    def warming(self) -> bool:
        """Still before the server showed it knows the whole workspace (no state change)."""
        return not self._warm

    def busy(self) -> bool:
        """True while cross-file answers must not be cached; bumps the generation when that ends."""
        indexing = self.adapter.indexing()
        if not self._warm:
            signal = self.adapter.warm()
            done = signal if signal is not None else self._clock() - self._last_progress >= self.quiet_s
            if done and not indexing:
                self._warm = True
                self.cache.boundary()
                log.info("%s: workspace discovered; cross-file answers are cached from now on", self.name)
        elif self._was_indexing and not indexing:
            self.cache.boundary()
            log.info("%s: indexing ended; cross-file answers computed before it are no longer shared", self.name)
        self._was_indexing = indexing
        return not self._warm or indexing
