"""Learning each indexed root's call graph while the language servers are quiet.

A search expands its seeds through the servers within a budget of half a second; a
busy or slow server then leaves the graph unexpanded. What expansion asks about a
symbol is the same for every query, so the daemon asks ahead: whenever no editor has
sent anything and no source file under a served root has changed on disk for `[daemon.search]
learn_quiet` seconds (an agent writing files with its own tools is at work as much as an
editor that types: `Instance.quiet_for`), no search or assistant tool runs, no
root is being indexed and every server has discovered its workspace, it asks about a few
symbols no search has needed yet and stores the complete answers with the index
(graph/search/learn.py). Editors keep priority: every round is a handful of symbols, and the
next round waits for quiet again. Once a root is learned the task sleeps until an index changes
(looking each second whether searches queued symbols).

A client that speaks during a round, or a source file that changes on disk, stops it
(`_round`): a server answers one request at a time, so each learning request still to be
sent would be one more ahead of the client's question. What was sent finishes (and is kept
by the cache); nothing more is sent, and the round's symbols are asked again at the next quiet
moment. That client most likely waited for the request the server was working on, and at
pyright that can take seconds: the quiet the next rounds wait for doubles (`quiet_s`, up to
`learn_quiet_max`, the extra halving every ten minutes), so learning moves to longer pauses
than the client's. Each server has a lane of its own
(its languages, `DaemonGateway.server_languages`), the lanes run side by side, and a lane sends
one request at a time (`learn_in_flight`), through a gateway whose requests hold their server's
own-request slot (`DaemonGateway.in_background`, daemon/mux/requests/own_slot.py), so a bind walk
never has a request in flight beside it: a client's question waits behind one learning or walk
request of its server at most, and clangd, which answers call hierarchy from its index in
milliseconds, does not wait behind pyright's incomingCalls (hundreds of milliseconds at 100k
lines: docs/benchmarks.md, "Learning speed, issue 23").

Searches say what to learn first: the symbols a search's expansion had to ask the servers
about live (nothing learned for them; its budget may have run out) are queued on their root
(`RootIndex.learn_first`, the last 1,024), and the next rounds of that root ask about them before
going on in id order; `lensmux status` shows how many wait (`queued_by_searches`).

A full index run of any root is waited for too (`_indexing`, checked before each round): a
clone or a second worktree indexed right after its repository wants the cores for its own
servers' documentSymbol, its chunking and its writes, and learning the repository's call
graph meanwhile only made the new root searchable later (bench/index/worktree.py, issue 23).
The end of a run counts as a client's message for `learn_quiet`: the search that usually
follows `lensmux index --wait` had a round begun at the run's end beside it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from lensmux.daemon.search.gateway import DaemonGateway
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.root_index import RootIndex
from lensmux.graph.index import IndexStoreError, RootNotIndexed
from lensmux.graph.index.errors import store_errors_unwrapped
from lensmux.graph.search import LearnRound, SearchConfig, learn_round

log = logging.getLogger(__name__)

# Symbols asked about per round, between two checks that editors are still quiet.
ROUND_SYMBOLS = 4
# How long a finished learner sleeps before looking at the indexes' generations again:
# the disk watcher's re-indexing does not wake it.
RECHECK_S = 60.0
# How often a lane with nothing left to learn looks whether searches queued symbols for it.
QUEUE_POLL_S = 1.0
# The shortest wait between two looks at whether editors are quiet (learn_quiet may be 0).
MIN_WAIT_S = 0.1
# How often a round looks whether a client has spoken since it began.
INTERRUPT_POLL_S = 0.02
# The extra quiet a round that held a client up added (see `_held_up`) halves in this time.
QUIET_HALF_LIFE_S = 600.0
# A cursor past every symbol id: a finished lane's round asks only about what searches queued.
_PAST_EVERY_ID = 2**62


@dataclass(slots=True)
class _Lane:
    """One server's share of learning: its languages, and per root its cursor, passes and state."""

    languages: frozenset[str] | None  # None: every language (no server known: one lane)
    cursor: dict[Path, int] = field(default_factory=dict)
    # The store generation at which a root's last pass found nothing left to ask.
    finished_at: dict[Path, int] = field(default_factory=dict)
    pass_start: dict[Path, int] = field(default_factory=dict)
    state: dict[Path, str] = field(default_factory=dict)
    # Queued symbols a round found to be another lane's (a symbol's language never changes): not
    # looked up again, since the queue holds up to LEARN_FIRST ids; and a finished lane whose
    # queued symbols are all others' does not start rounds (it would spin while another lane learns).
    others: dict[Path, set[int]] = field(default_factory=dict)

    def queued(self, entry: RootIndex) -> list[int]:
        """The root's queued symbols this lane has not found to be another lane's, oldest first."""
        others = self.others.get(entry.root, ())
        return [symbol for symbol in entry.learn_first if symbol not in others]


