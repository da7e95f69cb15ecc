"""The daemon's search side before and after it is built: the same answers as built at start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from lensmux.daemon.config import Config, DaemonConfig, HybridSearchConfig
from lensmux.daemon.mux.internal_client import InternalClient
from lensmux.daemon.mux.registry import InstanceRegistry
from lensmux.daemon.search.indexing import IndexService
from lensmux.daemon.search.on_demand import SearchOnDemand

pytestmark = [pytest.mark.anyio]


def _on_demand(config: DaemonConfig) -> SearchOnDemand:
    # Nothing here starts an instance: the registry needs no task group.
    registry = InstanceRegistry(None, Config())  # type: ignore[arg-type]
    return SearchOnDemand(config, registry, InternalClient(registry), lambda: False)


def test_before_any_index_the_status_is_the_index_services_own_with_no_root() -> None:
    config = DaemonConfig()
    on_demand = _on_demand(config)
    assert on_demand.status() == IndexService(config, on_demand._internal).status()
    assert on_demand.index_status(Path.cwd()) is None
    assert on_demand.indexes is None and on_demand.search is None


async def test_built_on_first_use_with_the_latest_search_table(tmp_path: Path) -> None:
    on_demand = _on_demand(DaemonConfig())
    on_demand.configure(HybridSearchConfig(max_graph_depth=3))
    async with anyio.create_task_group() as tg:
        await tg.start(on_demand.run_task)
        indexes, search = await on_demand.services()
        assert (on_demand.indexes, on_demand.search) == (indexes, search)
        assert await on_demand.services() == (indexes, search), "built once"
        assert search.config.max_graph_depth == 3, "a table reloaded before the first search applies to it"
        on_demand.configure(HybridSearchConfig(max_graph_depth=1))
        assert search.config.max_graph_depth == 1
        assert on_demand.status() == indexes.status()
        tg.cancel_scope.cancel()
    with anyio.fail_after(5):
        await on_demand.wait_closed()


def test_importing_the_daemon_or_the_command_line_brings_no_search_stack() -> None:
    probe = (
        "import sys, lensmux.daemon.main, lensmux.daemon.cli.main\n"
        "heavy = ('numpy', 'networkx', 'community', 'hnswlib', 'onnxruntime', 'lensmux.graph')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('lensmux.graph')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
