"""Request-id rewriting round-trips, for clients whose ids collide."""

from __future__ import annotations

from typing import Any

from lensmux.daemon.mux.requests.pending import PendingTable


class _Client:
    def __init__(self, cid: int) -> None:
        self.id = cid


def test_same_client_ids_from_two_clients_get_distinct_server_ids() -> None:
    table = PendingTable()
    a: Any = _Client(1)
    b: Any = _Client(2)
    ea = table.add_client("textDocument/hover", a, 1)
    eb = table.add_client("textDocument/hover", b, 1)
    es = table.add_client("x", a, "str-id")
    assert len({ea.server_id, eb.server_id, es.server_id}) == 3
    # Responses find their way back to the right client and its own id.
    back = table.pop(eb.server_id)
    assert back is not None and back.client is not None and back.client.id == 2 and back.client_id == 1
    assert table.find_client(a, 1) is ea
    assert table.find_client(b, 1) is None
    popped = table.pop(es.server_id)
    assert popped is not None and popped.client_id == "str-id"


def test_unknown_and_foreign_ids_are_not_found() -> None:
    table = PendingTable()
    assert table.pop(99) is None
    assert table.pop("lensmux-1") is None


def test_drain_returns_everything_once() -> None:
    table = PendingTable()
    a: Any = _Client(1)
    table.add_client("m", a, 1)
    table.add_internal("initialize")
    assert len(table.drain()) == 2
    assert len(table) == 0 and table.find_client(a, 1) is None
