"""One root's index as the daemon holds it: its Indexer, its runs' state, its team snapshot, its status."""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from lensmux.graph.index import Indexer, IndexStoreError, ProgressSnapshot, RootNotIndexed

if TYPE_CHECKING:
    # graph/index/team/shared.py imports psycopg (the `postgres` extra): only a root of a team store loads it.
    from lensmux.graph.index.team.shared import OverlayIndex, SharedIndex

log = logging.getLogger(__name__)

# Symbols kept per root for the learner to ask about first (RootIndex.learn_first). A search at
# its budget queues a few symbols per seed; at 64, thirty searches on the 1M-line monorepo pushed
# the earlier searches' symbols out before a round took them, and nine of those searches were at
# the budget again when asked a second time (docs/benchmarks.md, "100k, 300k and 1M again").
# 1,024 ids are 8 KiB per root; each is taken once by its own lane, asked about or dropped.
LEARN_FIRST = 1024


@dataclass
class RootIndex:
    """One root's indexer and the state of its current run."""

    root: Path
    indexer: Indexer
    runs: int = 0
    running: bool = False
    last: ProgressSnapshot | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    started_at: float = 0.0
    finished_at: float | None = None
    watching: bool = False
    error: str | None = None
    # What the call-graph learner is doing for this root (graph_learning.py).
    learning: str = "not started"
    # The team snapshot this root overlays (graph/index/team/shared.py), and why it has none when it should.
    shared: SharedIndex | None = None
    team_warning: str | None = None

    def search_index(self) -> Indexer | OverlayIndex:
        """What a search reads: the local index, laid over the team's snapshot when there is one."""
        from lensmux.graph.index.team.shared import OverlayIndex

        return OverlayIndex(self.shared) if self.shared is not None else self.indexer

    def relative(self, path: Path) -> str:
        """`path` as the root's index names it (for the files a search still waits for)."""
        return path.relative_to(self.root).as_posix()

    # Learning rounds stopped because a client spoke (graph_learning.py).
    learning_interrupted: int = 0
    # Symbols searches had to ask the servers about live, newest last: the learner asks
    # about these before its cursor (graph_learning.py). Bounded: the oldest go first.
    learn_first: deque[int] = field(default_factory=lambda: deque(maxlen=LEARN_FIRST))


async def attach_team(entry: RootIndex, dsn: str | None) -> None:
    """Overlay the team's nearest published snapshot, or note why not and stay local."""
    if dsn is None:
        return
    try:
        from lensmux.graph.index.team import shared as team
    except ImportError as exc:
        entry.team_warning = f"team index not used: {exc} (install lensmux[postgres])"
        log.warning("%s: %s", entry.root, entry.team_warning)
        return
    try:
        if entry.shared is not None:
            if await anyio.to_thread.run_sync(team.still_nearest, entry.shared, entry.indexer):
                return
            team.detach(entry.shared, entry.indexer)
            entry.shared = None
        entry.shared = await anyio.to_thread.run_sync(team.attach, dsn, entry.indexer)
        entry.team_warning = None
    except IndexStoreError as exc:
        entry.team_warning = f"team index not used ({exc}); searching the local index"
        log.warning("%s: %s", entry.root, entry.team_warning)


def root_summary(entry: RootIndex) -> dict[str, Any]:
    """What `lensmux index --wait` prints and `status` shows for one root."""
    status = entry.indexer.status().as_dict()
    status["runs"] = entry.runs
    status["running"] = entry.running
    status["error"] = entry.error
    status["elapsed_s"] = _elapsed(entry)
    status["graph"] = _graph_status(entry)
    status["shared"] = entry.shared.describe() if entry.shared is not None else None
    status["team_warning"] = entry.team_warning
    return status


def _graph_status(entry: RootIndex) -> dict[str, Any]:
    """How much of the root's call graph is learned, and what the learner is doing."""
    try:
        learned, learnable = entry.indexer.store.learned_counts()
    except (IndexStoreError, RootNotIndexed):
        return {"state": entry.learning}
    return {
        "learned": learned,
        "learnable": learnable,
        "state": entry.learning,
        "interrupted_rounds": entry.learning_interrupted,
        "queued_by_searches": len(entry.learn_first),
        "queue_bound": entry.learn_first.maxlen,
    }


def _elapsed(entry: RootIndex) -> float | None:
    """Seconds the current run has taken so far, or the last run took once it ended."""
    if not entry.started_at:
        return None
    end = entry.finished_at if entry.finished_at is not None else time.time()
    return round(end - entry.started_at, 2)