class GraphLearner:
    """Learns the call graph of every indexed root in quiet moments: one lane per server, side by side."""

    def __init__(
        self,
        indexes: IndexService,
        gateway: DaemonGateway,
        config: Callable[[], SearchConfig],
        busy: Callable[[], bool],
    ) -> None:
        """`config` is the search engine's current one; `busy` says whether searches or assistant tools run."""
        self._indexes = indexes
        self._gateway = gateway
        self._config = config
        self._busy = busy
        self._lanes = [_Lane(None)]
        # Whether documents opened by learning may still be open at the servers.
        self._holding = False
        # Lanes in a round now: documents are let go only when none is.
        self._in_round = 0
        # Quiet waited for beyond learn_quiet, as set at `_extra_at` (monotonic): `quiet_s`.
        self._extra_quiet = 0.0
        self._extra_at = 0.0

    async def run_task(self) -> None:
        """Learn until cancelled, each server's languages in a lane of their own.

        A server answers one learning request at a time either way (`learn_in_flight` per lane),
        so a client's question still waits behind one learning request of its server at most;
        clangd's symbols no longer wait behind pyright's slow incomingCalls, nor the reverse.
        """
        self._lanes = [_Lane(frozenset(group)) for group in self._gateway.server_languages()] or [_Lane(None)]
        async with anyio.create_task_group() as group:
            for lane in self._lanes:
                group.start_soon(self._run_lane, lane)

    async def _run_lane(self, lane: _Lane) -> None:
        while True:
            config = self._config()
            if not config.learn_graph:
                await self._let_go()
                await self._indexes.wait_changed(RECHECK_S)
                continue
            entry = self._next_root(lane)
            if entry is None:
                await self._let_go()
                # Not RECHECK_S: what a search queues (no index change) is looked at within a second.
                await self._indexes.wait_changed(QUEUE_POLL_S)
                continue
            if self._indexing(config.learn_quiet_s):
                self._show(entry, lane, "waiting for an index run")
                await self._let_go()
                await anyio.sleep(max(config.learn_quiet_s / 2, MIN_WAIT_S))
                continue
            quiet_s = self.quiet_s(config)
            noise = "a search or assistant tool runs" if self._busy() else self._gateway.noise(quiet_s)
            if noise is not None:
                if quiet_s > config.learn_quiet_s:
                    noise += f"; {quiet_s:.0f} s of quiet since learning held a client up"
                self._show(entry, lane, f"waiting for quiet: {noise}")
                await self._let_go()
                await anyio.sleep(max(config.learn_quiet_s / 2, MIN_WAIT_S))
                continue
            self._holding = True
            self._in_round += 1
            try:
                await self._round(entry, config, lane)
            finally:
                self._in_round -= 1

    def quiet_s(self, config: SearchConfig) -> float:
        """How long clients must have been quiet before a round: learn_quiet, more after `_held_up`."""
        if self._extra_quiet <= 0:
            return config.learn_quiet_s
        decay: float = 0.5 ** ((time.monotonic() - self._extra_at) / QUIET_HALF_LIFE_S)
        return config.learn_quiet_s + self._extra_quiet * decay

    def _held_up(self, config: SearchConfig, began: float) -> None:
        """A client spoke during a round: the quiet waited for doubles, up to learn_quiet_max.

        A server answers one request at a time, so that client's message most likely waited
        for the learning request the server was working on (at 100k lines, pyright's
        incomingCalls takes 60 ms to seconds): an editor that hovered after a 7 s pause waited
        0.2 to 3 s for it (docs/benchmarks.md, "An editor's hover after a pause"). Someone who
        pauses that long between requests is at work: learning now waits for longer pauses than
        theirs, and so collides with fewer of their requests; the extra halves every ten
        minutes, so learning still runs in a working day's longer breaks.
        """
        if self._extra_at >= began:
            return  # another lane's round, stopped by the same client, doubled it already
        base = config.learn_quiet_s
        target = min(2 * self.quiet_s(config), max(config.learn_quiet_max_s, base))
        if target > base:
            self._extra_quiet, self._extra_at = target - base, time.monotonic()
            log.info("a client spoke while learning was under way: learning now waits for %.0f s of quiet", target)

    def _show(self, entry: RootIndex, lane: _Lane, state: str) -> None:
        """The lane's state; the root shows "learning" while any lane learns, "up to date" once all are."""
        lane.state[entry.root] = state
        states = [other.state.get(entry.root, "not started") for other in self._lanes]
        if "learning" in states:
            entry.learning = "learning"
        else:
            entry.learning = next((s for s in states if s != "up to date"), "up to date")

    def _indexing(self, quiet_s: float) -> bool:
        """Whether a full index run is going on on any root, or ended less than `quiet_s` ago.

        `lensmux index --wait` is how a run is waited for, and a search is what usually follows
        it: a round begun as the run ended had the servers and the cores while that search
        started (issue 23), so the end of a run counts as a client's last message does.
        """
        now = time.time()
        return any(
            entry.running or (entry.finished_at is not None and now - entry.finished_at < quiet_s)
            for entry in self._indexes.roots.values()
        )

    async def _let_go(self) -> None:
        """Close what learning left open, once no search, tool or other lane's round may be using it.

        pyright re-checks every open file that imports a file an editor changes: the
        documents learning opened would make every edit after it cost more.
        """
        if self._holding and not self._in_round and not self._busy():
            self._holding = False
            closed = await self._gateway.release_documents()
            log.debug("learning paused: closed %d documents kept open at the servers", closed)

    async def _interruptible_round(self, entry: RootIndex, config: SearchConfig, lane: _Lane) -> LearnRound | None:
        """One round, or None if a client spoke (or a search began) before it was done."""
        began = time.monotonic()
        result: LearnRound | None = None
        # A lane that finished this generation's pass only takes what searches queued.
        finished = lane.finished_at.get(entry.root) == entry.indexer.store.generation
        # A store lost mid-round (a team store going away under a worker thread) leaves the group
        # as itself, for _round's handler: wrapped, it left the learner task and the daemon's group.
        with store_errors_unwrapped():
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    # Client activity is a timestamp per instance, not an event: polled, only during a round.
                    while not self._busy() and self._gateway.quiet(time.monotonic() - began):  # noqa: ASYNC110
                        await anyio.sleep(INTERRUPT_POLL_S)
                    group.cancel_scope.cancel()

                async def learn() -> None:
                    nonlocal result
                    result = await learn_round(
                        entry.search_index(),  # laid over the team snapshot if any: learns its symbols too
                        self._gateway,
                        config,
                        after=_PAST_EVERY_ID if finished else lane.cursor.get(entry.root, 0),
                        limit=ROUND_SYMBOLS,
                        first=lane.queued(entry),
                        languages=lane.languages,
                    )
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                group.start_soon(learn)
        return result

    def _next_root(self, lane: _Lane) -> RootIndex | None:
        """The first indexed root with something left to learn in this lane (or queued by a search)."""
        for root, entry in self._indexes.roots.items():
            if entry.running or entry.error is not None or not entry.finished_at:
                continue
            try:
                generation = entry.indexer.store.generation
            except RootNotIndexed:
                continue
            if lane.finished_at.get(root) != generation:
                return entry
            if lane.queued(entry):
                return entry
            self._show(entry, lane, "up to date")
        return None

    async def _round(self, entry: RootIndex, config: SearchConfig, lane: _Lane | None = None) -> None:
        lane = lane or self._lanes[0]
        root = entry.root
        self._show(entry, lane, "learning")
        try:
            if not lane.cursor.get(root):
                lane.pass_start[root] = entry.indexer.store.generation
            began = time.monotonic()
            done = await self._interruptible_round(entry, config, lane)
        except (IndexStoreError, RootNotIndexed) as exc:
            log.warning("learning the call graph of %s stopped: %s", root, exc)
            lane.cursor[root] = 0
            lane.finished_at[root] = lane.pass_start.get(root, -1)
            self._show(entry, lane, f"stopped: {exc}")
            return
        if done is None:
            self._show(entry, lane, "interrupted by a client")
            entry.learning_interrupted += 1
            if not self._busy():  # a search's or tool's own requests are the learner's customers
                self._held_up(config, began)
            log.debug("%s: a client spoke; the learning round stops and its symbols are asked again later", root)
            return
        others = lane.others.setdefault(root, set())
        others.update(done.others)
        others.intersection_update(entry.learn_first)
        for symbol in done.took:
            # A search may have queued it again meanwhile: every copy is asked about by now.
            while symbol in entry.learn_first:
                entry.learn_first.remove(symbol)
        if done.done:
            # Files written during the pass may have made symbols behind the cursor unlearned:
            # a generation other than the pass's own starts the next pass.
            lane.cursor[root] = 0
            lane.finished_at[root] = lane.pass_start.get(root, -1)
            self._show(entry, lane, "up to date")
            if entry.learning == "up to date":
                log.info("%s: call graph learned", root)
        else:
            lane.cursor[root] = done.after
