"""The daemon's call-graph learner stops sending the moment a client speaks (daemon/search/graph_learning.py).

A server answers one request at a time: every learning request still to be sent would
be one more ahead of the client's question. The gateway here is the ast fake with a
server that, once the client has spoken, is busy with the learning request in flight
(it never answers it): the round can only end by stopping.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from search_fakes import FakeGateway
from search_projects import UPLOADER, OverlaidIndex, SearchedIndex, indexed

from lensmux.daemon.search.gateway import DaemonGateway
from lensmux.daemon.search.graph_learning import QUIET_HALF_LIFE_S, GraphLearner
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.root_index import RootIndex
from lensmux.graph.index import Indexer
from lensmux.graph.search import SearchConfig

pytestmark = pytest.mark.anyio


def _entry(ix: SearchedIndex, **state: Any) -> RootIndex:
    """The daemon's entry for the root: its Indexer, with the team snapshot it overlays if any.

    The learner learns through RootIndex.search_index(), so on the overlay it stores what it
    learns of the snapshot's symbols beside it (graph/index/team/side_learned.py).
    """
    if isinstance(ix, Indexer):
        return RootIndex(ix.root, ix, **state)
    if isinstance(ix, OverlaidIndex):
        return RootIndex(ix.root, ix.local, shared=ix.shared, **state)
    pytest.skip("a published snapshot is never a daemon root's own index: a root reads it through the overlay")


class ClientSpeaksGateway(FakeGateway):
    """The fake server; a client speaks while the learner's `speak_at`-th request is in flight."""

    def __init__(self, root: Path, speak_at: int | None) -> None:
        super().__init__(root)
        self.speak_at = speak_at
        self.spoke = False

    def quiet(self, seconds: float) -> bool:
        return not self.spoke

    def noise(self, seconds: float) -> str | None:
        return "a client spoke" if self.spoke else None

    def server_languages(self) -> list[tuple[str, ...]]:
        return [("python",)]

    async def release_documents(self) -> int:
        return 0

    async def request(
        self, root: Path, language: str, method: str, params: Mapping[str, Any], *, timeout: float
    ) -> Any:
        if self.speak_at is not None and len(self.requests) + 1 == self.speak_at:
            self.spoke = True
            self.requests.append(method)
            await anyio.sleep_forever()  # busy with it: only the learner stopping ends the round
        return await super().request(root, language, method, params, timeout=timeout)


