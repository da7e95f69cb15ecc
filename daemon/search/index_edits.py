"""Editors' unsaved text indexed in bursts: once the typing pauses, or at once for a waiting search.

An edit holds an update ticket (graph/index/builder/updates.py) in every root containing the
document from the moment it arrives, so a search that settles a root waits for it too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from lensmux.daemon.search.root_index import RootIndex

# An edit is indexed once edits pause this long, or at the latest this long after the
# first unindexed one: a change must be searchable within a second while someone types.
EDIT_QUIET_S = 0.2
EDIT_MAX_DELAY_S = 0.5

# The daemon's text of a document when called (None once it is gone).
TextSource = Callable[[], str | None]
# Re-indexes one file of a root from the given text (IndexService._reindex).
Reindex = Callable[[RootIndex, Path, str | None], Awaitable[None]]


class PendingEdits:
    """Edited documents waiting for the typing to pause: the daemon's text of each, and its tickets."""

    def __init__(self, containing: Callable[[Path], list[RootIndex]], reindex: Reindex) -> None:
        self._containing = containing
        self._reindex = reindex
        self._edits: dict[Path, tuple[TextSource, list[tuple[RootIndex, int]]]] = {}
        self._edited = anyio.Event()
        # A search waits for the pending edits: index them now, not after the pause.
        self._hurry = False

    def add(self, path: Path, text: TextSource) -> None:
        """A client edited the document at `path`: index the daemon's text of it soon, if a root holds it."""
        entries = self._containing(path)
        if not entries:
            return
        pending = self._edits.get(path)
        tickets = pending[1] if pending else [(e, e.indexer.updates.begin(e.relative(path))) for e in entries]
        self._edits[path] = (text, tickets)
        self._edited.set()

    def hurry(self, root: Path) -> None:
        """A search waits for `root`: index its pending edits now."""
        if any(path.is_relative_to(root) for path in self._edits):
            self._hurry = True
            self._edited.set()

    async def run_task(self) -> None:
        """Index edited documents in bursts: after a pause in the edits, or EDIT_MAX_DELAY_S at most."""
        while True:
            await self._edited.wait()
            deadline = anyio.current_time() + EDIT_MAX_DELAY_S
            while not self._hurry:
                self._edited = anyio.Event()
                with anyio.move_on_after(min(EDIT_QUIET_S, deadline - anyio.current_time())) as quiet:
                    await self._edited.wait()
                if quiet.cancelled_caught or anyio.current_time() >= deadline:
                    break
            self._hurry, self._edited = False, anyio.Event()
            edits, self._edits = self._edits, {}
            for path in sorted(edits):
                text, tickets = edits[path]
                current = text()
                try:
                    for entry in self._containing(path):
                        await self._reindex(entry, path, current)
                finally:
                    for entry, ticket in tickets:
                        entry.indexer.updates.end(ticket)
