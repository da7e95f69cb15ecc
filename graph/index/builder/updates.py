"""Single-file updates under way, numbered so a search can wait for those begun before it.

An edit, a save or a file event is known to the daemon before its re-index commits:
the edit waits for typing to pause, the server is asked for the file's symbols, the
new chunks are embedded. A search that arrives in between would answer from the old
text. Each update holds a ticket from the moment the daemon knows of it until its
commit (or failure), and `wait_begun_before` lets a search wait, within a bound, for
the tickets issued before it: the search reads the writes it follows.

Updates of one file also run one at a time (`alone`): a save reaches the index as an
edit, a didSave and a file event at once; run together, each re-read the file and the
server, and each commit dropped the vectors the next one meant to reuse, so it embedded
the whole file again. In turn, the later ones find the text already indexed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio


class UpdateTickets:
    """The open tickets of one root's single-file updates."""

    def __init__(self) -> None:
        self._issued = 0
        self._open: dict[int, str] = {}
        self._ended = anyio.Event()
        # Only for files with an update running or waiting: dropped by the last one.
        self._locks: dict[str, anyio.Lock] = {}

    def begin(self, rel: str) -> int:
        """A new update of `rel` is known; its ticket."""
        self._issued += 1
        self._open[self._issued] = rel
        return self._issued

    def end(self, ticket: int) -> None:
        """The update is committed or given up; idempotent."""
        if self._open.pop(ticket, None) is not None:
            self._ended.set()
            self._ended = anyio.Event()

    @contextmanager
    def running(self, rel: str) -> Iterator[None]:
        """Hold a ticket for the duration of the block."""
        ticket = self.begin(rel)
        try:
            yield
        finally:
            self.end(ticket)

    @asynccontextmanager
    async def alone(self, rel: str) -> AsyncIterator[None]:
        """Hold a ticket for the block, which runs after every other `alone` block of `rel` begun before it."""
        lock = self._locks.setdefault(rel, anyio.Lock())
        try:
            with self.running(rel):
                async with lock:
                    yield
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._locks.pop(rel, None)

    def open_before(self, mark: int) -> list[str]:
        """Files with an update begun at or before `mark` and not ended, sorted."""
        return sorted({rel for ticket, rel in self._open.items() if ticket <= mark})

    async def wait_begun_before(self, timeout: float) -> list[str]:
        """Wait up to `timeout` s for the updates begun so far; the files still open after it."""
        mark = self._issued
        with anyio.move_on_after(timeout):
            while self.open_before(mark):
                await self._ended.wait()
        return self.open_before(mark)