async def test_a_round_sends_nothing_more_once_a_client_speaks_and_is_asked_again_later(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        entry = _entry(ix)
        indexes = cast(IndexService, type("Indexes", (), {"roots": {ix.root: entry}})())
        gateway = ClientSpeaksGateway(ix.root, speak_at=2)
        config = SearchConfig()
        learner = GraphLearner(indexes, cast(DaemonGateway, gateway), lambda: config, lambda: False)
        with anyio.fail_after(30):
            await learner._round(entry, config)
        assert gateway.requests and len(gateway.requests) == 2, gateway.requests
        assert entry.learning == "interrupted by a client"
        assert entry.learning_interrupted == 1
        assert ix.store.learned_counts()[0] == 0
        # Quiet again: the same symbols are asked, from the start, and learned.
        quiet = ClientSpeaksGateway(ix.root, speak_at=None)
        learner._gateway = cast(DaemonGateway, quiet)
        with anyio.fail_after(30):
            await learner._round(entry, config)
        assert quiet.requests[: len(gateway.requests) - 1] == gateway.requests[:-1]
        assert entry.learning != "interrupted by a client"
        assert ix.store.learned_counts()[0] > 0


async def test_nothing_is_learned_while_any_root_is_being_indexed(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        learnable = _entry(ix, finished_at=1.0)
        # A clone being indexed right after the repository: its run goes first.
        clone = RootIndex(tmp_path / "clone", learnable.indexer, running=True)

        class Indexes:
            roots = {ix.root: learnable, clone.root: clone}

            async def wait_changed(self, timeout: float) -> None:
                await anyio.sleep(timeout)  # once everything is learned; nothing changes here

        indexes = cast(IndexService, Indexes())
        gateway = ClientSpeaksGateway(ix.root, speak_at=None)
        config = SearchConfig(learn_quiet_s=0.0)
        learner = GraphLearner(indexes, cast(DaemonGateway, gateway), lambda: config, lambda: False)
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            await anyio.sleep(0.5)
            assert gateway.requests == [] and learnable.learning == "waiting for an index run"
            clone.running = False
            with anyio.fail_after(30):
                while not gateway.requests:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()


async def test_a_run_that_just_ended_counts_as_a_client_that_just_spoke(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        learnable = _entry(ix, finished_at=1.0)
        # A clone whose run has just ended: the search that follows `index --wait` goes first.
        clone = RootIndex(tmp_path / "clone", learnable.indexer, finished_at=time.time())

        class Indexes:
            roots = {ix.root: learnable, clone.root: clone}

            async def wait_changed(self, timeout: float) -> None:
                await anyio.sleep(timeout)

        gateway = ClientSpeaksGateway(ix.root, speak_at=None)
        config = SearchConfig(learn_quiet_s=2.0)
        learner = GraphLearner(
            cast(IndexService, Indexes()), cast(DaemonGateway, gateway), lambda: config, lambda: False
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            await anyio.sleep(0.5)
            assert gateway.requests == [] and learnable.learning == "waiting for an index run"
            with anyio.fail_after(30):
                while not gateway.requests:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()


class RecordingGateway(ClientSpeaksGateway):
    """A client speaks during the `speak_at`-th request; records the quiet each look asked for."""

    def __init__(self, root: Path, speak_at: int | None) -> None:
        super().__init__(root, speak_at)
        self.asked_quiet: list[float] = []

    def noise(self, seconds: float) -> str | None:
        self.asked_quiet.append(seconds)
        return "a client spoke"  # never quiet: the lane only looks and shows why it waits


async def test_a_round_that_held_a_client_up_makes_learning_wait_for_longer_quiet(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        entry = _entry(ix, finished_at=1.0)

        class Indexes:
            roots = {ix.root: entry}

            async def wait_changed(self, timeout: float) -> None:
                await anyio.sleep(timeout)

        config = SearchConfig(learn_quiet_s=5.0, learn_quiet_max_s=12.0)
        held = ClientSpeaksGateway(ix.root, speak_at=2)
        learner = GraphLearner(cast(IndexService, Indexes()), cast(DaemonGateway, held), lambda: config, lambda: False)
        assert learner.quiet_s(config) == 5.0
        with anyio.fail_after(30):
            await learner._round(entry, config)
        assert entry.learning_interrupted == 1
        assert learner.quiet_s(config) == pytest.approx(10.0, abs=0.01)
        # Another lane's round, begun before that and stopped by the same client: doubled once only.
        learner._held_up(config, began=learner._extra_at - 1.0)
        assert learner.quiet_s(config) == pytest.approx(10.0, abs=0.01)
        # Held up again: doubled, but never beyond learn_quiet_max.
        learner._gateway = cast(DaemonGateway, ClientSpeaksGateway(ix.root, speak_at=2))
        with anyio.fail_after(30):
            await learner._round(entry, config)
        assert learner.quiet_s(config) == pytest.approx(12.0, abs=0.01)
        # The extra halves every QUIET_HALF_LIFE_S.
        learner._extra_at -= QUIET_HALF_LIFE_S
        assert learner.quiet_s(config) == pytest.approx(5.0 + 7.0 / 2, abs=0.01)
        # The lane asks the gateway for that much quiet, and status says why it is longer.
        recording = RecordingGateway(ix.root, speak_at=None)
        learner._gateway = cast(DaemonGateway, recording)
        async with anyio.create_task_group() as tg:
            tg.start_soon(learner.run_task)
            with anyio.fail_after(30):
                while not recording.asked_quiet:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
        assert recording.asked_quiet[0] == pytest.approx(8.5, abs=0.01)
        assert entry.learning.startswith("waiting for quiet: a client spoke; 8 s of quiet"), entry.learning


async def test_a_round_a_search_stopped_leaves_the_quiet_learning_waits_for(tmp_path: Path) -> None:
    async with indexed(tmp_path, UPLOADER) as ix:
        entry = _entry(ix)
        indexes = cast(IndexService, type("Indexes", (), {"roots": {ix.root: entry}})())
        config = SearchConfig(learn_quiet_s=5.0)
        gateway = ClientSpeaksGateway(ix.root, speak_at=2)
        # A search runs (its own requests are what learning is for): the round stops, nothing more.
        learner = GraphLearner(indexes, cast(DaemonGateway, gateway), lambda: config, lambda: True)
        with anyio.fail_after(30):
            await learner._round(entry, config)
        assert entry.learning_interrupted == 1
        assert learner.quiet_s(config) == 5.0
