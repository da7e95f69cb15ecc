"""Progress tokens per client: whose they are, released when a client leaves, ended when the server goes.

Two kinds of token cross the daemon. Server-created ones (window/workDoneProgress/create)
are routed to the clients whose progress it is; client-chosen ones (workDoneToken in a
request) are rewritten per client and mapped back.

Whose a server-created progress is shows only at its `begin`: the create carries nothing
but the token, and the server answers requests and works in the background at the same
time. So the daemon answers the create itself, notes which request was in flight then, and
decides at the begin: work of the server's own (the adapter says so from the begin: pyright's
untitled analysis, clangd's background index; else nothing was in flight) goes to every
client, and to those that join while it runs or before the server is warm (prologue.py);
work for a request goes to the client that asked, if it declared window progress, and
nowhere if the daemon asked (a search's references are no editor's business). Only then is
the client sent its create, right before the begin.

A client that leaves takes its routes and tokens with it. A server that exits cannot end
what it began, so the daemon ends it for the clients that saw the begin: an editor must
not show a spinner for a process that no longer exists.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from lensmux.daemon.mux.progress import request_progress
from lensmux.daemon.wire import envelope as ev

if TYPE_CHECKING:
    from lensmux.daemon.mux.clients.client_session import ClientSession
    from lensmux.daemon.mux.instance import Instance

log = logging.getLogger(__name__)


PROGRESS_CREATE = "window/workDoneProgress/create"


def created(instance: Instance, token: Any) -> None:
    """The server created a progress token: remember what was in flight; clients hear of it at its begin."""
    instance.progress_pending[token] = instance.pending.entries()


def begun(instance: Instance, token: Any, value: dict[str, Any]) -> None:
    """The first `begin` of a server-created token: decide whose progress it is and tell them of the token."""
    in_flight = instance.progress_pending.pop(token)
    background = instance.adapter.background_progress(token, value)
    asked = None if background else request_progress.owner(instance, in_flight, value)
    if background is None:
        background = asked is None
    if not background and asked is not None:
        instance.shown_progress.began(token, asked.method, value)
    if background:
        targets = set(instance.clients)
        instance.prologue.progress_created(token)
    else:
        asker = asked.client if asked is not None and not asked.detached else None
        owned = asker is not None and asker.id in instance.clients and asker.supports_progress
        targets = {asker.id} if owned and asker is not None else set()
    instance.progress_routes[token] = targets
    for cid in targets:
        client = instance.clients[cid]
        if client.supports_progress:
            # Each client must hear of the token before any $/progress with it.
            client.request(PROGRESS_CREATE, {"token": token})


def fallback_bodies(instance: Instance, token: Any, value: dict[str, Any]) -> list[bytes]:
    """What the server alone sends a client without window progress for this progress value (adapter)."""
    return [
        ev.notification(method, UNSET if params is None else ev.encode_value(params))
        for method, params in instance.adapter.progress_notifications(token, value)
    ]


def release_client(instance: Instance, client: ClientSession) -> None:
    """Forget every route to and token of a client that left."""
    for token in [t for t, routes in instance.progress_routes.items() if client.id in routes]:
        routes = instance.progress_routes[token]
        routes.discard(client.id)
        if not routes:
            # Nobody to tell any more: a later $/progress for it is simply dropped.
            del instance.progress_routes[token]
    for token in [t for t, (c, _) in instance.client_tokens.items() if c is client]:
        del instance.client_tokens[token]


def server_gone(instance: Instance, reason: str) -> None:
    """The server exited: end its progress at every client that saw it begin, forget every token."""
    ended = 0
    for token, routes in instance.progress_routes.items():
        end = {"kind": "end", "message": reason}
        body = ev.notification("$/progress", ev.encode_value({"token": token, "value": end}))
        # A client without window progress was told in the server's other words, if at all.
        other = fallback_bodies(instance, token, end)
        for cid in routes:
            client = instance.clients.get(cid)
            if client is None:
                continue
            for message in [body] if client.supports_progress else other:
                client.send(message)
                ended += 1
    instance.progress_routes.clear()
    instance.progress_pending.clear()
    instance.shown_progress.forget_running()
    # Requests in flight were failed with the process; so are the tokens they carried.
    instance.client_tokens.clear()
    if ended:
        log.info("%s: ended %d progress reports the exited server left open", instance.name, ended)
