"""`lensmux search` asks the daemon before it loads any of the search pipeline.

Its view imports `graph.search.answer.reasons`; the package `graph.search` used to import its
whole pipeline on that (numpy, networkx, the index builder: 0.4 s idle, about 1 s on a loaded
two-core machine), all before the command sent its request: part of every search's wall time,
and of a new worktree's time to its first search (docs/benchmarks.md, issue 23).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "networkx", "lensmux.graph.search.engine", "lensmux.graph.index.builder.indexer")


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.split()


def test_the_search_commands_imports_load_no_pipeline() -> None:
    code = (
        "from lensmux.daemon.cli.views.search_view import render_results, use_colour\n"
        "from lensmux.daemon.cli.connect.autostart import ensure_daemon\n"
        "from lensmux.daemon.cli.connect.index_wait import describe, ensure_indexed\n"
        "from lensmux.daemon.cli.connect.project_root import enclosing_project\n"
        "from lensmux.daemon.cli.views.progress_bar import ProgressBar\n"
        "import lensmux.daemon.cli.commands"
    )
    assert _loaded_after(code) == []


def test_the_package_still_gives_every_name_on_use() -> None:
    from lensmux.graph import search
    from lensmux.graph.search.config import SearchConfig
    from lensmux.graph.search.engine import HybridSearchEngine

    assert search.SearchConfig is SearchConfig
    assert search.HybridSearchEngine is HybridSearchEngine
    for name in search.__all__:
        assert getattr(search, name) is not None
    with pytest.raises(AttributeError):
        _ = search.NotAName
