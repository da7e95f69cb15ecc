"""Closing the team store while a worker thread reads from it (issue 24).

The daemon detaches a root (graph/index/team/shared.py detach()) on its event loop, while a
search's worker thread may be inside a statement on one of the store's connections; freeing
libpq's connection under that thread is unsafe. close() closes at once only the connections
no thread holds, and the holder closes its own when it gives it back.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lensmux.graph.index.errors import StoreUnreachable
from lensmux.graph.index.postgres.store import TeamStore


def test_close_leaves_a_held_connection_to_its_thread(team_database: str) -> None:
    team = TeamStore(team_database)
    holding, release = threading.Event(), threading.Event()
    held: list[Any] = []
    answers: list[Any] = []

    def worker() -> None:
        with team.reader.use("a search's question") as conn:
            held.append(conn)
            holding.set()
            release.wait()
            # The store was closed meanwhile: this thread's statement still runs on its connection.
            answers.append(conn.execute("SELECT 1").fetchone())

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert holding.wait(30)
        team.close()
        assert not held[0].closed, "close() freed a connection a worker thread was using"
        with pytest.raises(StoreUnreachable), team.reader.use("a question after close"):
            pass
    finally:
        release.set()
        thread.join()
    assert answers == [(1,)]
    assert held[0].closed, "the holder closes it when it gives it back"
    with pytest.raises(StoreUnreachable), team.writer.use("a write after close"):
        pass
