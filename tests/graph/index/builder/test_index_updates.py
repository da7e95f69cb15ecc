"""UpdateTickets: a search waits for the updates begun before it, never for later ones."""

from __future__ import annotations

import anyio
import pytest

from lensmux.graph.index.builder.updates import UpdateTickets

pytestmark = pytest.mark.anyio


async def test_the_wait_ends_when_the_earlier_update_commits() -> None:
    tickets = UpdateTickets()
    ticket = tickets.begin("a.py")
    async with anyio.create_task_group() as tg:

        async def commit_soon() -> None:
            await anyio.sleep(0.05)
            tickets.end(ticket)

        tg.start_soon(commit_soon)
        assert await tickets.wait_begun_before(30) == []


async def test_an_update_begun_after_the_search_is_not_waited_for() -> None:
    tickets = UpdateTickets()
    first = tickets.begin("a.py")
    async with anyio.create_task_group() as tg:

        async def later_edit_then_commit() -> None:
            await anyio.sleep(0.01)
            tickets.begin("b.py")  # never ends
            await anyio.sleep(0.01)
            tickets.end(first)

        tg.start_soon(later_edit_then_commit)
        assert await tickets.wait_begun_before(30) == []


async def test_what_is_still_pending_after_the_bound_is_named() -> None:
    tickets = UpdateTickets()
    tickets.begin("pkg/slow.py")
    with tickets.running("pkg/fast.py"):
        assert await tickets.wait_begun_before(0.01) == ["pkg/fast.py", "pkg/slow.py"]
    assert await tickets.wait_begun_before(0.01) == ["pkg/slow.py"]
