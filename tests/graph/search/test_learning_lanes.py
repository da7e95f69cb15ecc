"""The learner's lanes: one per server, side by side (daemon/search/graph_learning.py, issue 23).

pyright's incomingCalls takes hundreds of milliseconds on a large workspace, clangd answers
from its index in a few: in one queue, clangd's symbols waited behind pyright's. Each
server now has a lane of its own, and each lane one request in flight at its server, so a
client's question still waits behind one learning request of its server at most.

The index here is Python (the ast fake); one file is marked as C in the store, so the fake
server answers it as "c" and the learner sends it through the other lane.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from search_fakes import LearnerGateway
from search_projects import UPLOADER, indexed

from lensmux.daemon.search.gateway import DaemonGateway
from lensmux.daemon.search.graph_learning import GraphLearner
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.root_index import RootIndex
from lensmux.graph.index import Indexer
from lensmux.graph.index.errors import StoreUnreachable
from lensmux.graph.search import SearchConfig

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.embedded_store(
        "the order and lanes of rounds do not depend on the store;"
        " the learner on a team root's overlay is test_learning_yields.py's"
    ),
]

AS_C = "pkg/storage.py"


class SlowPythonGateway(LearnerGateway):
    """The ast fake, python's answers held until released; requests in flight counted per language."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.in_flight: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.release_python = anyio.Event()

    def server_languages(self) -> list[tuple[str, ...]]:
        return [("c", "cpp"), ("python",)]

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        self.in_flight[language] += 1
        self.most[language] = max(self.most[language], self.in_flight[language])
        try:
            if language == "python":
                await self.release_python.wait()
            answer = await super().request(root, language, method, params, timeout=timeout)
            self.answered[language] += 1
            return answer
        finally:
            self.in_flight[language] -= 1


def _learner(ix: Indexer, conn: sqlite3.Connection) -> tuple[RootIndex, SlowPythonGateway, GraphLearner]:
    """AS_C marked as C in the store; the root's entry, the gateway and a learner that never waits for quiet."""
    with conn:
        conn.execute("UPDATE files SET language = 'c' WHERE path = ?", (AS_C,))
    entry = RootIndex(ix.root, ix, finished_at=1.0)

    class Indexes:
        roots = {ix.root: entry}

        async def wait_changed(self, timeout: float) -> None:
            await anyio.sleep(timeout)

    gateway = SlowPythonGateway(ix.root)
    config = SearchConfig(learn_quiet_s=0.0)
    learner = GraphLearner(cast(IndexService, Indexes()), cast(DaemonGateway, gateway), lambda: config, lambda: False)
    return entry, gateway, learner


