"""Server-created progress reaches the clients whose work it is, decided at its begin.

A server of its own tells a client of its background work (pyright's analysis, clangd's index),
and of the work of that client's own requests; never of another client's requests or of the
daemon's own searches.
"""

from __future__ import annotations

from typing import Any

import pytest
from daemon.mux.mux_stubs import StubInstance, stub

from lensmux.adapters.clangd.clangd import ClangdAdapter
from lensmux.adapters.pyright.pyright import PyrightAdapter
from lensmux.adapters.spec import ServerConfig
from lensmux.daemon.mux import server_requests, server_routing
from lensmux.daemon.mux.progress import request_progress
from lensmux.daemon.wire import envelope as ev
from lensmux.daemon.wire.envelope import Envelope

pytestmark = pytest.mark.anyio

PROGRESS = {"window": {"workDoneProgress": True}}
PYRIGHT = PyrightAdapter(ServerConfig(name="pyright", command="pyright-langserver"))


async def _create(inst: Any, token: str) -> None:
    await server_requests.handle(inst, Envelope(id=900, method="window/workDoneProgress/create", params=_raw(token)))


def _raw(token: str) -> Any:
    return ev.encode_value({"token": token})


async def _progress(inst: Any, token: str, value: dict[str, Any]) -> None:
    params = ev.encode_value({"token": token, "value": value})
    await server_routing.from_server(inst, Envelope(method="$/progress", params=params))


def _told(client: Any) -> list[Any]:
    out: list[Any] = []
    for m in client.messages:
        if m.get("method") == "window/workDoneProgress/create":
            out.append(("create", m["params"]["token"]))
        elif m.get("method") == "$/progress":
            out.append((m["params"]["value"]["kind"], m["params"]["token"]))
        elif str(m.get("method", "")).startswith("pyright/"):
            out.append(m["method"])
    return out


async def test_pyright_analysis_is_everyones_whoever_asked_something_meanwhile() -> None:
    asker, other, agent = stub(1, PROGRESS), stub(2, PROGRESS), stub(3, {})
    inst: Any = StubInstance(asker, other, agent, adapter=PYRIGHT)
    inst.pending.add_client("textDocument/hover", asker, 7)
    await _create(inst, "a")
    assert _told(asker) == [], "nobody hears of a token before its begin says whose work it is"
    await _progress(inst, "a", {"kind": "begin", "title": ""})
    await _progress(inst, "a", {"kind": "end"})
    assert _told(asker) == _told(other) == [("create", "a"), ("begin", "a"), ("end", "a")]
    assert _told(agent) == ["pyright/beginProgress", "pyright/endProgress"]


async def test_a_requests_progress_goes_to_its_asker_only() -> None:
    asker, other = stub(1, PROGRESS), stub(2, PROGRESS)
    inst: Any = StubInstance(asker, other, adapter=PYRIGHT)
    inst.pending.add_client("textDocument/references", asker, 7)
    await _create(inst, "r")
    await _progress(inst, "r", {"kind": "begin", "title": "Finding references"})
    await _progress(inst, "r", {"kind": "end"})
    assert _told(asker) == [("create", "r"), ("begin", "r"), ("end", "r")]
    assert _told(other) == []


async def test_the_daemons_own_request_shows_no_client_its_progress() -> None:
    editor = stub(1, PROGRESS)
    inst: Any = StubInstance(editor, adapter=PYRIGHT)
    inst.pending.add_client("textDocument/hover", editor, 7)
    inst.pending.add_internal("textDocument/references")  # a search's expansion, sent after the hover
    await _create(inst, "r")
    await _progress(inst, "r", {"kind": "begin", "title": "Finding references"})
    await _progress(inst, "r", {"kind": "end"})
    assert _told(editor) == []


async def test_clangds_background_index_is_everyones_even_while_a_request_is_in_flight() -> None:
    asker, other = stub(1, PROGRESS), stub(2, PROGRESS)
    inst: Any = StubInstance(asker, other, adapter=ClangdAdapter(ServerConfig(name="clangd", command="clangd")))
    inst.pending.add_client("textDocument/definition", asker, 7)
    await _create(inst, "backgroundIndexProgress")
    await _progress(inst, "backgroundIndexProgress", {"kind": "begin", "title": "indexing"})
    assert _told(other) == [("create", "backgroundIndexProgress"), ("begin", "backgroundIndexProgress")]


