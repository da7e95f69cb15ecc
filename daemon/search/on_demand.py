"""The daemon's indexes, hybrid search and call-graph learner, built when first needed.

A daemon that only multiplexes (editors and agents that never index or search) never
imports the search stack: numpy, networkx, python-louvain, hnswlib and the graph
library are about half of an idle daemon's resident memory (docs/benchmarks.md,
"Memory of the daemon and the bridge when they only multiplex"). This module imports
none of it. The first `lensmux/index` or `lensmux/hybridSearch` (control socket, HTTP,
`lensmux search`, the assistant's search_code) imports it in a worker thread, so
editors' messages keep flowing meanwhile, and builds the services once; until then
nothing is indexed, so everything else is answered here as the services would answer
with no index: no roots, "not indexed", no edit to re-index, nothing to learn.

The services are built with the daemon configuration the daemon started with, as they
were when built at start-up; a reloaded `[daemon.search]` table applies to searches
whether it came before or after they were built. The daemon reopens no index at start-up;
code that made it do so would call `services()` there.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus

from lensmux.daemon.config import DaemonConfig, HybridSearchConfig
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.mux.registry import InstanceRegistry
from lensmux.daemon.search.errors import IndexServiceError

if TYPE_CHECKING:
    from lensmux.daemon.search.graph_learning import GraphLearner
    from lensmux.daemon.search.index_edits import TextSource
    from lensmux.daemon.search.indexing import IndexService
    from lensmux.daemon.search.service import SearchService

log = logging.getLogger(__name__)

# Importing these brings numpy, networkx, python-louvain, hnswlib, SQLite and lensmux.graph.
_STACK = ("lensmux.daemon.search.indexing", "lensmux.daemon.search.service", "lensmux.daemon.search.graph_learning")


def _import_stack() -> None:
    for name in _STACK:
        importlib.import_module(name)


class SearchOnDemand:
    """The daemon's search side: the index service, the search service and the learner, from first use on."""

    def __init__(
        self,
        config: DaemonConfig,
        registry: InstanceRegistry,
        internal: InternalClient,
        tools_running: Callable[[], bool],
        team_dsn: str | None = None,
    ) -> None:
        """`tools_running` says whether assistant tools run (the learner waits for them as for searches);
        `team_dsn` is the team store's (`[index] store = "postgres"`), if any."""
        self._config = config
        self._team_dsn = team_dsn
        self._search_table: HybridSearchConfig = config.search
        self._registry = registry
        self._internal = internal
        self._tools_running = tools_running
        self._tg: TaskGroup | None = None
        self._building = anyio.Lock()
        self._built = anyio.Event()
        self.indexes: IndexService | None = None
        self.search: SearchService | None = None
        self._learner: GraphLearner | None = None

    async def run_task(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the index service once built; cancelling this saves and closes every index."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None

    async def learner_task(self) -> None:
        """Learn call graphs from the moment the services exist (there is nothing to learn before)."""
        await self._built.wait()
        assert self._learner is not None
        await self._learner.run_task()

    async def wait_closed(self) -> None:
        """Return once every index is saved and closed (at once if none was ever opened)."""
        if self.indexes is not None:
            await self.indexes.wait_closed()

    async def services(self) -> tuple[IndexService, SearchService]:
        """The index and search services, imported and built on the first call."""
        async with self._building:
            if self.indexes is None or self.search is None:
                await self._build()
        assert self.indexes is not None and self.search is not None
        return self.indexes, self.search

    async def _build(self) -> None:
        if self._tg is None:
            raise IndexServiceError("the daemon is shutting down")
        await anyio.to_thread.run_sync(_import_stack)
        from lensmux.daemon.search.gateway import DaemonGateway
        from lensmux.daemon.search.graph_learning import GraphLearner
        from lensmux.daemon.search.indexing import IndexService
        from lensmux.daemon.search.service import SearchService

        indexes = IndexService(self._config, self._internal, self._team_dsn)
        await self._tg.start(indexes.run_task)
        gateway = DaemonGateway(self._registry, self._internal)
        search = SearchService(indexes, gateway, self._search_table)
        busy = self._tools_running
        # The learner's requests hold their server's own-request slot: never beside a bind walk's (own_slot.py).
        learning = gateway.in_background()
        self._learner = GraphLearner(indexes, learning, lambda: search.config, lambda: search.active > 0 or busy())
        self.indexes, self.search = indexes, search
        self._built.set()
        log.info("search stack loaded")

    async def index(self, root: Path, focus: Any = None, *, overlay: bool = True) -> dict[str, Any]:
        """`lensmux/index`: start (or refresh) indexing of `root`, `focus` (a directory) first; its summary.

        `overlay=False` (a publisher's run) indexes every file rather than laying the root over
        the team's published index.
        """
        indexes, _ = await self.services()
        return indexes.summary(await indexes.index(root, focus, overlay=overlay))

    async def publish(self, root: Path) -> dict[str, Any]:
        """`lensmux/publish`: index `root` fully, then copy its index into the team snapshot of its HEAD."""
        indexes, _ = await self.services()
        return await indexes.publish(root)

    def index_status(self, root: Path) -> dict[str, Any] | None:
        """`lensmux/indexStatus`: the summary of the index of `root` (or of the root containing it), if any."""
        entry = self.indexes.find(root) if self.indexes is not None else None
        return None if entry is None or self.indexes is None else self.indexes.summary(entry)

    async def hybrid_search(self, params: Any) -> Any:
        """`lensmux/hybridSearch`."""
        _, search = await self.services()
        return await search.hybrid_search(params)

    def configure(self, table: HybridSearchConfig) -> None:
        """Apply a reloaded `[daemon.search]` table to the next searches."""
        self._search_table = table
        if self.search is not None:
            self.search.configure(table)

    def on_saved(self, uri: str) -> None:
        """A client saved a file: re-index it where it is indexed."""
        if self.indexes is not None:
            self.indexes.on_saved(uri)

    def on_changed(self, uri: str, text: TextSource) -> None:
        """A client edited a document: re-index the daemon's text of it where it is indexed."""
        if self.indexes is not None:
            self.indexes.on_changed(uri, text)

    @property
    def indexing(self) -> bool:
        """Whether any root is indexed (edits are then worth looking at)."""
        return self.indexes is not None and bool(self.indexes.roots)

    def full_run_going(self) -> bool:
        """Whether a full index run goes on on any root (the bind walk waits for it: app.py)."""
        return self.indexes is not None and self.indexes.full_run_going()

    def status(self) -> dict[str, Any]:
        """The model and every root's index, for `lensmux status`."""
        if self.indexes is not None:
            return self.indexes.status()
        # IndexService's own answer with no root and no model (tests/daemon/test_search_on_demand.py).
        adapter = self._config.embedding.query_adapter_before_load()
        return {
            "model": {"state": "not loaded", "progress": None, "query_adapter": adapter},
            "roots": [],
            "caps": self._config.index_caps(),
            "vector_cache": None,
            "symbol_cache": None,
            "token_memo": None,
        }
