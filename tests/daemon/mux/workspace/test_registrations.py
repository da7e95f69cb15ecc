"""Registrations reach exactly the clients that declared them, as the server intends them."""

from __future__ import annotations

from typing import Any

import pytest
from daemon.mux.mux_stubs import PULL, PUSH, WATCHER, StubInstance, stub

from lensmux.daemon.mux import server_requests
from lensmux.daemon.mux.workspace import registrations
from lensmux.daemon.wire import envelope as ev

pytestmark = pytest.mark.anyio


def _watch(reg_id: str, glob: str = "**/*.py") -> dict[str, Any]:
    return {
        "id": reg_id,
        "method": "workspace/didChangeWatchedFiles",
        "registerOptions": {"watchers": [{"globPattern": glob}]},
    }


def _held(client: Any) -> set[str]:
    live: set[str] = set()
    for message in client.messages:
        if message.get("method") == "client/registerCapability":
            live |= {r["id"] for r in message["params"]["registrations"]}
        elif message.get("method") == "client/unregisterCapability":
            live -= {u["id"] for u in message["params"]["unregisterations"]}
    return live


def test_registration_goes_only_to_clients_that_declared_dynamic_registration() -> None:
    watcher, plain = stub(1, WATCHER), stub(2, PUSH)
    inst: Any = StubInstance(watcher, plain)
    registrations.register(inst, {"registrations": [_watch("w1")]})
    assert _held(watcher) == {"w1"}
    assert plain.messages == []
    registrations.unregister(inst, {"unregisterations": [{"id": "w1", "method": "workspace/didChangeWatchedFiles"}]})
    assert _held(watcher) == set()
    assert plain.messages == []


def test_reregistration_under_a_new_id_then_unregistration_of_the_old_keeps_the_new() -> None:
    client = stub(1, WATCHER)
    inst: Any = StubInstance(client)
    registrations.register(inst, {"registrations": [_watch("old")]})
    registrations.register(inst, {"registrations": [_watch("new")]})
    registrations.unregister(inst, {"unregisterations": [{"id": "old", "method": "workspace/didChangeWatchedFiles"}]})
    assert _held(client) == {"new"}
    assert registrations.some_client_watches_files(inst)


def test_unregistration_of_an_id_a_client_never_got_is_not_sent_to_it() -> None:
    early, late = stub(1, WATCHER), stub(2, WATCHER)
    inst: Any = StubInstance(early)
    registrations.register(inst, {"registrations": [_watch("a")]})
    inst.clients[late.id] = late
    registrations.register(inst, {"registrations": [_watch("b")]})
    registrations.unregister(inst, {"unregisterations": [{"id": "zzz", "method": "x"}]})
    assert late.of("client/unregisterCapability") == []
    # A late client joining gets what is live and it declared, once.
    registrations.replay(inst, late)
    registrations.replay(inst, late)
    assert _held(late) == {"a", "b"}
    assert len(late.of("client/registerCapability")) == 2


def test_pull_diagnostic_registrations_are_never_handed_to_clients() -> None:
    puller = stub(1, {**PULL, "textDocument": {"diagnostic": {"dynamicRegistration": True}}})
    inst: Any = StubInstance(puller)
    registrations.register(inst, {"registrations": [{"id": "d", "method": "textDocument/diagnostic"}]})
    assert puller.messages == []


def test_restarted_server_registrations_replace_the_old_ones() -> None:
    client = stub(1, WATCHER)
    inst: Any = StubInstance(client)
    registrations.register(inst, {"registrations": [_watch("same-id")]})
    registrations.server_restarted(inst)
    assert _held(client) == set()
    registrations.register(inst, {"registrations": [_watch("same-id")]})
    assert _held(client) == {"same-id"}
    assert not inst.registrations.server.keys() - {"same-id"}


async def test_refresh_requests_go_only_to_clients_with_refresh_support() -> None:
    refreshing = stub(1, {"workspace": {"semanticTokens": {"refreshSupport": True}}})
    other = stub(2, {"workspace": {"semanticTokens": {}}})
    inst: Any = StubInstance(refreshing, other)
    await server_requests.handle(inst, ev.decode(ev.request(7, "workspace/semanticTokens/refresh")))
    assert len(refreshing.of("workspace/semanticTokens/refresh")) == 1
    assert other.messages == []
    # The server is answered either way.
    assert inst.to_server == [{"jsonrpc": "2.0", "id": 7, "result": None}]


def test_relative_pattern_watchers_go_only_to_clients_that_declared_relative_patterns() -> None:
    relative = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True}}}
    plain, rich = stub(1, WATCHER), stub(2, relative)
    inst: Any = StubInstance(plain, rich)
    library = {"globPattern": {"baseUri": "file:///usr/lib/python3", "pattern": "**"}, "kind": 7}
    watchers = [{"globPattern": "**", "kind": 7}, library]
    reg = {"id": "w1", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": watchers}}
    registrations.register(inst, {"registrations": [reg]})
    [given_plain] = plain.of("client/registerCapability")
    [given_rich] = rich.of("client/registerCapability")
    # As the server alone would have registered for each: a client that cannot take a
    # RelativePattern is not asked to watch library folders with one.
    assert given_plain["registrations"][0]["registerOptions"]["watchers"] == [{"globPattern": "**", "kind": 7}]
    assert given_rich["registrations"][0]["registerOptions"]["watchers"] == watchers
    # Withdrawn under the same id from both.
    registrations.unregister(inst, {"unregisterations": [{"id": "w1", "method": "workspace/didChangeWatchedFiles"}]})
    assert _held(plain) == set() and _held(rich) == set()
