"""What a full run indexes first: the files where the user is (issue 23).

A search answers while its root is being indexed, from what is committed so far, so a run
takes first the files a user is most likely to ask about: those open in an editor, those
under the directory a search ran from, those git says changed lately (uncommitted first,
then those of the last commits), then the rest in walk order. A search that arrives during
the run re-ranks what is left (`RunOrder.refocus`), in memory, without walking the tree
again. Files keep their batches: the pipeline takes them in this order and writes what is
ready, as before, except that a file outside the focus is not prepared while focused ones
are on their way (`RunOrder.preparing`): the language server's first answers are slow
(pyright starts, or a file is large), and meanwhile the files behind would fill the stages
ahead, be embedded first, and share the cores with the focused ones.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import subprocess
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from lensmux.graph.index.builder.files.walk import WalkedFile

log = logging.getLogger(__name__)
T = TypeVar("T")

# Tiers, most urgent first.
OPEN, HERE, RECENT, REST = range(4)
# git is asked once per full run, bounded in commits, paths and time.
GIT_COMMITS = 50
GIT_MAX_PATHS = 2000
GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Focus:
    """Where the user is, as root-relative POSIX paths: files open in editors, directories searched from."""

    open_files: frozenset[str] = frozenset()
    directories: frozenset[str] = frozenset()

    def tier(self, rel: str) -> int | None:
        """OPEN or HERE for a file this focus covers, else None."""
        if rel in self.open_files:
            return OPEN
        if any(rel.startswith(d + "/") for d in self.directories if d):
            return HERE
        return None


def _git(root: Path, *argv: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *argv], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("git %s in %s: %s", argv[0], root, exc)
        return None
    return done.stdout if done.returncode == 0 else None


def git_recent(root: Path) -> list[str]:
    """Root-relative files git says changed lately, most recent first; [] when root is not in a git checkout."""
    prefix = _git(root, "rev-parse", "--show-prefix")
    if prefix is None:
        return []
    prefix = prefix.strip()
    found: list[str] = []
    status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".") or ""
    fields = iter(status.split("\0"))
    for entry in fields:
        if len(entry) > 3:
            found.append(entry[3:])
            if entry[0] in "RC":
                next(fields, None)  # the path it was renamed or copied from
    history = _git(root, "log", f"-n{GIT_COMMITS}", "--name-only", "--format=", "-z", "--", ".") or ""
    found += history.split("\0")
    paths = dict.fromkeys(p[len(prefix) :] for p in found if p.startswith(prefix) and len(p) > len(prefix))
    return list(paths)[:GIT_MAX_PATHS]


class RunOrder:
    """The files of the current full run, handed out most urgent first (iterate to take them).

    Also counts the focused files (open or under a searched directory) not yet written,
    so a caller can wait for where the user is rather than for the whole run.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[int, WalkedFile]] = {}
        self._recent: dict[str, int] = {}
        self._heap: list[tuple[int, int, int, int, str]] = []
        self._best: dict[str, tuple[int, int, int, int, str]] = {}
        self._generation = 0
        self._focus: list[Focus] = []
        self._unwritten: set[str] = set()
        self._in_flight: set[str] = set()
        # Focused files taken and not yet written, and an event set whenever there are none.
        self._focus_in_flight: set[str] = set()
        self._focus_written = anyio.Event()
        self.running = False

    def start(self, todo: Sequence[WalkedFile], recent: Sequence[str]) -> Iterator[WalkedFile]:
        """Begin a run over todo (in walk order) with git's recent files; the files, most urgent first."""
        self._files = {w.rel: (seq, w) for seq, w in enumerate(todo)}
        self._recent = {rel: rank for rank, rel in enumerate(recent)}
        self._heap, self._best, self._unwritten, self._in_flight = [], {}, set(), set()
        self._focus_in_flight = set()
        self.running = True
        for rel in self._files:
            self._push(rel, RECENT if rel in self._recent else REST, 0)
        for focus in self._focus:
            self._apply(focus)
        return self._take()

    def preparing(
        self, prepare: Callable[[WalkedFile], Awaitable[T]], hold: FaultHold | None = None
    ) -> Callable[[WalkedFile], Coroutine[Any, Any, T]]:
        """`prepare` for the run's files: one outside the focus waits while focused ones taken are not written.

        Only focused files already taken are waited for: they go on through the stages
        without the waiting preparers, so the wait always ends (focused files not yet
        taken are taken by the next free preparer, being first in the order).
        """
        started = itertools.count(1)

        async def run(file: WalkedFile) -> T:
            if hold is not None:
                await hold.wait_turn(next(started))
            while self._focus_in_flight and file.rel not in self._focus_in_flight:
                await self._focus_written.wait()
            return await prepare(file)

        return run

    def refocus(self, focus: Focus) -> None:
        """Put focus's files that are left ahead of the others (the newest focus first within a tier)."""
        if self._focus and self._focus[-1] == focus:
            return  # the same search again: its files are ahead already
        self._focus.append(focus)
        if self.running:
            self._apply(focus)

    def written(self, rels: Iterable[str]) -> None:
        """These files of the run are written (or found unreadable): no longer awaited."""
        done = set(rels)
        self._unwritten -= done
        self._in_flight -= done
        self._focus_in_flight -= done
        if not self._focus_in_flight:
            self._focus_written.set()

    def finish(self) -> None:
        """The run is over; the next one starts from no focus."""
        self._files, self._heap, self._best, self._focus = {}, [], {}, []
        self._unwritten, self._in_flight, self._focus_in_flight = set(), set(), set()
        self._focus_written.set()
        self.running = False

    @property
    def focus_left(self) -> int | None:
        """Focused files of the run not yet written; None between runs and before the run knows its files."""
        return len(self._unwritten) if self.running else None

    def _apply(self, focus: Focus) -> None:
        self._generation += 1
        # Files taken already are awaited too, if the focus covers them; one whose preparer
        # waits for the focus goes on (the waiters wake and look again).
        for rel in self._in_flight:
            if focus.tier(rel) is not None:
                self._unwritten.add(rel)
                self._focus_taken(rel)
        self._focus_written.set()
        if self._focus_in_flight:
            self._focus_written = anyio.Event()
        for rel in self._files:  # the files left: an in-memory pass, no walk
            tier = focus.tier(rel)
            if tier is not None and tier <= self._best[rel][0]:
                self._push(rel, tier, self._generation)
                self._unwritten.add(rel)

    def _push(self, rel: str, tier: int, generation: int) -> None:
        seq = self._files[rel][0]
        key = (tier, -generation, self._recent.get(rel, 0) if tier == RECENT else 0, seq, rel)
        self._best[rel] = key
        heapq.heappush(self._heap, key)

    def _take(self) -> Iterator[WalkedFile]:
        while self._heap:
            key = heapq.heappop(self._heap)
            rel = key[-1]
            if self._best.get(rel) != key:
                continue  # taken already, or moved ahead by a later focus
            del self._best[rel]
            self._in_flight.add(rel)
            if key[0] <= HERE:
                self._focus_taken(rel)
            yield self._files.pop(rel)[1]

    def _focus_taken(self, rel: str) -> None:
        if not self._focus_in_flight:
            self._focus_written = anyio.Event()
        self._focus_in_flight.add(rel)


@dataclass(frozen=True, slots=True)
class FaultHold:
    """Fault injection for tests: a full run prepares `after` files, then no more while `path` exists.

    Integration tests use it to look at a run in the middle without depending on how fast
    it goes (the daemon sets it from LENSMUX_FAULT_INDEX_HOLD); nothing else does.
    """

    path: Path
    after: int

    async def wait_turn(self, started: int) -> None:
        """Return when the run may prepare its file number `started` (counting from 1)."""
        # Polled: the test that removes the file is another process, and this runs only under test.
        while started > self.after and await anyio.Path(self.path).exists():  # noqa: ASYNC110
            await anyio.sleep(0.05)