async def test_with_nothing_in_flight_an_unknown_servers_progress_is_background() -> None:
    first, second = stub(1, PROGRESS), stub(2, PROGRESS)
    inst: Any = StubInstance(first, second)
    await _create(inst, "t")
    await _progress(inst, "t", {"kind": "begin", "title": "loading"})
    assert _told(first) == _told(second) == [("create", "t"), ("begin", "t")]
    assert inst.prologue.follows("t"), "background progress before the warm-up's end is a start-up message"


async def test_a_references_progress_is_its_askers_though_another_client_asked_since() -> None:
    # An agent's references reached pyright first; a busy editor's hover came right after, before
    # pyright's create for the references was read: the progress is still the agent's.
    agent, editor = stub(1, PROGRESS), stub(2, PROGRESS)
    inst: Any = StubInstance(agent, editor, adapter=PYRIGHT)
    inst.pending.add_client("textDocument/references", agent, 7)
    inst.pending.add_client("textDocument/hover", editor, 8)
    await _create(inst, "r")
    await _progress(inst, "r", {"kind": "begin", "title": "Finding references", "cancellable": True})
    await _progress(inst, "r", {"kind": "end"})
    assert _told(agent) == [("create", "r"), ("begin", "r"), ("end", "r")]
    assert _told(editor) == []


async def test_two_references_in_flight_each_get_one_progress_in_the_order_pyright_started_them() -> None:
    first, second = stub(1, PROGRESS), stub(2, PROGRESS)
    inst: Any = StubInstance(first, second, adapter=PYRIGHT)
    inst.pending.add_client("textDocument/references", first, 7)
    inst.pending.add_client("textDocument/references", second, 8)
    await _create(inst, "r1")
    await _create(inst, "r2")
    await _progress(inst, "r1", {"kind": "begin", "title": "Finding references"})
    await _progress(inst, "r2", {"kind": "begin", "title": "Finding references"})
    assert _told(first) == [("create", "r1"), ("begin", "r1")]
    assert _told(second) == [("create", "r2"), ("begin", "r2")]


def _begin_end(client: Any) -> list[Any]:
    return [
        (m["params"]["value"]["kind"], m["params"]["value"].get("title"))
        for m in client.messages
        if m.get("method") == "$/progress"
    ]


async def test_a_follower_is_shown_the_progress_its_own_request_would_have_shown() -> None:
    leader, follower, quiet = stub(1, PROGRESS), stub(2, PROGRESS), stub(3, {})
    inst: Any = StubInstance(leader, follower, quiet, adapter=PYRIGHT)
    entry = inst.pending.add_client("textDocument/references", leader, 7)
    entry.followers += [(follower, 8), (quiet, 9)]
    await _create(inst, "r")
    await _progress(inst, "r", {"kind": "begin", "title": "Finding references", "cancellable": True})
    await _progress(inst, "r", {"kind": "end"})
    request_progress.tell_followers(inst, entry)  # as the answer arrives, before it is sent
    told = [m.get("method") for m in follower.messages]
    assert told == ["window/workDoneProgress/create", "$/progress", "$/progress"]
    assert _begin_end(follower) == [("begin", "Finding references"), ("end", None)]
    assert quiet.messages == [], "no progress to a client that cannot show it"


async def test_a_follower_with_its_own_token_is_shown_progress_on_it() -> None:
    leader, follower = stub(1, PROGRESS), stub(2, {})
    inst: Any = StubInstance(leader, follower, adapter=PYRIGHT)
    entry = inst.pending.add_client("textDocument/references", leader, 7)
    entry.followers.append((follower, 8))
    entry.follower_tokens[(2, 8)] = "its-own"
    await _create(inst, "r")
    await _progress(inst, "r", {"kind": "begin", "title": "Finding references"})
    await _progress(inst, "r", {"kind": "end"})
    request_progress.tell_followers(inst, entry)
    tokens = [m["params"]["token"] for m in follower.messages if m.get("method") == "$/progress"]
    assert tokens == ["its-own", "its-own"]
    assert not any(m.get("method") == "window/workDoneProgress/create" for m in follower.messages)