async def test_clangd_learns_while_pyright_answers_one_learning_request_at_a_time(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        conn = sqlite3.connect(ix.store.path)
        entry, gateway, learner = _learner(ix, conn)
        conn.close()
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            with anyio.fail_after(30):
                # The C file's symbols are learned while pyright still holds its first learning request:
                # first that request (the lanes start in either order), then C's answers beside it.
                while not gateway.in_flight["python"]:
                    await anyio.sleep(0.01)
                while gateway.answered["c"] == 0 or gateway.in_flight["c"]:
                    await anyio.sleep(0.01)
                assert gateway.in_flight["python"] == 1 and gateway.answered["python"] == 0
                gateway.release_python.set()
                while entry.learning != "up to date":
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        learned, learnable = ix.store.learned_counts()
    assert learned == learnable > 0
    assert gateway.most == {"c": 1, "python": 1}, "one learning request in flight per server"


async def test_a_finished_lane_does_not_spin_on_what_searches_queued_for_another(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        conn = sqlite3.connect(ix.store.path)
        entry, gateway, learner = _learner(ix, conn)
        gateway.release_python.set()
        listed = 0
        unlearned = ix.store.unlearned_symbols

        def counting(after_id: int, limit: int, languages: Collection[str] | None = None) -> list[int]:
            nonlocal listed
            listed += 1
            return unlearned(after_id, limit, languages)

        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            with anyio.fail_after(30):
                while entry.learning != "up to date":
                    await anyio.sleep(0.01)
            # A search asked live about a Python symbol pyright now holds: only the Python lane asks.
            gateway.release_python = anyio.Event()
            [(upload,)] = conn.execute(
                "SELECT s.id FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? AND s.name = ?",
                ("pkg/uploader.py", "upload"),
            ).fetchall()
            with conn:
                conn.execute("DELETE FROM learned_edges WHERE subject_id = ?", (upload,))
                conn.execute("DELETE FROM learned WHERE symbol_id = ?", (upload,))
            ix.store.unlearned_symbols = counting  # type: ignore[method-assign]
            entry.learn_first.append(upload)
            with anyio.fail_after(30):
                while not gateway.in_flight["python"]:
                    await anyio.sleep(0.01)
            await anyio.sleep(0.5)
            tg.cancel_scope.cancel()
        conn.close()
    assert listed <= 2, f"the C lane listed symbols {listed} times while pyright held the queued one"


@pytest.mark.parametrize(
    "method", ["unlearned_symbols", "enclosing_symbol"], ids=["listing-the-round", "mapping-its-answers"]
)
async def test_a_store_lost_under_a_round_stops_that_root_and_not_the_learner(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """A team store that goes away mid-round (StoreUnreachable from a worker thread) is the root's
    problem: the round stops with a warning, and the learner task, which runs in the daemon's own
    task group, does not end (an exception leaving it would take the daemon down with it).
    Lost while the round lists its symbols, or later, while the servers' answers are mapped to
    indexed symbols inside expansion's task groups: the error must reach the round as itself,
    not wrapped in an ExceptionGroup that the round's handler does not match."""
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        conn = sqlite3.connect(ix.store.path)
        _entry, gateway, learner = _learner(ix, conn)
        conn.close()
        gateway.release_python.set()
        calls = 0

        def lost(*args: object, **kwargs: object) -> None:
            nonlocal calls
            calls += 1
            raise StoreUnreachable(f"{method}: terminating connection due to administrator command")

        monkeypatch.setattr(ix.store, method, lost)
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            with anyio.fail_after(30):
                # A lane met the lost store; the learner would have ended the task group here.
                while not any("stopped" in r.getMessage() for r in caplog.records):
                    await anyio.sleep(0.01)
                await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
    assert calls
    stopped = [r.getMessage() for r in caplog.records if "stopped" in r.getMessage()]
    assert "administrator command" in stopped[0], stopped


async def test_a_lane_looks_up_a_symbol_queued_for_another_lane_once(tmp_path: Path) -> None:
    """The queue of what searches asked holds up to a thousand symbols (root_index.LEARN_FIRST):
    a lane that looked each of another lane's up again on every round of its own paid a store
    read per queued symbol per round (about 30 ms a round for a full queue at 1M lines)."""
    async with indexed(tmp_path, UPLOADER) as ix:
        assert isinstance(ix, Indexer)
        conn = sqlite3.connect(ix.store.path)
        entry, gateway, learner = _learner(ix, conn)
        [(upload,)] = conn.execute(
            "SELECT s.id FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ? AND s.name = ?",
            ("pkg/uploader.py", "upload"),
        ).fetchall()
        conn.close()
        looked_up = 0
        symbol = ix.store.symbol

        def counting(symbol_id: int) -> Any:
            nonlocal looked_up
            looked_up += symbol_id == upload
            return symbol(symbol_id)

        ix.store.symbol = counting  # type: ignore[method-assign]
        # A search queued a Python symbol; pyright holds the Python lane's first request.
        entry.learn_first.append(upload)
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            with anyio.fail_after(30):
                while len(learner._lanes) < 2:  # one per server, made when the task starts
                    await anyio.sleep(0.01)
                c_lane = next(lane for lane in learner._lanes if lane.languages and "c" in lane.languages)
                while c_lane.state.get(ix.root) != "up to date":
                    await anyio.sleep(0.01)
            await anyio.sleep(0.3)
            rounds_in_c = gateway.answered["c"]
            tg.cancel_scope.cancel()
    assert rounds_in_c > 1, "the C lane learned over several rounds"
    # Once by the Python lane's round that asks about it, once by the C lane's first round.
    assert looked_up <= 2, f"the queued Python symbol was looked up {looked_up} times"
