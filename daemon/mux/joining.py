"""A client joining a shared server: it waits for the server, hears its start-up, gets its own answer.

A server of its own would tell a client, before it is useful, what it says while starting (log
lines, status notifications, background progress), and answer its `initialize` in the middle of
that. A shared server said it once, to whoever was attached then, so the instance keeps it
(progress/prologue.py) and each client that joins, first or hours later, is told it as it stands,
once, in its own words, around its own InitializeResult (views/client_view.py), before any live
traffic (docs/sharing.md, "What a client hears when it joins").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec import Raw

from lensmux.daemon.mux.clients.client_session import ClientSession
from lensmux.daemon.mux.errors import ServerUnavailable
from lensmux.daemon.mux.progress.prologue import Greeting
from lensmux.daemon.mux.views.client_view import initialize_result_for
from lensmux.daemon.mux.workspace.workspace_folders import client_initialized

if TYPE_CHECKING:
    from lensmux.daemon.mux.instance import Instance


async def attach(
    inst: Instance, client: ClientSession, client_params: dict[str, Any], answer: Callable[[Raw], None]
) -> None:
    """Add a client once the server has an InitializeResult; `answer` sends the client its own."""
    if inst.stopped:
        raise ServerUnavailable(f"{inst.name} has stopped: {inst.failure or 'idle'}")
    if inst.init_result is not None and not inst.marked_ready and not inst.breaker.ready_for_restart():
        # The server is down behind an open breaker: join now, requests fail fast.
        join(inst, client, answer)
        return
    # A client joins `clients` only once the server is ready: until then it
    # must not receive server traffic, and a failed start answers it itself.
    inst.idle_since = None
    inst.waiting += 1
    try:
        inst.supply_params(client_params)
        while not inst.marked_ready:
            if inst.stopped:
                raise ServerUnavailable(f"{inst.name} failed to start: {inst.failure}")
            await inst.until_ready_or_stopped()
    finally:
        inst.waiting -= 1
        inst.start_idle_timer()
    assert inst.init_result is not None
    await client_initialized(inst, client.id, client_params)
    join(inst, client, answer)


def join(inst: Instance, client: ClientSession, answer: Callable[[Raw], None]) -> None:
    """Make `client` one of the instance's clients: the prologue around its InitializeResult, then live traffic.

    Synchronous, so that nothing the server sends falls between what the client is
    greeted with and what it receives live: it hears each start-up message exactly once.
    """
    greeting = _greeting(inst, client)
    inst.prologue.send(client, greeting.before_result)
    answer(initialize_result_for(inst, client))
    inst.prologue.send(client, greeting.after_result)
    for token in greeting.follows:
        routes = inst.progress_routes.get(token)
        if routes is not None:
            routes.add(client.id)
    inst.clients[client.id] = client
    inst.idle_since = None
    inst.touch(client)


def initialized_again(inst: Instance, client: ClientSession) -> None:
    """A client sent `initialized` once more: a server that reloads its settings then tells it again."""
    if inst.adapter.reloads_on_initialized:
        lines = [item for item in _greeting(inst, client).after_result if isinstance(item, bytes)]
        inst.prologue.send(client, [line for line in lines if b'"$/progress"' not in line])


def _greeting(inst: Instance, client: ClientSession) -> Greeting:
    """The prologue as it stands, as the server alone would have said it to `client`."""
    adapter, prologue = inst.adapter, inst.prologue
    if prologue.open and not inst.warmup.busy():
        prologue.close()
    options, root, workspace = client.initialization_options, inst.key.root, client.workspace
    return prologue.greeting(
        lambda method: not adapter.extension_notification(method) or adapter.notification_wanted(method, options),
        client.supports_progress,
        lambda method, params: adapter.personal_greeting(method, params, root, workspace),
    )
