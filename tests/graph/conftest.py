"""The search suite on both index stores (issue 24).

Every test in tests/graph/search that indexes a tree through search_projects.indexed runs once
per store in search_projects.STORES: the embedded SQLite + hnswlib index, and the team store (a
real PostgreSQL + pgvector, one server per session, a fresh database per test). A test about the
embedded store's own files is marked `embedded_store("why")`: its team-store runs are skipped with
that reason; a behaviour one store is known not to have yet is marked `store_differs(store, "what")`,
a strict xfail of that store's run.

This sits one folder up from the search suite because tests/graph/search is a root of mypy's
path (scripts/typecheck), where a conftest.py would be a second module named `conftest`;
search_projects is imported when a search test is, so lazily here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test that names search_projects.indexed builds an index; any other makes none, and the
    # store makes no difference to it.
    projects = sys.modules.get("search_projects")
    if projects is None or "indexed" not in metafunc.function.__code__.co_names:
        return
    if getattr(metafunc.module, "indexed", None) is not projects.indexed:
        return
    only = metafunc.definition.get_closest_marker("embedded_store")
    differs = {m.args[0]: m.args[1] for m in metafunc.definition.iter_markers("store_differs")}
    params = []
    for store in projects.STORES:
        if only is not None and store != "sqlite":
            params.append(pytest.param(store, marks=pytest.mark.skip(reason=f"embedded store only: {only.args[0]}")))
        elif store in differs:
            # Known to differ: strict, so the day it stops differing the mark has to go.
            params.append(pytest.param(store, marks=pytest.mark.xfail(strict=True, reason=differs[store])))
        else:
            params.append(pytest.param(store))
    metafunc.parametrize("search_store", params, indirect=True)


@pytest.fixture(autouse=True)
def search_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """The store search_projects.indexed builds in for this test: the embedded one unless parametrized."""
    store: str = getattr(request, "param", "sqlite")
    if store == "sqlite":
        yield store  # nothing to choose: search_projects builds in the embedded store by default
        return
    from search_projects import CHOICE

    CHOICE.store = store
    CHOICE.team_dsn = request.getfixturevalue("team_database")
    try:
        yield store
    finally:
        CHOICE.store, CHOICE.team_dsn = "sqlite", None
